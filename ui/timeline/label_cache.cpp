#include "ui/timeline/label_cache.h"

#include <QFontMetrics>
#include <QPainter>
#include <QRect>

namespace parascope::ui {

const QStaticText& LabelCache::laidOut(QPainter& p, const QString& text, int elideTo) {
  if (p.font() != font_) {
    texts_.clear();
    font_ = p.font();
  }
  const QString key = elideTo < 0 ? text : text + QChar(0) + QString::number(elideTo);
  auto it = texts_.find(key);
  if (it == texts_.end()) {
    if (texts_.size() >= kMaxEntries) texts_.clear();
    QStaticText shaped(elideTo < 0 ? text
                                   : QFontMetrics(font_).elidedText(text, Qt::ElideRight, elideTo));
    shaped.setTextFormat(Qt::PlainText);
    shaped.prepare(QTransform(), font_);
    it = texts_.insert(key, shaped);
  }
  return *it;
}

bool LabelCache::draw(QPainter& p, const QRect& rect, const QString& text, int elideTo) {
  const QStaticText& shaped = laidOut(p, text, elideTo);
  const QSizeF size = shaped.size();
  if (size.width() > rect.width()) return false;
  p.drawStaticText(QPointF(rect.left(), rect.top() + (rect.height() - size.height()) / 2), shaped);
  return true;
}

qreal LabelCache::width(QPainter& p, const QString& text) {
  return laidOut(p, text, -1).size().width();
}

}  // namespace parascope::ui
