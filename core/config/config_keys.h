// The config's keys, once: each key's dotted path, type, default, range, allowed values and
// meaning. The validator reads every key through this table (JsonReader looks each key up
// here), the Strategy panel takes its fields' ranges, defaults and tooltips from it, the
// printers list the strategy from it, and docs/config.md's tables are its rendering
// (`parascope-cli config keys --markdown`), checked by tests/config. A new key: one row in
// config_keys.cpp and the line that reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace parascope {

struct TrainConfig;

enum class KeyType : std::uint8_t {
  Object,  // a block of further keys
  Integer,
  Number,
  Boolean,
  String,
  Choice,    // one of `choices`
  Integers,  // an array of at most `count` integers, each in range
  Numbers,   // an array of exactly `count` numbers, each in range
  Layout,    // pipeline_model_parallel_layout: Megatron's string, or layer counts per stage
};

struct ConfigKey {
  std::string path;  // dotted within the document: "zero_optimization.stage"
  KeyType type = KeyType::Integer;
  // The default; null where other keys decide it, which `derived` then says in words.
  nlohmann::json fallback;
  std::string derived;
  std::int64_t intMin = 0, intMax = 0;  // Integer, Integers, Layout's counts
  double min = 0, max = 0;              // Number, Numbers
  std::size_t count = 0;                // Numbers: exactly; Integers, Layout: at most
  std::vector<std::string> choices;     // Choice
  std::string help;                     // what it means, one paragraph of Markdown
  // A key of the parallel strategy: what the Strategy panel edits, a live switch may change and
  // the run's reports list (in this table's order). Its value in a validated config is
  // `resolved`, which fills in what the document left to defaults and derivations.
  bool strategy = false;
  nlohmann::json (*resolved)(const TrainConfig&) = nullptr;

  std::string section() const;  // the path before its last dot; "" at the top level
  std::string name() const;     // the path after its last dot
};

// Every key, sections in the order docs/config.md shows them.
const std::vector<ConfigKey>& configKeys();

// The key at `path`. A path missing from the table is a programming error (std::logic_error):
// no key is read, shown or printed without its row.
const ConfigKey& configKey(std::string_view path);

// Whether `path` is in the table and a strategy key.
bool isStrategyKey(std::string_view path);

// `path`'s value in `document`, else the key's default (null where it is derived).
nlohmann::json configValue(const nlohmann::json& document, std::string_view path);

// The strategy keys of a validated config with their values (ConfigKey::resolved), in table
// order, as dotted paths.
std::vector<std::pair<std::string, nlohmann::json>> strategySettings(const TrainConfig& config);

// For docs and help: "int 1..4096", "number 0..1e6", "bool", "`\"none\"`, `\"full\"`", ...
std::string typeText(const ConfigKey& key);
// "1", "`\"1f1b\"`", or the derivation in words.
std::string defaultText(const ConfigKey& key);
// The keys directly under `section` ("" for the top level) as a Markdown table.
std::string markdownTable(std::string_view section);
// Every section, in table order.
std::vector<std::string> configSections();

}  // namespace parascope
