// Timeline exports; see timeline_export.h.
#include "ui/timeline_export.h"

#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <fstream>

#include "core/common/error.h"
#include "profiler/io/chrome_export.h"
#include "ui/timeline_view.h"

namespace parascope::ui {

void exportTraceRange(const TimelineIndex& index, std::int64_t fromNs, std::int64_t toNs,
                      const std::string& path) {
  profiler::exportChromeTrace(index.toTrace(fromNs, toNs), path);
}

void exportViewPng(const TimelineView& view, const std::string& path) {
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  {
    QPainter p(&image);
    view.render(p);
  }
  if (!image.save(QString::fromStdString(path), "PNG")) {
    throw UserError("cannot write the image '" + path + "'");
  }
}

void exportViewSvg(const TimelineView& view, const std::string& path) {
  QSvgGenerator svg;
  svg.setFileName(QString::fromStdString(path));
  svg.setSize(view.size());
  svg.setViewBox(QRect(QPoint(0, 0), view.size()));
  svg.setTitle(QStringLiteral("ParaScope timeline"));
  QPainter p;
  if (!p.begin(&svg)) throw UserError("cannot write the image '" + path + "'");
  view.render(p);
  p.end();
}

void exportStatsCsv(const std::vector<NameStats>& stats, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  out << statsToCsv(stats);
  if (!out.flush()) throw UserError("cannot write the statistics file '" + path + "'");
}

}  // namespace parascope::ui
