// libFuzzer entry point over the config path a user drives: the bytes up to the first NUL are a
// config file's text, each line after it a key.path=value override; the document is read under
// the JSON limits, the overrides applied, the whole config validated, and its canonical settings
// and memory estimate computed. Any input must end in success or a UserError with a message;
// nothing else may escape, crash or recurse. Built with clang by scripts/fuzz.sh; the test suite
// replays the seeds and deterministic mutations of them through this same function.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/config/config.h"
#include "core/config/config_agreement.h"
#include "core/plan/memory_estimate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parascope;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  try {
    nlohmann::json doc = parseBoundedJson(text, "fuzz.json", kConfigJsonLimits);
    if (!doc.is_object()) return 0;
    if (nul != std::string_view::npos) {
      std::string_view rest = input.substr(nul + 1);
      while (!rest.empty()) {
        const std::size_t end = rest.find('\n');
        applyOverride(doc, std::string(rest.substr(0, end)));
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      }
    }
    const TrainConfig c = parseTrainConfig(doc);
    if (settingsDigest(canonicalSettings(doc)) == 0 && describeJson(doc).empty()) std::abort();
    if (!(estimateMemory(c, 0, 1).totalBytes() >= 0)) std::abort();
  } catch (const UserError& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
