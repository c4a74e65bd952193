// parascope --open FILE... --screenshot FILE.png: the timeline window alone on trace files,
// saved once the traces are shown (or their error), then quits: exit status 0 once they were
// shown and saved, 1 (the reason on stderr) when they could not be opened or the image written,
// 2 when no trace is named or the image's path is refused (checkOutputPath) before any work.
#include <QApplication>
#include <QTimer>
#include <cstdio>

#include "app/gui/modes.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/printable.h"
#include "ui/gui_output.h"
#include "ui/timeline/timeline_window.h"

namespace parascope::gui {

int runTimelineOnly(const QCommandLineParser& parser, const GuiOptions& o) {
  // One timeline of every file: an --open's per-rank files joined by commas, and the others.
  QStringList files;
  for (const QString& value : parser.values(o.open))
    files += value.split(QLatin1Char(','), Qt::SkipEmptyParts);
  files += parser.positionalArguments();
  const std::string path = parser.value(o.screenshot).toStdString();
  if (files.isEmpty()) {
    std::fprintf(stderr, "parascope: --screenshot needs traces to show: --open FILE\n");
    return 2;
  }
  // Judged before the traces are read: a FIFO there waited forever once they were shown.
  try {
    checkOutputPath(path, "--screenshot");
  } catch (const UserError& e) {
    std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
    return 2;
  }
  ui::TimelineWindow window;
  window.resize(1600, 900);
  // Once the load has ended either way, give the view one turn of the event loop to paint.
  auto save = [&window, path](bool shown) {
    QTimer::singleShot(100, &window, [&window, path, shown] {
      try {
        ui::writePng(window.grab().toImage(), path, "--screenshot");
      } catch (const UserError& e) {
        std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
        QApplication::exit(1);
        return;
      }
      QApplication::exit(shown ? 0 : 1);
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
