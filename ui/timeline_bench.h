// The timeline benchmark behind `parascope --bench-timeline`: builds the index of a synthetic
// 8-rank training trace, then paints offscreen 1920x1080 frames at zoom levels from the whole
// trace down to one microsecond across the view. Needs a QApplication (offscreen is fine).
#pragma once

#include <cstddef>
#include <ostream>

namespace parascope::ui {

struct TimelineBenchOptions {
  std::size_t events = 10'000'000;
  int framesPerZoom = 40;
  bool json = false;
};

// Prints the figures (text or one JSON object); returns 0.
int runTimelineBench(const TimelineBenchOptions& options, std::ostream& out);

}  // namespace parascope::ui
