// Shaped text for the timeline's labels: each label's glyphs are laid out once (QStaticText) and
// drawn from then on without shaping the text again, which took a quarter of a frame at coarse
// zooms (every row's name, every count and span name, every frame). Keyed by the text (and the
// width it was elided to), so nothing in it can go stale; emptied when the font changes or it
// passes its bound.
#pragma once

#include <QFont>
#include <QHash>
#include <QStaticText>
#include <QString>

class QPainter;
class QRect;

namespace parascope::ui {

class LabelCache {
 public:
  // Draws `text` left-aligned and centred vertically in `rect`, with the painter's pen and font;
  // elided at the right to `elideTo` pixels when that is not negative. False (nothing drawn) when
  // the text, as drawn, is wider than the rectangle.
  bool draw(QPainter& p, const QRect& rect, const QString& text, int elideTo = -1);
  // The width `text` takes whole in the painter's font.
  qreal width(QPainter& p, const QString& text);

 private:
  static constexpr int kMaxEntries = 4096;
  const QStaticText& laidOut(QPainter& p, const QString& text, int elideTo);

  QHash<QString, QStaticText> texts_;
  QFont font_;  // what the texts were laid out in
};

}  // namespace parascope::ui
