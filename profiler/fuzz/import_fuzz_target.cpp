// libFuzzer entry point over the trace importer: any bytes must either import or fail with a
// UserError (whose message must name a position or a limit); nothing else may escape, crash
// or grow memory past the limits. Each input is imported twice, whole and through a window of a
// few bytes (so nearly every event is a run of its own and every read ends somewhere new): the
// two must give the same trace, or both fail. Built with clang by scripts/fuzz.sh; the test
// suite replays the committed corpus and deterministic mutations of it through this function.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/error.h"
#include "profiler/io/chrome_import.h"

namespace {

using parascope::profiler::ImportOptions;
using parascope::profiler::TraceData;

std::optional<TraceData> import(std::string_view bytes, std::size_t window) {
  ImportOptions options;
  options.maxBytes = std::size_t{1} << 22;
  options.maxEvents = 100'000;
  options.windowBytes = window;
  try {
    return parascope::profiler::importChromeTraceFromMemory(bytes, "fuzz", options);
  } catch (const parascope::UserError& e) {
    if (*e.what() == '\0') std::abort();
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::optional<TraceData> whole = import(bytes, ImportOptions{}.windowBytes);
  const std::optional<TraceData> windowed = import(bytes, 1 + size % 13);
  const std::string difference = whole.has_value() != windowed.has_value()
                                     ? "one imported, the other failed"
                                 : whole ? whole->firstDifference(*windowed)
                                         : "";
  if (!difference.empty()) {
    std::fprintf(stderr, "whole and windowed imports differ: %s\n", difference.c_str());
    std::abort();
  }
  return 0;
}
