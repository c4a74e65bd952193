// The timeline benchmark behind `parascope --bench-timeline`: builds the index of a synthetic
// 8-rank training trace, then paints offscreen 1920x1080 frames at zoom levels from the whole
// trace down to one microsecond across the view, then writes the trace to a temporary file and
// times opening it as the workbench does against importing plus indexing it. Needs a
// QApplication (offscreen is fine) and room for the file (about 200 bytes per event).
#pragma once

#include <cstddef>
#include <ostream>

namespace parascope::ui {

struct TimelineBenchOptions {
  std::size_t events = 10'000'000;
  int framesPerZoom = 40;
  bool json = false;
};

// Prints the figures (text or one JSON object); returns 0, or 1 when the file cannot be written
// or read back (the reason on stderr).
int runTimelineBench(const TimelineBenchOptions& options, std::ostream& out);

}  // namespace parascope::ui
