// parascope --open FILE... --screenshot FILE.png: the timeline window alone on trace files,
// saved once the traces are shown (or their error), then quits: exit status 0 once they were
// shown and saved, 1 (the reason on stderr) when they could not be opened or the image written.
#include <QApplication>
#include <QTimer>
#include <cstdio>

#include "app/gui/modes.h"
#include "core/common/printable.h"
#include "ui/timeline_window.h"

namespace parascope::gui {

int runTimelineOnly(const QCommandLineParser& parser, const GuiOptions& o) {
  const QStringList files = parser.values(o.open) + parser.positionalArguments();
  const QString path = parser.value(o.screenshot);
  ui::TimelineWindow window;
  window.resize(1600, 900);
  // Once the load has ended either way, give the view one turn of the event loop to paint.
  auto save = [&window, path](bool shown) {
    QTimer::singleShot(100, &window, [&window, path, shown] {
      const bool saved = window.grab().save(path, "PNG");
      if (!saved)
        std::fprintf(stderr, "parascope: cannot write '%s'\n",
                     printableText(path.toStdString()).c_str());
      QApplication::exit(saved && shown ? 0 : 1);
    });
  };
  QObject::connect(window.loader(), &ui::TraceLoader::loaded, &window, [save] { save(true); });
  QObject::connect(window.loader(), &ui::TraceLoader::failed, &window, [save](const QString& why) {
    std::fprintf(stderr, "parascope: the traces were not shown: %s\n",
                 printableText(why.toStdString()).c_str());
    save(false);
  });
  window.openFiles(files);
  window.show();
  return QApplication::exec();
}

}  // namespace parascope::gui
