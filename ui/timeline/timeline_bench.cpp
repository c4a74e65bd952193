// Timeline benchmark; see timeline_bench.h. Frames are painted through TimelineView::render
// into a QImage, the same code the widget's paintEvent runs, so a frame's time is draw-list
// building plus QPainter rasterisation, without the window system. The trace is then written to a
// file in our format and opened the way the workbench opens it.
#include "ui/timeline/timeline_bench.h"

#include <QEventLoop>
#include <QImage>
#include <QPainter>
#include <QTemporaryDir>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/synthetic_trace.h"
#include "ui/timeline/timeline_view.h"
#include "ui/timeline/trace_loader.h"

namespace parascope::ui {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// CPU time in ms: on a shared machine wall time also counts waiting for a core. A frame runs on
// this thread; the index build on several, so it counts the process.
double cpuMs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}
double threadCpuMs() {
  return cpuMs(CLOCK_THREAD_CPUTIME_ID);
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
  const profiler::TimelineIndex& index = view.index();
  const double span = static_cast<double>(index.endNs() - index.beginNs());
  std::vector<double> ms, cpu;
  for (int f = 0; f < frames; ++f) {
    profiler::TimeAxis axis;
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

// Wall and process CPU time of one step, in ms.
struct Timing {
  double ms = 0, cpuMs = 0;
};

struct Stopwatch {
  Clock::time_point wall = Clock::now();
  double cpu = cpuMs(CLOCK_PROCESS_CPUTIME_ID);
  Timing read() const { return {msSince(wall), cpuMs(CLOCK_PROCESS_CPUTIME_ID) - cpu}; }
};

struct FileResult {
  double bytes = 0, exportMs = 0;
  Timing import, index, open;  // medians
  double ratio() const { return open.ms / (import.ms + index.ms); }
  double cpuRatio() const { return open.cpuMs / (import.cpuMs + index.cpuMs); }
};

// Reads the file with the importer as the loader calls it, then indexes it. The index's CPU
// time includes freeing the imported events, as the loader's does (its worker frees them after
// handing the index over).
std::pair<Timing, Timing> importThenIndex(const std::string& path) {
  Stopwatch w;
  profiler::TimelineIndex index;
  Timing importTime, indexTime;
  {
    const profiler::TraceData imported = profiler::importChromeTraces({path});
    importTime = w.read();
    w = Stopwatch();
    index.build(imported);
    indexTime.ms = w.read().ms;
  }
  indexTime.cpuMs = w.read().cpuMs;
  return {importTime, indexTime};
}

// Opens the file as the workbench does: the loader's job, its hand-over to this thread at the
// job tracker's next poll. Wall time until the index arrives; CPU time until the job has ended.
Timing open(const std::string& path) {
  std::shared_ptr<profiler::TimelineIndex> opened;  // freed after the clock stops
  QString error;
  const Stopwatch w;
  Timing t;
  {
    TraceLoader loader;
    QEventLoop loop;
    QObject::connect(&loader, &TraceLoader::loaded, &loop,
                     [&](std::shared_ptr<profiler::TimelineIndex> index, qint64) {
                       opened = std::move(index);
                       loop.quit();
                     });
    QObject::connect(&loader, &TraceLoader::failed, &loop, [&](const QString& why) {
      error = why;
      loop.quit();
    });
    loader.load({QString::fromStdString(path)});
    loop.exec();
    t.ms = w.read().ms;
  }
  t.cpuMs = w.read().cpuMs;
  if (!opened) {
    throw std::runtime_error("opening the benchmark's file failed: " + error.toStdString());
  }
  return t;
}

Timing median(const std::vector<Timing>& v) {
  std::vector<double> ms, cpu;
  for (const Timing& t : v) {
    ms.push_back(t.ms);
    cpu.push_back(t.cpuMs);
  }
  return {quantile(ms, 0.5), quantile(cpu, 0.5)};
}

// The trace written in our format, then read back both ways, alternately, a few times each. The
// work is the same both ways (the same CPU time); on a busy machine wall time also counts
// waiting for a core, a tenth more or less from one reading to the next.
FileResult measureFile(const profiler::TraceData& trace) {
  QTemporaryDir dir;
  if (!dir.isValid()) throw std::runtime_error("cannot create a temporary directory");
  const std::string path = dir.filePath(QStringLiteral("bench.json")).toStdString();
  FileResult r;
  const auto t = Clock::now();
  r.bytes = static_cast<double>(profiler::exportChromeTrace(trace, path));
  r.exportMs = msSince(t);
  constexpr int kRounds = 3;
  std::vector<Timing> imports, indexes, opens;
  for (int i = 0; i < kRounds; ++i) {
    const auto [imported, indexed] = importThenIndex(path);
    imports.push_back(imported);
    indexes.push_back(indexed);
    opens.push_back(open(path));
  }
  r.import = median(imports);
  r.index = median(indexes);
  r.open = median(opens);
  return r;
}

}  // namespace

int runTimelineBench(const TimelineBenchOptions& o, std::ostream& out) {
  profiler::SyntheticOptions so;
  so.events = o.events;
  auto t = Clock::now();
  const profiler::TraceData trace = profiler::syntheticTrainingTrace(so);
  const double generateMs = msSince(t);
  auto index = std::make_shared<profiler::TimelineIndex>();
  t = Clock::now();
  const double cpu0 = cpuMs(CLOCK_PROCESS_CPUTIME_ID);
  index->build(trace);
  const double buildMs = msSince(t), buildCpuMs = cpuMs(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
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
  FileResult file;
  try {
    file = measureFile(trace);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "timeline bench: %s\n", e.what());
    return 1;
  }
  char line[512];
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
    std::snprintf(line, sizeof line,
                  "],\"file_bytes\":%.0f,\"export_ms\":%.1f,\"import_ms\":%.1f,"
                  "\"import_cpu_ms\":%.1f,\"import_index_ms\":%.1f,\"import_index_cpu_ms\":%.1f,"
                  "\"open_ms\":%.1f,\"open_cpu_ms\":%.1f,\"open_ratio\":%.3f,"
                  "\"open_cpu_ratio\":%.3f}\n",
                  file.bytes, file.exportMs, file.import.ms, file.import.cpuMs, file.index.ms,
                  file.index.cpuMs, file.open.ms, file.open.cpuMs, file.ratio(), file.cpuRatio());
    out << line;
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
                  profiler::formatDuration(static_cast<std::int64_t>(z.windowNs)).c_str(),
                  z.medianMs, z.p99Ms, z.cpuMedianMs, z.cpuP99Ms);
    out << line;
  }
  std::snprintf(line, sizeof line,
                "file: %.0f MB in our format, written in %.0f ms; medians of 3 (wall / CPU, ms):\n"
                "  import %.1f / %.1f + index %.1f / %.1f = %.1f / %.1f\n"
                "  open as the workbench does %.1f / %.1f: %.3f / %.3f x import + index\n",
                file.bytes / 1e6, file.exportMs, file.import.ms, file.import.cpuMs, file.index.ms,
                file.index.cpuMs, file.import.ms + file.index.ms,
                file.import.cpuMs + file.index.cpuMs, file.open.ms, file.open.cpuMs, file.ratio(),
                file.cpuRatio());
  out << line;
  return 0;
}

}  // namespace parascope::ui
