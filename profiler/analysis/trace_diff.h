// Two traces, or two parts of one (the steps of two strategy segments), compared per name: the
// time of each kernel or span name and of each communication operation in A and in B. Times are
// per rank that ran the name and per step (summed, divided by those ranks and by the steps seen on
// that side), so that segments of different lengths and world sizes compare, and a name only some
// ranks run (a pipeline's first stage's embedding, a parameter server's work, its workers'
// forward and backward) keeps its time on those ranks rather than being spread over all of them;
// a side without step spans counts as one step. Plain C++, no Qt.
#pragma once

#include <string>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

// One side of a diff: a trace, optionally only the events of steps [firstStep, lastStep] (the
// events' step tags, counted from 0; -1: every event).
struct DiffSide {
  const profiler::TraceData* trace = nullptr;
  int firstStep = -1;
  int lastStep = -1;
};

struct DiffRow {
  std::string name;
  bool communication = false;  // a communication operation, else a kernel or span
  double aNs = 0;              // per rank that ran it and per step; 0 where the side has none
  double bNs = 0;
  int aRanks = 0, bRanks = 0;  // the ranks that ran it on each side
  double deltaNs() const { return bNs - aNs; }
  double ratio() const;  // B / A; NaN when A is 0
};

// Rows sorted by (operations after spans, name).
std::vector<DiffRow> diffTraces(const DiffSide& a, const DiffSide& b);

}  // namespace parascope::profiler
