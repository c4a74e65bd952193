// libFuzzer entry point over the trace importer: any bytes must either import or fail with a
// UserError (whose message must name a position or a limit); nothing else may escape, crash
// or grow memory past the limits. Built with clang by scripts/fuzz.sh; the test suite replays
// the committed corpus and deterministic mutations of it through this same function.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/common/error.h"
#include "profiler/io/chrome_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parascope::profiler::ImportOptions options;
  options.maxBytes = std::size_t{1} << 22;
  options.maxEvents = 100'000;
  try {
    auto trace = parascope::profiler::importChromeTraceFromMemory(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", options);
    for (const auto& e : trace.events) {
      if (e.name == nullptr) std::abort();
    }
  } catch (const parascope::UserError& e) {
    const std::string message = e.what();
    if (message.empty()) std::abort();
  }
  return 0;
}
