// Text timeline rows from per-instruction simulated intervals.
#include "core/parallel/schedule_diagram.h"

#include <cmath>

namespace parascope {

namespace {

char glyph(const Instruction& in) {
  const int mb = in.microBatch;
  if (in.op == Op::Forward) {
    return static_cast<char>('0' + mb % 10);
  }
  if (in.op == Op::BackwardWeight) {
    return static_cast<char>('A' + mb % 26);
  }
  return static_cast<char>('a' + mb % 26);
}

std::string row(const Program& program, const RankTimeline& timeline, int chunk, bool perChunk,
                std::size_t width, double unit) {
  std::string cells(width, '.');
  for (std::size_t i = 0; i < program.size(); ++i) {
    const Instruction& in = program[i];
    if (!in.isCompute()) {
      continue;
    }
    const auto first = static_cast<std::size_t>(std::lround(timeline.timings[i].start / unit));
    const auto last = static_cast<std::size_t>(std::lround(timeline.timings[i].end / unit));
    const char mark = !perChunk || in.chunk == chunk ? glyph(in) : ' ';
    for (std::size_t x = first; x < last && x < width; ++x) {
      cells[x] = mark;
    }
  }
  return cells;
}

}  // namespace

std::string renderTimeline(const PipelineShape& shape, const std::vector<Program>& programs,
                           const SimulationResult& run, double unit) {
  const auto width = static_cast<std::size_t>(std::lround(run.makespan / unit));
  const bool perChunk = shape.chunks > 1;
  std::string out;
  for (std::size_t r = 0; r < programs.size(); ++r) {
    for (int chunk = 0; chunk < (perChunk ? shape.chunks : 1); ++chunk) {
      out += "rank " + std::to_string(r) + (perChunk ? " c" + std::to_string(chunk) : "") + " |" +
             row(programs[r], run.ranks[r], chunk, perChunk, width, unit) + "|\n";
    }
  }
  return out;
}

}  // namespace parascope
