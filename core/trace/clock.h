// The tracing clock. Spans store raw ticks (the x86 time-stamp counter, about 7 ns to read,
// where steady_clock costs about 16 ns); a TickConverter turns them into steady_clock
// nanoseconds from two anchors taken far apart, so the rate error shrinks with the run.
// Elsewhere ticks are steady_clock nanoseconds and the conversion is the identity.
#pragma once

#include <chrono>
#include <cstdint>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PARASCOPE_TRACE_TSC 1
#endif

namespace parascope::trace {

inline std::int64_t steadyNs() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline std::int64_t ticks() noexcept {
#ifdef PARASCOPE_TRACE_TSC
  return static_cast<std::int64_t>(__rdtsc());
#else
  return steadyNs();
#endif
}

// A simultaneous reading of both clocks.
struct ClockAnchor {
  std::int64_t ticks = 0;
  std::int64_t ns = 0;
};
ClockAnchor anchorNow() noexcept;

// Linear map ticks -> steady ns through two anchors (identity without a TSC).
class TickConverter {
 public:
  TickConverter() = default;
  TickConverter(ClockAnchor a, ClockAnchor b) noexcept;
  std::int64_t toNs(std::int64_t t) const noexcept {
    return origin_.ns +
           static_cast<std::int64_t>(static_cast<double>(t - origin_.ticks) * nsPerTick_);
  }
  double nsPerTick() const noexcept { return nsPerTick_; }

 private:
  ClockAnchor origin_;
  double nsPerTick_ = 1.0;
};

}  // namespace parascope::trace
