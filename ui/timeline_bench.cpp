// Timeline benchmark; see timeline_bench.h. Frames are painted through TimelineView::render
// into a QImage, the same code the widget's paintEvent runs, so a frame's time is draw-list
// building plus QPainter rasterisation, without the window system.
#include "ui/timeline_bench.h"

#include <QImage>
#include <QPainter>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include "ui/synthetic_trace.h"
#include "ui/timeline_view.h"

namespace parascope::ui {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// CPU time of this thread in ms: on a shared machine wall time also counts waiting for a core.
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct ZoomResult {
  double windowNs = 0, medianMs = 0, p99Ms = 0, cpuMedianMs = 0, cpuP99Ms = 0;
};

double quantile(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

// Frames at one zoom, panned across the trace so each frame shows a different part.
ZoomResult measureZoom(TimelineView& view, QImage& image, double windowNs, int frames) {
  const TimelineIndex& index = view.index();
  const double span = static_cast<double>(index.endNs() - index.beginNs());
  std::vector<double> ms, cpu;
  for (int f = 0; f < frames; ++f) {
    TimeAxis axis;
    axis.nsPerPx = windowNs / view.timeAreaWidth();
    const double room = std::max(0.0, span - windowNs);
    axis.startNs = index.beginNs() + static_cast<std::int64_t>(room * (f + 0.5) / frames);
    view.setAxis(axis);
    const auto t = Clock::now();
    const double c = threadCpuMs();
    QPainter p(&image);
    view.render(p);
    p.end();
    cpu.push_back(threadCpuMs() - c);
    ms.push_back(msSince(t));
  }
  return {windowNs, quantile(ms, 0.5), quantile(ms, 0.99), quantile(cpu, 0.5), quantile(cpu, 0.99)};
}

}  // namespace

int runTimelineBench(const TimelineBenchOptions& o, std::ostream& out) {
  SyntheticOptions so;
  so.events = o.events;
  auto t = Clock::now();
  const profiler::TraceData trace = syntheticTrainingTrace(so);
  const double generateMs = msSince(t);
  auto index = std::make_shared<TimelineIndex>();
  t = Clock::now();
  const double cpu0 = threadCpuMs();
  index->build(trace);
  const double buildMs = msSince(t), buildCpuMs = threadCpuMs() - cpu0;
  const double events = static_cast<double>(trace.events.size());
  const double bytesPerEvent = static_cast<double>(index->bytesHeld()) / events;
  TimelineView view;
  view.resize(1920, 1080);
  view.setIndex(index);
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  // A process's first paint loads fonts and glyph caches and faults the image's pages in (about
  // 10 ms here): a one-time start-up cost, not a frame's, so it stays out of the figures.
  {
    QPainter p(&image);
    view.render(p);
  }
  std::vector<ZoomResult> zooms;
  for (double w = static_cast<double>(index->endNs() - index->beginNs()); w >= 1000; w /= 10) {
    zooms.push_back(measureZoom(view, image, w, o.framesPerZoom));
  }
  zooms.push_back(measureZoom(view, image, 1000, o.framesPerZoom));
  char line[256];
  if (o.json) {
    std::snprintf(line, sizeof line,
                  "{\"events\":%.0f,\"ranks\":%d,\"build_ms\":%.1f,\"build_cpu_ms\":%.1f,"
                  "\"build_events_per_s\":%.0f,\"bytes_per_event\":%.1f,\"frame_width\":1920,"
                  "\"frame_height\":1080,\"zooms\":[",
                  events, so.ranks, buildMs, buildCpuMs, events / buildMs * 1e3, bytesPerEvent);
    out << line;
    for (std::size_t i = 0; i < zooms.size(); ++i) {
      std::snprintf(line, sizeof line,
                    "%s{\"window_ns\":%.0f,\"median_ms\":%.2f,\"p99_ms\":%.2f,"
                    "\"cpu_median_ms\":%.2f,\"cpu_p99_ms\":%.2f}",
                    i ? "," : "", zooms[i].windowNs, zooms[i].medianMs, zooms[i].p99Ms,
                    zooms[i].cpuMedianMs, zooms[i].cpuP99Ms);
      out << line;
    }
    out << "]}\n";
    return 0;
  }
  std::snprintf(line, sizeof line,
                "timeline bench: %.0f events, %d ranks (generated in %.0f ms)\n"
                "index build: %.1f ms (%.1f ms CPU), %.1f M events/s, %.1f bytes/event held\n"
                "frames at 1920x1080, %d per zoom (window: wall median / p99, CPU median / p99, "
                "ms):\n",
                events, so.ranks, generateMs, buildMs, buildCpuMs, events / buildMs / 1e3,
                bytesPerEvent, o.framesPerZoom);
  out << line;
  for (const ZoomResult& z : zooms) {
    std::snprintf(line, sizeof line, "  %12s  %7.2f / %7.2f   %7.2f / %7.2f\n",
                  formatDuration(static_cast<std::int64_t>(z.windowNs)).c_str(), z.medianMs,
                  z.p99Ms, z.cpuMedianMs, z.cpuP99Ms);
    out << line;
  }
  return 0;
}

}  // namespace parascope::ui
