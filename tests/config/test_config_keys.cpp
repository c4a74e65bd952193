// The key table is what the validator enforces: every row's default parses, every value just
// outside a row's range or choices is refused with the row's own range in the message, the
// engine's defaults are the rows' defaults, and docs/config.md shows the table as it is.
#include <QtTest>

#include <fstream>
#include <sstream>

#include "core/common/error.h"
#include "core/config/config.h"
#include "core/config/config_keys.h"
#include "core/config/ps_config.h"

using namespace parascope;
using nlohmann::json;

namespace {

// Sets the dotted `path` in `doc`.
void put(json& doc, const std::string& path, const json& value) {
  json* at = &doc;
  std::size_t begin = 0;
  for (std::size_t dot; (dot = path.find('.', begin)) != std::string::npos; begin = dot + 1)
    at = &(*at)[path.substr(begin, dot - begin)];
  (*at)[path.substr(begin)] = value;
}

// A document in which `key` is read: the keys it depends on set, and the key itself.
json documentWith(const ConfigKey& key, const json& value) {
  json doc = json::object();
  if (key.path == "model.hidden_sizes") {
    put(doc, "model.type", "mlp");
    put(doc, "data.type", "idx");
  }
  if (key.path == "scheduler.params.warmup_num_steps") put(doc, "scheduler.type", "WarmupLR");
  if (key.path == "scheduler.params.total_num_steps" ||
      key.path == "scheduler.params.cos_min_ratio")
    put(doc, "scheduler.type", "WarmupCosineLR");
  if (isWord2VecKey(key)) put(doc, "model.type", "word2vec");
  if (key.path == "parameter_server.k_steps") put(doc, "parameter_server.mode", "geo");
  if (key.path.ends_with(".initial_g2sum")) put(doc, key.section() + ".optimizer", "adagrad");
  put(doc, key.path, value);
  return doc;
}

std::string refusal(const json& doc) {
  try {
    if (isPsConfig(doc)) {
      (void)parsePsConfig(doc);
      return "accepted";
    }
    parseTrainConfig(doc);
  } catch (const UserError& e) {
    return e.what();
  }
  return "accepted";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

class TestConfigKeys : public QObject {
  Q_OBJECT
 private slots:
  void everyDefaultParses();
  void integerRangesAreTheRows();
  void numberRangesAreTheRows();
  void choicesAreTheRows();
  void unknownPathIsAProgrammingError();
  void valuesFallBackToTheRows();
  void strategySettingsOfAConfig();
  void docsShowTheTable();
};

void TestConfigKeys::everyDefaultParses() {
  int checked = 0;
  for (const ConfigKey& k : configKeys()) {
    if (k.type == KeyType::Object || k.fallback.is_null()) continue;
    const std::string why = refusal(documentWith(k, k.fallback));
    QVERIFY2(why == "accepted", (k.path + ": " + why).c_str());
    ++checked;
  }
  QVERIFY(checked > 40);
}

void TestConfigKeys::integerRangesAreTheRows() {
  for (const ConfigKey& k : configKeys()) {
    if (k.type != KeyType::Integer) continue;
    const std::string allowed =
        "is out of range; allowed " + std::to_string(k.intMin) + ".." + std::to_string(k.intMax);
    QCOMPARE(refusal(documentWith(k, k.intMin - 1)),
             "config: " + k.path + " = " + std::to_string(k.intMin - 1) + " " + allowed);
    if (k.intMax < INT64_MAX) {
      QCOMPARE(refusal(documentWith(k, k.intMax + 1)),
               "config: " + k.path + " = " + std::to_string(k.intMax + 1) + " " + allowed);
    }
  }
}

void TestConfigKeys::numberRangesAreTheRows() {
  for (const ConfigKey& k : configKeys()) {
    if (k.type != KeyType::Number) continue;
    const double above = k.max * 2 + 1;
    QCOMPARE(refusal(documentWith(k, above)),
             "config: " + k.path + " = " + json(above).dump() + " is out of range; allowed [" +
                 json(k.min).dump() + ", " + json(k.max).dump() + "]");
  }
}

void TestConfigKeys::choicesAreTheRows() {
  for (const ConfigKey& k : configKeys()) {
    if (k.type != KeyType::Choice) continue;
    std::string list;
    for (const std::string& c : k.choices) list += (list.empty() ? "" : ", ") + c;
    QCOMPARE(refusal(documentWith(k, "nope")),
             "config: " + k.path + " = \"nope\" is not supported; allowed: " + list);
  }
  QCOMPARE(configKey("pipeline_schedule").choices,
           (std::vector<std::string>{"gpipe", "1f1b", "interleaved", "zb-h1"}));
}

void TestConfigKeys::unknownPathIsAProgrammingError() {
  QVERIFY_THROWS_EXCEPTION(std::logic_error, configKey("zero_optimization.nope"));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, configValue(json::object(), "nope"));
}

void TestConfigKeys::valuesFallBackToTheRows() {
  const json doc = {{"zero_optimization", {{"stage", 2}}}, {"model", {{"num_layers", 7}}}};
  QCOMPARE(configValue(doc, "zero_optimization.stage"), json(2));
  QCOMPARE(configValue(doc, "zero_optimization.reduce_bucket_size"), json(6553600));
  QCOMPARE(configValue(doc, "model.num_layers"), json(7));
  QCOMPARE(configValue(doc, "model.hidden_size"), json(256));
  QCOMPARE(configValue(doc, "pipeline_schedule"), json("1f1b"));
  QVERIFY(configValue(doc, "data_parallel_size").is_null());  // derived
  QCOMPARE(configValue(json::array(), "train_iters"), json(100));
  // The engine's defaults are the rows' defaults: a strategy read from an empty document
  // resolves to the defaults the table states.
  const TrainConfig config = parseTrainConfig(json::object());
  for (const ConfigKey& k : configKeys()) {
    if (!k.strategy || k.fallback.is_null()) continue;
    QCOMPARE(k.resolved(config), k.fallback);
  }
}

void TestConfigKeys::strategySettingsOfAConfig() {
  const TrainConfig config = parseTrainConfig({{"tensor_model_parallel_size", 2},
                                               {"data_parallel_size", 2},
                                               {"bf16", {{"enabled", true}}},
                                               {"zero_optimization", {{"stage", 1}}},
                                               {"train_batch_size", 32}});
  const std::vector<std::pair<std::string, json>> want = {
      {"train_micro_batch_size_per_gpu", 16},  // 32 / (1 x 2)
      {"gradient_accumulation_steps", 1},
      {"data_parallel_size", 2},
      {"tensor_model_parallel_size", 2},
      {"context_parallel_size", 1},
      {"sequence_parallel", false},
      {"pipeline_model_parallel_size", 1},
      {"pipeline_schedule", "1f1b"},
      {"virtual_pipeline_model_parallel_size", 1},
      {"recompute_granularity", "none"},
      {"communication_data_type", "bf16"},
      {"zero_optimization.stage", 1},
      {"zero_optimization.reduce_bucket_size", 6553600},
      {"zero_optimization.stage3_prefetch_bucket_size", 50000000},
      {"zero_optimization.stage3_max_live_parameters", 1000000000},
      {"zero_optimization.overlap_comm", true},
      {"fp16.enabled", false},
      {"bf16.enabled", true}};
  QCOMPARE(strategySettings(config), want);
}

void TestConfigKeys::docsShowTheTable() {
  const std::string docs = readFile(PARASCOPE_SOURCE_DIR "/docs/config.md");
  for (const std::string& section : configSections()) {
    const std::string name = section.empty() ? "top" : section;
    const std::string begin = "<!-- config keys: " + name + " -->\n";
    const std::size_t at = docs.find(begin);
    QVERIFY2(at != std::string::npos, ("docs/config.md has no table for " + name).c_str());
    const std::size_t end = docs.find("<!-- end config keys -->", at);
    QVERIFY(end != std::string::npos);
    const std::string shown = docs.substr(at + begin.size(), end - at - begin.size());
    QVERIFY2(shown == markdownTable(section), ("docs/config.md's table for " + name +
                                               " is not the key table's; print it with "
                                               "`parascope-cli config keys --markdown --section '" +
                                               name + "'`")
                                                  .c_str());
  }
}

QTEST_GUILESS_MAIN(TestConfigKeys)
#include "test_config_keys.moc"
