// Timeline exports; see timeline_export.h.
#include "ui/timeline/timeline_export.h"

#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>

#include "core/common/error.h"
#include "profiler/io/chrome_export.h"
#include "ui/gui_output.h"
#include "ui/timeline/timeline_view.h"

namespace parascope::ui {

void exportTraceRange(const profiler::TimelineIndex& index, std::int64_t fromNs, std::int64_t toNs,
                      const std::string& path) {
  profiler::exportChromeTrace(index.toTrace(fromNs, toNs), path);
}

void exportViewPng(const TimelineView& view, const std::string& path) {
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  {
    QPainter p(&image);
    view.render(p);
  }
  writePng(image, path, "image");
}

void exportViewSvg(const TimelineView& view, const std::string& path) {
  // Drawn into memory first, so that the file is written as every output is (gui_output.h).
  QByteArray svgBytes;
  QBuffer buffer(&svgBytes);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(view.size());
  svg.setViewBox(QRect(QPoint(0, 0), view.size()));
  svg.setTitle(QStringLiteral("ParaScope timeline"));
  QPainter p;
  if (!p.begin(&svg)) throw UserError("image '" + path + "': the SVG cannot be drawn");
  view.render(p);
  p.end();
  writeOutput(path, "image",
              std::string_view(svgBytes.constData(), static_cast<std::size_t>(svgBytes.size())));
}

void exportStatsCsv(const std::vector<profiler::NameStats>& stats, const std::string& path) {
  writeOutput(path, "statistics file", profiler::statsToCsv(stats));
}

}  // namespace parascope::ui
