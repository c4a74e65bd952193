#include "ui/workbench/strategy_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <climits>
#include <thread>

#include "core/common/error.h"
#include "core/config/config_keys.h"
#include "core/parallel/schedule.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/simulator.h"
#include "core/tensor/allocator.h"

namespace parascope::ui {

namespace {

// "1 rank", "4 ranks".
QString rankCount(int n) {
  return n == 1 ? QStringLiteral("1 rank") : QStringLiteral("%1 ranks").arg(n);
}

using nlohmann::json;

// Model presets: the model block and the data it trains on.
struct Preset {
  const char* name;
  const char* model;
  const char* data;
};
constexpr Preset kPresets[] = {
    {"GPT-mini (4 layers, width 256)",
     R"({"type":"gpt","vocab_size":256,"context_length":128,"hidden_size":256,)"
     R"("num_attention_heads":4,"num_layers":4,"mlp_ratio":4})",
     R"({"type":"text","path":"/usr/share/games/fortunes","validation_fraction":0.1})"},
    {"GPT-tiny (4 layers, width 64)",
     R"({"type":"gpt","vocab_size":256,"context_length":32,"hidden_size":64,)"
     R"("num_attention_heads":4,"num_layers":4,"mlp_ratio":4})",
     R"({"type":"text","path":"/usr/share/games/fortunes","validation_fraction":0.1})"},
    {"MLP (Fashion-MNIST)", R"({"type":"mlp","hidden_sizes":[256]})",
     R"({"type":"idx","path":"/usr/share/datasets/fashion-mnist"})"},
};

QComboBox* combo(std::initializer_list<const char*> items) {
  auto* c = new QComboBox;
  for (const char* i : items) c->addItem(QString::fromLatin1(i));
  return c;
}

QSpinBox* spin(int lo, int hi) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setKeyboardTracking(false);
  return s;
}

int clampToInt(std::int64_t v) {
  return static_cast<int>(std::clamp<std::int64_t>(v, INT_MIN, INT_MAX));
}

QString helpOf(const ConfigKey& k) {
  return QString::fromStdString(k.help);
}

// A field for an integer key: its range and meaning from the key table.
QSpinBox* spinFor(const char* path) {
  const ConfigKey& k = configKey(path);
  QSpinBox* s = spin(clampToInt(k.intMin), clampToInt(k.intMax));
  s->setToolTip(helpOf(k));
  return s;
}

// A field for a choice key (its choices), or for an integer key with a short range (its values).
QComboBox* comboFor(const char* path, const QStringList& first = {}) {
  const ConfigKey& k = configKey(path);
  auto* c = new QComboBox;
  c->addItems(first);
  for (const std::string& choice : k.choices) c->addItem(QString::fromStdString(choice));
  if (k.type == KeyType::Integer) {
    for (std::int64_t v = k.intMin; v <= k.intMax; ++v) c->addItem(QString::number(v));
  }
  c->setToolTip(helpOf(k));
  return c;
}

// The document's value of an integer or string key, else the key's default (`fallback` where
// the default is derived or the document holds another type).
int intAt(const json& doc, const char* path, int fallback) {
  const json v = configValue(doc, path);
  return v.is_number_integer() ? clampToInt(v.get<std::int64_t>()) : fallback;
}

std::string stringAt(const json& doc, const char* path) {
  const json v = configValue(doc, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

void setChoice(QComboBox* c, const std::string& text) {
  const int i = c->findText(QString::fromStdString(text));
  if (i >= 0) c->setCurrentIndex(i);
}

}  // namespace

StrategyPanel::StrategyPanel(QWidget* parent) : QWidget(parent) {
  build();
  setDocument(json::object());
}

void StrategyPanel::build() {
  preset_ = new QComboBox;
  for (const Preset& p : kPresets) preset_->addItem(QString::fromLatin1(p.name));
  dataPath_ = new QLineEdit;
  device_ = comboFor("device");
  world_ = spin(1, 256);
  data_ = spinFor("data_parallel_size");
  tensor_ = spinFor("tensor_model_parallel_size");
  pipeline_ = spinFor("pipeline_model_parallel_size");
  schedule_ = comboFor("pipeline_schedule");
  for (const ScheduleInfo* schedule : scheduleTable()) {
    schedule_->setItemData(
        schedule_->findText(QString::fromUtf8(schedule->name.data(), schedule->name.size())),
        QString::fromUtf8(schedule->description.data(), schedule->description.size()),
        Qt::ToolTipRole);
  }
  microBatches_ = spinFor("gradient_accumulation_steps");
  microBatchSize_ = spinFor("train_micro_batch_size_per_gpu");
  virtualStages_ = spinFor("virtual_pipeline_model_parallel_size");
  zero_ = comboFor("zero_optimization.stage");
  sequenceParallel_ = new QCheckBox;
  sequenceParallel_->setToolTip(helpOf(configKey("sequence_parallel")));
  recompute_ = comboFor("recompute_granularity");
  // fp16.enabled and bf16.enabled as one choice: at most one of them may be true.
  precision_ = combo({"fp32", "fp16", "bf16"});
  precision_->setToolTip(helpOf(configKey("fp16.enabled")) + "; " +
                         helpOf(configKey("bf16.enabled")));
  gradComm_ = comboFor("communication_data_type", {tr("compute type")});
  bucket_ = spinFor("zero_optimization.reduce_bucket_size");
  steps_ = spinFor("train_iters");
  const std::pair<QWidget*, const char*> named[] = {
      {preset_, "preset"},
      {dataPath_, "data.path"},
      {device_, "device"},
      {world_, "world_size"},
      {data_, "data_parallel_size"},
      {tensor_, "tensor_model_parallel_size"},
      {pipeline_, "pipeline_model_parallel_size"},
      {schedule_, "pipeline_schedule"},
      {microBatches_, "gradient_accumulation_steps"},
      {microBatchSize_, "train_micro_batch_size_per_gpu"},
      {virtualStages_, "virtual_pipeline_model_parallel_size"},
      {zero_, "zero_optimization.stage"},
      {sequenceParallel_, "sequence_parallel"},
      {recompute_, "recompute_granularity"},
      {precision_, "precision"},
      {gradComm_, "communication_data_type"},
      {bucket_, "zero_optimization.reduce_bucket_size"},
      {steps_, "train_iters"}};
  for (const auto& [w, key] : named) w->setObjectName(QString::fromLatin1(key));

  auto* form = new QFormLayout;
  form->addRow(tr("Model"), preset_);
  form->addRow(tr("Data"), dataPath_);
  form->addRow(tr("Device"), device_);
  form->addRow(tr("World size"), world_);
  form->addRow(tr("Data parallel"), data_);
  form->addRow(tr("Tensor parallel"), tensor_);
  form->addRow(tr("Pipeline parallel"), pipeline_);
  form->addRow(tr("Schedule"), schedule_);
  form->addRow(tr("Micro-batches"), microBatches_);
  form->addRow(tr("Micro-batch size"), microBatchSize_);
  form->addRow(tr("Virtual stages"), virtualStages_);
  form->addRow(tr("ZeRO stage"), zero_);
  form->addRow(tr("Sequence parallel"), sequenceParallel_);
  form->addRow(tr("Recompute"), recompute_);
  form->addRow(tr("Precision"), precision_);
  form->addRow(tr("Gradient comm type"), gradComm_);
  form->addRow(tr("Bucket size (elements)"), bucket_);
  form->addRow(tr("Steps"), steps_);

  message_ = new QLabel;
  message_->setObjectName(QStringLiteral("message"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  memory_ = new QLabel;
  memory_->setObjectName(QStringLiteral("memory"));
  memory_->setWordWrap(true);
  prediction_ = new QLabel;
  prediction_->setObjectName(QStringLiteral("prediction"));
  prediction_->setWordWrap(true);
  prediction_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  apply_ = new QPushButton(tr("&Apply strategy"));
  apply_->setObjectName(QStringLiteral("apply"));

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(message_);
  layout->addWidget(memory_);
  layout->addWidget(prediction_);
  layout->addWidget(apply_);
  layout->addStretch(1);

  connect(preset_, &QComboBox::currentIndexChanged, this, &StrategyPanel::applyPreset);
  connect(dataPath_, &QLineEdit::editingFinished, this, &StrategyPanel::edited);
  for (QSpinBox* s : {world_, data_, tensor_, pipeline_, microBatches_, microBatchSize_,
                      virtualStages_, bucket_, steps_}) {
    connect(s, &QSpinBox::valueChanged, this, &StrategyPanel::edited);
  }
  for (QComboBox* c : {device_, schedule_, zero_, recompute_, precision_, gradComm_}) {
    connect(c, &QComboBox::currentIndexChanged, this, &StrategyPanel::edited);
  }
  connect(sequenceParallel_, &QCheckBox::toggled, this, &StrategyPanel::edited);
  connect(apply_, &QPushButton::clicked, this, [this] {
    if (config_) emit applied(*config_);
  });
}

QWidget* StrategyPanel::field(const QString& key) const {
  return findChild<QWidget*>(key, Qt::FindDirectChildrenOnly);
}

void StrategyPanel::setDocument(const json& document) {
  filling_ = true;
  base_ = document.is_object() ? document : json::object();
  const int presets = static_cast<int>(std::size(kPresets));
  const json model = base_.value("model", json::parse(kPresets[0].model));
  int preset = -1;
  for (int i = 0; i < presets; ++i) {
    if (json::parse(kPresets[i].model) == model) preset = i;
  }
  while (preset_->count() > presets) preset_->removeItem(presets);
  if (preset < 0) {
    configModel_ = model;
    configData_ = base_.value("data", json::object());
    const std::string type = model.value("type", "gpt");
    preset_->addItem(type == "gpt" ? tr("From the config: GPT, %1 layers, width %2")
                                         .arg(model.value("num_layers", 4))
                                         .arg(model.value("hidden_size", 256))
                                   : tr("From the config: %1").arg(QString::fromStdString(type)));
    preset = presets;
  }
  preset_->setCurrentIndex(preset);
  const json data = base_.value("data", json::parse(kPresets[std::min(preset, presets - 1)].data));
  dataPath_->setText(QString::fromStdString(data.value("path", "")));
  setChoice(device_, stringAt(base_, "device"));
  // data_parallel_size's default is derived: one replica where the document names none.
  const int d = intAt(base_, "data_parallel_size", 1);
  const int t = intAt(base_, "tensor_model_parallel_size", 1);
  const int p = intAt(base_, "pipeline_model_parallel_size", 1);
  data_->setValue(d);
  tensor_->setValue(t);
  pipeline_->setValue(p);
  world_->setValue(d * t * p);
  setChoice(schedule_, stringAt(base_, "pipeline_schedule"));
  // The batch identity derives the micro-batch size or the accumulation a document leaves out
  // (a switch keeping the global batch, a model file giving train_batch_size): show what runs.
  int micro = 0, accumulation = 0;
  try {
    const TrainConfig resolved = parseTrainConfig(base_);
    micro = resolved.microBatch;
    accumulation = resolved.gradientAccumulation;
  } catch (const UserError&) {
    // Refused: the fields show what the document names, and the refusal says why.
    micro = intAt(base_, "train_micro_batch_size_per_gpu", 1);
    accumulation = intAt(base_, "gradient_accumulation_steps", 1);
  }
  microBatches_->setValue(accumulation);
  microBatchSize_->setValue(micro);
  virtualStages_->setValue(intAt(base_, "virtual_pipeline_model_parallel_size", 1));
  setChoice(zero_, std::to_string(intAt(base_, "zero_optimization.stage", 0)));
  bucket_->setValue(intAt(base_, "zero_optimization.reduce_bucket_size", 1));
  sequenceParallel_->setChecked(configValue(base_, "sequence_parallel") == true);
  setChoice(recompute_, stringAt(base_, "recompute_granularity"));
  const bool fp16 = configValue(base_, "fp16.enabled") == true;
  const bool bf16 = configValue(base_, "bf16.enabled") == true;
  precision_->setCurrentIndex(fp16 ? 1 : bf16 ? 2 : 0);
  const std::string comm = stringAt(base_, "communication_data_type");
  gradComm_->setCurrentIndex(
      comm.empty() ? 0 : std::max(0, gradComm_->findText(QString::fromStdString(comm))));
  steps_->setValue(intAt(base_, "train_iters", 1));
  filling_ = false;
  refusal_ = refusalOf(document);
  validate();
}

// The fields hold only what they can show (a spin box clamps train_iters=-5 to 1 and a world
// of 100000 ranks to 256), so the document as given is judged first, by the CLI's own
// validation: what the document names, with the panel's defaults for what it leaves out.
QString StrategyPanel::refusalOf(const json& document) const {
  if (!document.is_object() || document.empty()) return {};
  json named = StrategyPanel::document();
  named.update(document, true);
  try {
    parseTrainConfig(named);
  } catch (const UserError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

json StrategyPanel::document() const {
  json j = base_;
  j["model"] = base_.value("model", json::parse(kPresets[0].model));
  j["data"]["path"] = dataPath_->text().toStdString();
  if (device_->currentIndex() == 0) {  // the CPU, the default
    j.erase("device");
  } else {
    j["device"] = device_->currentText().toStdString();
  }
  j["data_parallel_size"] = data_->value();
  j["tensor_model_parallel_size"] = tensor_->value();
  j["pipeline_model_parallel_size"] = pipeline_->value();
  j["pipeline_schedule"] = schedule_->currentText().toStdString();
  j["gradient_accumulation_steps"] = microBatches_->value();
  j["train_micro_batch_size_per_gpu"] = microBatchSize_->value();
  j["virtual_pipeline_model_parallel_size"] = virtualStages_->value();
  j["zero_optimization"]["stage"] = zero_->currentText().toInt();
  j["zero_optimization"]["reduce_bucket_size"] = bucket_->value();
  j["recompute_granularity"] = recompute_->currentText().toStdString();
  if (sequenceParallel_->isChecked()) {
    j["sequence_parallel"] = true;
  } else {
    j.erase("sequence_parallel");
  }
  j.erase("fp16");
  j.erase("bf16");
  if (precision_->currentIndex() == 1) j["fp16"] = {{"enabled", true}};
  if (precision_->currentIndex() == 2) j["bf16"] = {{"enabled", true}};
  if (gradComm_->currentIndex() == 0) {
    j.erase("communication_data_type");
  } else {
    j["communication_data_type"] = gradComm_->currentText().toStdString();
  }
  j["train_iters"] = steps_->value();
  // The global batch follows from the batch identity unless the document fixed it.
  return j;
}

void StrategyPanel::applyPreset(int index) {
  if (filling_ || index < 0) return;
  const bool fromConfig = index >= static_cast<int>(std::size(kPresets));
  base_["model"] = fromConfig ? configModel_ : json::parse(kPresets[index].model);
  base_["data"] = fromConfig ? configData_ : json::parse(kPresets[index].data);
  dataPath_->setText(QString::fromStdString(base_["data"].value("path", "")));
  edited();
}

void StrategyPanel::setRunning(const std::optional<TrainConfig>& running, SwitchResolver resolve) {
  running_ = resolve ? running : std::nullopt;
  resolveSwitch_ = running_ ? std::move(resolve) : SwitchResolver();
  validate();
}

QString StrategyPanel::message() const {
  return message_->text();
}

void StrategyPanel::edited() {
  if (filling_) return;
  refusal_.clear();  // what the user sees in the fields is what runs from now on
  validate();
}

void StrategyPanel::validate() {
  if (filling_) return;
  const bool wasValid = config_.has_value();
  try {
    if (!refusal_.isEmpty()) throw UserError(refusal_.toStdString());
    const json doc = document();
    if (resolveSwitch_ && running_) {
      // A switch of the running session: its rule decides the accumulation (unless this edit
      // set it) and what it refuses; the world size still has to hold the degrees.
      const int asked = intAt(doc, "gradient_accumulation_steps", 1);
      const bool batchNamed =
          asked != running_->gradientAccumulation ||
          intAt(doc, "train_micro_batch_size_per_gpu", 1) != running_->microBatch;
      config_ = resolveSwitch_(doc, batchNamed);
      if (config_->parallel.worldSize() != world_->value()) {
        config_ = parseTrainConfig(config_->document, world_->value());
      }
      QString valid = tr("Valid: %1").arg(rankCount(config_->parallel.worldSize()));
      if (config_->gradientAccumulation != asked) {
        valid += tr("; the switch keeps the global batch of %1 with gradient accumulation %2")
                     .arg(config_->globalBatch)
                     .arg(config_->gradientAccumulation);
      }
      message_->setText(valid);
    } else {
      config_ = parseTrainConfig(doc, world_->value());
      message_->setText(tr("Valid: %1").arg(rankCount(config_->parallel.worldSize())));
    }
    // What the device does not run yet, as the session would refuse it at its start.
    checkDeviceSupport(*config_, config_->device);
    message_->setStyleSheet(QStringLiteral("color: palette(text);"));
    showMemory(*config_);
  } catch (const UserError& e) {
    config_.reset();
    message_->setText(QString::fromStdString(e.what()));
    message_->setStyleSheet(QStringLiteral("color: #c0392b;"));
    memory_->clear();
    memory_->setToolTip({});
  }
  showPrediction();
  apply_->setEnabled(config_.has_value());
  if (wasValid != config_.has_value()) emit validityChanged(config_.has_value());
}

void StrategyPanel::setSystem(std::optional<SystemDescription> system) {
  system_ = std::move(system);
  editedPrediction_.reset();
  runningPrediction_.reset();
  showPrediction();
}

// One step of `c` simulated on this machine's description, and its memory per rank (the one
// estimate).
const StrategyPanel::Measured& StrategyPanel::predicted(const TrainConfig& c,
                                                        std::optional<Prediction>& cache) {
  const std::string key = c.document.dump() + "/" + std::to_string(c.parallel.worldSize());
  if (cache && cache->key == key) return cache->figures;
  const StrategyPlan plan = planStrategy(c);
  const Simulation sim = simulateStep(plan, CostModel(*system_, plan));
  Measured p;
  p.stepSeconds = sim.stepSeconds;
  p.tokensPerSecond = plan.targetsPerStep / sim.stepSeconds;
  if (c.parallel.pipeline > 1) {
    for (std::size_t q = 0; q < sim.ranks.size(); ++q)
      p.idleFraction = std::max(p.idleFraction, sim.idleFraction(static_cast<int>(q)));
  }
  auto it = dataBytes_.find(c.data.path);
  if (it == dataBytes_.end()) it = dataBytes_.emplace(c.data.path, dataBytesInMemory(c.data)).first;
  p.peakBytes = estimateMemory(c, it->second, c.parallel.worldSize()).perRankBytes();
  cache = Prediction{key, p};
  return cache->figures;
}

void StrategyPanel::setMeasured(const std::optional<Measured>& measured) {
  measured_ = measured;
  showPrediction();
}

QString StrategyPanel::predictionText() const {
  return prediction_->text();
}

namespace {

QString seconds(double s) {
  return s >= 1 ? QStringLiteral("%1 s").arg(s, 0, 'f', 2)
                : QStringLiteral("%1 ms").arg(1e3 * s, 0, 'f', 0);
}

}  // namespace

void StrategyPanel::showPrediction() {
  if (!config_) {
    prediction_->clear();
    return;
  }
  if (!system_) {
    prediction_->setText(
        tr("<b>Predicted step:</b> this machine has no description yet; "
           "<i>Session \u25b8 Calibrate this machine</i> (or <tt>parascope-cli "
           "plan calibrate</tt>) measures one in about a minute."));
    return;
  }
  std::vector<std::pair<QString, Measured>> columns;
  try {
    columns.emplace_back(tr("Edited"), predicted(*config_, editedPrediction_));
    if (running_) columns.emplace_back(tr("Running"), predicted(*running_, runningPrediction_));
  } catch (const std::exception& e) {
    prediction_->setText(tr("<b>Predicted step:</b> cannot simulate this strategy: %1")
                             .arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
    return;
  }
  if (running_ && measured_) columns.emplace_back(tr("Measured"), *measured_);
  QString header, step, tokens, bubble, memory;
  for (const auto& [name, p] : columns) {
    header += QStringLiteral("<th align=right>&nbsp;%1</th>").arg(name);
    step += QStringLiteral("<td align=right>&nbsp;%1</td>").arg(seconds(p.stepSeconds));
    tokens += QStringLiteral("<td align=right>&nbsp;%1</td>").arg(p.tokensPerSecond, 0, 'f', 0);
    bubble +=
        QStringLiteral("<td align=right>&nbsp;%1</td>")
            .arg(p.idleFraction < 0 ? QStringLiteral("\u2013")
                                    : QStringLiteral("%1%").arg(100 * p.idleFraction, 0, 'f', 1));
    memory += QStringLiteral("<td align=right>&nbsp;%1</td>")
                  .arg(QString::fromStdString(formatBytes(p.peakBytes)));
  }
  // The ranks run as threads of this machine whatever system predicts them: more of them than
  // cores take turns, and a user reading tokens/s should know that before blaming the strategy.
  const int ranks = config_->parallel.worldSize();
  const auto cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const QString shared =
      ranks > cores
          ? tr("<br><i>%1 ranks on this machine's %2 cores:</i> they take turns, so a step here "
               "takes longer than on %1 devices of their own.")
                .arg(ranks)
                .arg(cores)
          : QString();
  prediction_->setText(
      tr("<b>Predicted on %1</b> (its step program simulated)")
          .arg(QString::fromStdString(system_->name).toHtmlEscaped()) +
      QStringLiteral("<table><tr><th></th>%1</tr><tr><td>%2</td>%3</tr><tr><td>%4</td>%5</tr>"
                     "<tr><td>%6</td>%7</tr><tr><td>%8</td>%9</tr></table>")
          .arg(header, tr("Step"), step, tr("Tokens/s"), tokens, tr("Bubble"), bubble,
               tr("Memory/rank"), memory) +
      shared);
}

void StrategyPanel::showMemory(const TrainConfig& c) {
  auto it = dataBytes_.find(c.data.path);
  if (it == dataBytes_.end()) it = dataBytes_.emplace(c.data.path, dataBytesInMemory(c.data)).first;
  const MemoryEstimate m = estimateMemory(c, it->second, c.parallel.worldSize());
  QString text = tr("<b>Predicted memory per rank: %1</b>")
                     .arg(QString::fromStdString(formatBytes(m.perRankBytes())));
  for (const MemoryItem& item : m.items) {
    text += QStringLiteral("<br>&nbsp;&nbsp;%1: %2")
                .arg(QString::fromStdString(item.name),
                     QString::fromStdString(formatBytes(item.bytes)));
  }
  // Not memory: the swap files, of which only the buffers above are in memory
  // (optimizer_swap.h, parameter_swap.h).
  const auto bytesText = [](double b) { return QString::fromStdString(formatBytes(b)); };
  if (m.swapBytes > m.parameterSwapBytes) {
    text += tr("<br>On disk (offload_optimizer nvme): %1 of optimizer state")
                .arg(bytesText(m.swapBytes - m.parameterSwapBytes));
  }
  if (m.parameterSwapBytes > 0) {
    text += tr("<br>On disk (offload_param nvme): %1 of parameters")
                .arg(bytesText(m.parameterSwapBytes));
  }
  if (m.hostBytes > 0) {
    text += tr("<br>In host memory (offload_optimizer cpu): %1 of optimizer state and its copies")
                .arg(bytesText(m.hostBytes));
  }
  // What the sharded items hold through the step and what comes on top at the peak, so that
  // ZeRO's numbers explain themselves (flat_layout.h, param_gatherer.h, grad_reducer.h).
  const int group = c.parallel.gradientGroup();
  QString why;
  if (c.parallel.zeroStage >= 2 && group > 1) {
    auto item = [&m](MemoryCategory cat) -> const MemoryItem& {
      return m.items[static_cast<std::size_t>(cat)];
    };
    auto bytes = [](double b) { return QString::fromStdString(formatBytes(b)); };
    const MemoryItem& grads = item(MemoryCategory::Gradient);
    text += tr("<br>ZeRO-%1 over %2 ranks, at the peak:").arg(c.parallel.zeroStage).arg(group);
    text += tr("<br>&nbsp;&nbsp;gradients: a %1 shard + %2 of full-size buckets")
                .arg(bytes(grads.residentBytes), bytes(grads.bytes - grads.residentBytes));
    why =
        tr("Gradients: each layer's full-size bucket is reduce-scattered as its backward ends, "
           "one still reducing while the next fills.");
    if (c.parallel.zeroStage >= 3) {
      const MemoryItem& params = item(MemoryCategory::Parameter);
      text += (c.parallel.swapsParameters()
                   ? tr("<br>&nbsp;&nbsp;parameters: %1 of swap buffers + %2 gathered")
                   : tr("<br>&nbsp;&nbsp;parameters: a %1 shard + %2 gathered"))
                  .arg(bytes(params.residentBytes), bytes(params.bytes - params.residentBytes));
      why +=
          tr("\nParameters: the running layer's are gathered, and the next one's prefetched "
             "within zero_optimization.stage3_prefetch_bucket_size and "
             "stage3_max_live_parameters.");
    }
  }
  // The panel is narrow: the reasons are the label's tooltip, the figures its text.
  memory_->setToolTip(why);
  text += tr("<br>All %1: %2")
              .arg(rankCount(m.ranksSharingMemory))
              .arg(QString::fromStdString(formatBytes(m.totalBytes())));
  if (c.parallel.pipeline > 1) {
    // The schedule's own facts (ScheduleInfo), at the papers' unit durations until a run
    // measures them (the Pipeline view).
    const ScheduleInfo& schedule = findSchedule(c.pipeline.schedule);
    const PipelineShape shape{c.parallel.pipeline, c.gradientAccumulation, c.pipeline.chunks};
    const int held = busiestRankPeak(schedule, shape).held;
    text += tr("<br><b>Ideal bubble: %1%</b> (F 1, B 2); a rank holds at most %2 forwards' "
               "activations")
                .arg(100 * schedule.idealBubble(shape, StepDurations{}), 0, 'f', 1)
                .arg(held);
  }
  memory_->setText(text);
}

}  // namespace parascope::ui
