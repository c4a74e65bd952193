// Process-wide recorder pointer, category names and the tick calibration.
#include "core/trace/trace.h"

#include <array>

namespace parascope::trace {

namespace detail {
std::atomic<Recorder*> gRecorder{nullptr};
}

void setRecorder(Recorder* r) noexcept {
  detail::gRecorder.store(r, std::memory_order_release);
}

std::uint64_t newCorrelationId() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {
constexpr std::array<std::string_view, kCategoryCount> kCategoryNames = {
    "compute",   "communication", "memcpy", "memset", "runtime", "sync",     "data_load",
    "optimizer", "instruction",   "step",   "memory", "host",    "overhead", "io"};
}

std::string_view categoryName(Category c) noexcept {
  auto i = static_cast<std::size_t>(c);
  return i < kCategoryNames.size() ? kCategoryNames[i] : std::string_view("host");
}

bool categoryFromName(std::string_view name, Category* out) noexcept {
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    if (kCategoryNames[i] == name) {
      *out = static_cast<Category>(i);
      return true;
    }
  }
  return false;
}

ClockAnchor anchorNow() noexcept {
  // Bracket the steady_clock read between two tick reads and take the midpoint, so the pair
  // is simultaneous to within half the read's cost.
  std::int64_t t0 = ticks();
  std::int64_t ns = steadyNs();
  std::int64_t t1 = ticks();
  return {t0 + (t1 - t0) / 2, ns};
}

TickConverter::TickConverter(ClockAnchor a, ClockAnchor b) noexcept : origin_(a) {
#ifdef PARASCOPE_TRACE_TSC
  if (b.ticks != a.ticks) {
    nsPerTick_ = static_cast<double>(b.ns - a.ns) / static_cast<double>(b.ticks - a.ticks);
  }
#else
  (void)b;
  origin_ = {};  // ticks already are steady ns
#endif
}

}  // namespace parascope::trace
