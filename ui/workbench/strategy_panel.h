// The strategy panel: one widget per strategy key (model preset and data, world size, the three
// parallel degrees, pipeline schedule, micro-batches, virtual stages, ZeRO stage, sequence
// parallel, recompute, precision, gradient communication type, bucket size, steps). Every edit
// rebuilds the config document and runs the config validator on it (while a session runs, the
// session's switch rule: the accumulation it would derive, or its refusal); its message is shown
// as is, Apply is enabled only for a config that validates, and the predicted memory per rank
// (core/plan/memory_estimate.h, the CLI's own figures) is shown before anything runs. With a
// description of this machine (core/plan/system.h) the panel also predicts the edited strategy's
// step time, tokens/s and bubble with the simulator, beside the running strategy's prediction
// and measurement, so that what Apply would bring and how far the model is off show together.
#pragma once

#include <QWidget>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/config/config.h"
#include "core/plan/system.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace parascope::ui {

class StrategyPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StrategyPanel(QWidget* parent = nullptr);

  // Fills the widgets from a document (a config file with overrides applied); keys the panel
  // has no widget for are kept as they are.
  void setDocument(const nlohmann::json& document);
  // The document the widgets describe now.
  nlohmann::json document() const;
  // The validated config, when the widgets describe a valid one.
  const std::optional<parascope::TrainConfig>& config() const { return config_; }
  QString message() const;
  QPushButton* applyButton() const { return apply_; }

  // The widgets, by strategy key ("data_parallel_size", "world_size", ...), for tests and
  // keyboard navigation.
  QWidget* field(const QString& key) const;

  // Asks the running session what a document would switch it to (Session::resolveSwitch): the
  // config it would run, or UserError with its reason. batchNamed: the edit changed the
  // accumulation or the micro-batch size itself.
  using SwitchResolver =
      std::function<parascope::TrainConfig(const nlohmann::json& document, bool batchNamed)>;
  // While a session runs under `running`, every edit is validated as a switch of it, so "Valid"
  // means Apply will switch; without one (a null resolver), as a new run.
  void setRunning(const std::optional<parascope::TrainConfig>& running, SwitchResolver resolve);

  // What predictions price a strategy on; none: the panel says how to make one.
  void setSystem(std::optional<parascope::SystemDescription> system);
  // The running strategy's last measured step, shown beside the predictions.
  struct Measured {
    double stepSeconds = 0;
    double tokensPerSecond = 0;
    double idleFraction = -1;  // the largest pipeline rank's; -1 without a pipeline
    double peakBytes = 0;      // rank 0's peak over every memory category
  };
  void setMeasured(const std::optional<Measured>& measured);
  QString predictionText() const;

 signals:
  // A valid config, when the user presses Apply.
  void applied(const parascope::TrainConfig& config);
  void validityChanged(bool valid);

 private:
  void build();
  QString refusalOf(const nlohmann::json& document) const;
  void edited();
  void validate();
  void applyPreset(int index);
  void showMemory(const parascope::TrainConfig& c);
  void showPrediction();
  // A strategy's simulated step and memory per rank (Measured's fields), kept for the config it
  // was computed for: measurements arrive every step, strategies change only on edits.
  struct Prediction {
    std::string key;  // the config's document and world size
    Measured figures;
  };
  const Measured& predicted(const parascope::TrainConfig& c, std::optional<Prediction>& cache);

  nlohmann::json base_;  // the document's keys without a widget
  // The model and data the document came with, when they are no preset's: the preset list's
  // last entry then.
  nlohmann::json configModel_, configData_;
  std::optional<parascope::TrainConfig> config_;
  std::optional<parascope::TrainConfig> running_;  // the session's strategy while one runs
  SwitchResolver resolveSwitch_;
  bool filling_ = false;
  // Why the document last set is refused (the CLI's message), until the user edits a field.
  QString refusal_;
  std::map<std::string, double> dataBytes_;  // by data path: file sizes are read once
  std::optional<parascope::SystemDescription> system_;
  std::optional<Measured> measured_;
  std::optional<Prediction> editedPrediction_, runningPrediction_;

  QComboBox* preset_ = nullptr;
  QLineEdit* dataPath_ = nullptr;
  QSpinBox* world_ = nullptr;
  QSpinBox* data_ = nullptr;
  QSpinBox* tensor_ = nullptr;
  QSpinBox* pipeline_ = nullptr;
  QComboBox* schedule_ = nullptr;
  QSpinBox* microBatches_ = nullptr;
  QSpinBox* microBatchSize_ = nullptr;
  QSpinBox* virtualStages_ = nullptr;
  QComboBox* zero_ = nullptr;
  QCheckBox* sequenceParallel_ = nullptr;
  QComboBox* recompute_ = nullptr;
  QComboBox* precision_ = nullptr;
  QComboBox* device_ = nullptr;
  QComboBox* gradComm_ = nullptr;
  QSpinBox* bucket_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QLabel* message_ = nullptr;
  QLabel* memory_ = nullptr;
  QLabel* prediction_ = nullptr;
  QPushButton* apply_ = nullptr;
};

}  // namespace parascope::ui
