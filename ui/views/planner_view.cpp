// The Planner tab; see planner_view.h.
#include "ui/views/planner_view.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/common/error.h"
#include "core/common/shipped_file.h"
#include "core/plan/cost_model.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/simulator.h"
#include "core/plan/strategy_plan.h"
#include "core/session/run_summary.h"
#include "profiler/trace_data.h"
#include "ui/timeline/timeline_view.h"
#include "ui/views/plan_candidate_model.h"

namespace parascope::ui {

namespace {

// The Planner's jobs: the search, and the selected candidate's simulated step.
const QString kSearch = QStringLiteral("search");
const QString kDetail = QStringLiteral("detail");

// The best this many are kept when the search ends (what the table then holds); while it runs,
// the table shows every strategy simulated so far.
constexpr int kKept = 50;

// Models shipped in resources/models (file stem, label).
const std::pair<const char*, const char*> kModels[] = {
    {"gpt3-175b", "GPT-3 175B (96 layers, hidden 12288)"},
    {"gpt-1t", "GPT 1T (128 layers, hidden 25600)"},
    {"llama2-70b-shape", "Llama-2-70B's shape (GQA 8 groups, SwiGLU)"}};

// Systems: the presets (core/plan/system.h), then this machine.
const std::pair<const char*, const char*> kSystems[] = {
    {"a100-80gb", "DGX A100 80 GB (a100-80gb)"}, {"h100-80gb", "DGX H100 80 GB (h100-80gb)"}};
const char* const kThisMachine = "this-machine";

QString seconds(double s) {
  return QString::number(s, 'f', 3) + QStringLiteral(" s");
}

QString share(double part, double whole) {
  return QString::number(whole > 0 ? 100 * part / whole : 0.0, 'f', 1) + QLatin1Char('%');
}

}  // namespace

PlannerView::PlannerView(QWidget* parent) : QWidget(parent) {
  model_ = new QComboBox;
  model_->setObjectName(QStringLiteral("plannerModel"));
  for (const auto& [file, label] : kModels) model_->addItem(tr(label), QString::fromLatin1(file));
  model_->addItem(tr("The strategy panel's model"), QString());
  model_->setToolTip(
      tr("What to plan: a model of resources/models, or the one the strategy panel "
         "describes (whose candidates Apply can run here)"));
  system_ = new QComboBox;
  system_->setObjectName(QStringLiteral("plannerSystem"));
  for (const auto& [name, label] : kSystems) system_->addItem(tr(label), QString::fromLatin1(name));
  system_->addItem(tr("This machine"), QString::fromLatin1(kThisMachine));
  system_->setToolTip(
      tr("The hardware the strategies are priced on: docs/planner.md gives each "
         "preset's sources"));
  gpus_ = new QSpinBox;
  gpus_->setObjectName(QStringLiteral("plannerGpus"));
  gpus_->setRange(1, 1 << 20);
  gpus_->setValue(1024);
  gpus_->setToolTip(tr("GPUs (ranks) to plan for"));
  settings_ = new QLineEdit;
  settings_->setObjectName(QStringLiteral("plannerSettings"));
  settings_->setPlaceholderText(tr("key=value ... (a strategy key given is kept)"));
  settings_->setToolTip(
      tr("Settings applied to the model's config, as parascope-cli plan takes them: "
         "tensor_model_parallel_size=8 keeps t = 8 and searches the rest"));
  plan_ = new QPushButton(tr("Plan"));
  plan_->setObjectName(QStringLiteral("plannerPlan"));
  connect(plan_, &QPushButton::clicked, this, &PlannerView::plan);
  connect(settings_, &QLineEdit::returnPressed, this, &PlannerView::plan);

  auto* inputs = new QHBoxLayout;
  inputs->addWidget(new QLabel(tr("Model")));
  inputs->addWidget(model_, 2);
  inputs->addWidget(new QLabel(tr("System")));
  inputs->addWidget(system_, 1);
  inputs->addWidget(new QLabel(tr("GPUs")));
  inputs->addWidget(gpus_);
  inputs->addWidget(settings_, 2);
  inputs->addWidget(plan_);

  summary_ = new QLabel;
  summary_->setObjectName(QStringLiteral("plannerSummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  filter_ = new QLineEdit;
  filter_->setObjectName(QStringLiteral("plannerFilter"));
  filter_->setPlaceholderText(tr("Filter: key=value ... (pipeline_schedule=interleaved)"));
  filter_->setClearButtonEnabled(true);
  apply_ = new QPushButton(tr("Apply to the session"));
  apply_->setObjectName(QStringLiteral("plannerApply"));
  apply_->setEnabled(false);
  connect(apply_, &QPushButton::clicked, this, &PlannerView::apply);
  auto* tableBar = new QHBoxLayout;
  tableBar->addWidget(filter_, 1);
  tableBar->addWidget(apply_);

  candidates_ = new PlanCandidateModel(this);
  filtered_ = new PlanFilterModel(this);
  filtered_->setSourceModel(candidates_);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("plannerCandidates"));
  table_->setModel(filtered_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(PlanCandidateModel::Step, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          &PlannerView::showSelected);
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    try {
      filtered_->setFilter(text);
      filter_->setStyleSheet({});
      filter_->setToolTip({});
    } catch (const UserError& e) {
      // The table keeps the last filter that parsed while this one is being typed.
      filter_->setStyleSheet(QStringLiteral("color: #c0392b;"));
      filter_->setToolTip(QString::fromUtf8(e.what()));
    }
  });

  detail_ = new QLabel;
  detail_->setObjectName(QStringLiteral("plannerDetail"));
  detail_->setWordWrap(true);
  detail_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  memory_ = new QTableWidget(0, 3);
  memory_->setObjectName(QStringLiteral("plannerMemory"));
  memory_->setHorizontalHeaderLabels({tr("Memory per GPU"), tr("Bytes"), tr("Of the device")});
  memory_->verticalHeader()->hide();
  memory_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  memory_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* facts = new QWidget;
  auto* factsLayout = new QVBoxLayout(facts);
  factsLayout->setContentsMargins(0, 0, 0, 0);
  factsLayout->addWidget(detail_);
  factsLayout->addWidget(memory_, 1);
  timelineTitle_ = new QLabel;
  timelineTitle_->setWordWrap(true);
  timeline_ = new TimelineView;
  timeline_->setObjectName(QStringLiteral("plannerTimeline"));
  timeline_->setMessage(tr("Select a candidate to see its predicted step"));
  auto* predicted = new QWidget;
  auto* predictedLayout = new QVBoxLayout(predicted);
  predictedLayout->setContentsMargins(0, 0, 0, 0);
  predictedLayout->addWidget(timelineTitle_);
  predictedLayout->addWidget(timeline_, 1);
  below_ = new QSplitter(Qt::Horizontal);
  below_->addWidget(facts);
  below_->addWidget(predicted);
  below_->setStretchFactor(0, 2);
  below_->setStretchFactor(1, 3);
  below_->setSizes({400, 600});
  // In the workbench's short, wide tab the details go beside the table, which then keeps the
  // tab's height; in a tall one below it, their two parts then side by side.
  split_ = new AdaptiveSplitter(kStackedFrom);
  split_->setObjectName(QStringLiteral("plannerSplit"));
  split_->addWidget(table_);
  split_->addWidget(below_);
  split_->setStretchFactor(0, 3);
  split_->setStretchFactor(1, 2);
  split_->setOnTurn([this](Qt::Orientation o) {
    below_->setOrientation(o == Qt::Horizontal ? Qt::Vertical : Qt::Horizontal);
  });
  timeline_->setMinimumSize(200, 60);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(inputs);
  layout->addWidget(summary_);
  layout->addLayout(tableBar);
  layout->addWidget(split_, 1);

  connect(&jobs_, &JobTracker::progressed, this, [this](const QString& slot) {
    if (slot == kSearch) takeSimulated();
  });
  setSummary(tr("Pick a model, a system and a GPU count, then Plan: every strategy is checked by "
                "the config's rules and the device's memory, and ranked by its simulated step"),
             false);
}

void PlannerView::setPanelDocument(std::function<nlohmann::json()> document) {
  panelDocument_ = std::move(document);
}

void PlannerView::setThisMachine(std::optional<SystemDescription> system) {
  thisMachine_ = std::move(system);
}

QString PlannerView::summary() const {
  return summary_->text();
}

QString PlannerView::detail() const {
  return detail_->text();
}

void PlannerView::setSummary(const QString& text, bool error) {
  summary_->setText(text);
  summary_->setStyleSheet(error ? QStringLiteral("color: #c0392b;") : QString());
}

std::optional<SystemDescription> PlannerView::chosenSystem() const {
  const std::string name = system_->currentData().toString().toStdString();
  if (name == kThisMachine) return thisMachine_;
  return readSystemNamed(name);
}

PlanSearchRequest PlannerView::request() const {
  PlanSearchRequest r;
  const QString file = model_->currentData().toString();
  if (file.isEmpty()) {
    if (!panelDocument_) throw UserError("the strategy panel's model is not available here");
    r.document = panelDocument_();
  } else {
    r.document = readJsonFile(shippedFile("resources/models/" + file.toStdString() + ".json"));
  }
  for (const QString& term :
       settings_->text().split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts)) {
    if (!term.contains(QLatin1Char('=')))
      throw UserError(
          QStringLiteral("'%1' is not a setting; give key=value").arg(term).toStdString());
    applyPlanSetting(r, term.toStdString());
  }
  r.gpus = gpus_->value();
  r.top = kKept;
  return r;
}

void PlannerView::plan() {
  jobs_.cancel(kSearch);
  searching_ = false;
  candidates_->clear();
  apply_->setEnabled(false);
  PlanSearchRequest r;
  try {
    r = request();
    checkPlanRequest(r);
    const std::optional<SystemDescription> system = chosenSystem();
    if (!system)
      throw UserError(
          "this machine has no description yet: Session > Calibrate this machine "
          "measures one (or choose a preset)");
    r.system = *system;
  } catch (const std::exception& e) {
    // A search in flight was cancelled: its table is gone, and the reason shows instead.
    progress_.reset();
    setSummary(tr("Not planned: %1").arg(QString::fromUtf8(e.what())), true);
    emit searchEnded(true);
    return;
  }
  shown_ = r;
  shownPanelModel_ = model_->currentData().toString().isEmpty();
  progress_ = std::make_shared<Progress>();
  searching_ = true;
  setSummary(tr("Searching the strategies for %1 GPUs of '%2'…")
                 .arg(r.gpus)
                 .arg(QString::fromStdString(r.system.name)),
             false);
  jobs_.start(
      kSearch,
      [r = std::move(r), progress = progress_](const JobTracker::Job& job) mutable {
        r.cancel = job.cancelFlag();
        r.onSimulated = [&progress, &job](const PlanEstimate& e) {
          {
            const std::lock_guard lock(progress->mutex);
            progress->simulated.push_back(e);
          }
          job.progress({}, -1);
        };
        return searchPlans(r);
      },
      [this](const PlanSearch& result) { showSearch(result); },
      [this](const QString& error) {
        searching_ = false;
        candidates_->clear();
        setSummary(tr("Not planned: %1").arg(error), true);
        emit searchEnded(true);
      });
}

// The candidates simulated since the last look, into the table while the search runs.
void PlannerView::takeSimulated() {
  if (!searching_) return;
  std::vector<PlanEstimate> arrived;
  {
    const std::lock_guard lock(progress_->mutex);
    arrived.swap(progress_->simulated);
  }
  if (!arrived.empty()) candidates_->add(arrived);
  setSummary(tr("Searching the strategies for %1 GPUs of '%2'… %3 simulated so far")
                 .arg(shown_.gpus)
                 .arg(QString::fromStdString(shown_.system.name))
                 .arg(candidates_->rowCount()),
             false);
}

void PlannerView::showSearch(const PlanSearch& result) {
  searching_ = false;
  candidates_->clear();
  // The kept best are exact (search.h); the others simulated on the way are not a ranking.
  candidates_->add(result.best);
  setSummary(
      tr("%1 GPUs of '%2', global batch %3: %4 candidates, %5 refused by the config's rules, %6 "
         "out of memory, %7 simulated, %8 shown slower than the best without simulating (%9 s). "
         "The best %10 by predicted step:")
          .arg(shown_.gpus)
          .arg(QString::fromStdString(shown_.system.name))
          .arg(result.globalBatch)
          .arg(result.candidates)
          .arg(result.invalid)
          .arg(result.outOfMemory)
          .arg(result.simulated)
          .arg(result.bounded)
          .arg(result.seconds, 0, 'f', 2)
          .arg(result.best.size()),
      false);
  if (filtered_->rowCount() > 0) table_->selectRow(0);
  emit searchEnded(false);
}

void PlannerView::showSelected() {
  updateApply();
  const QModelIndex current = table_->currentIndex();
  if (!current.isValid()) {
    // Nothing selected (a new search, or the filter hid it): nothing is shown for it.
    jobs_.cancel(kDetail);
    detail_->clear();
    memory_->setRowCount(0);
    timelineTitle_->clear();
    timeline_->setIndex(std::make_shared<profiler::TimelineIndex>());
    timeline_->setMessage(tr("Select a candidate to see its predicted step"));
    return;
  }
  const int row = filtered_->mapToSource(current).row();
  const PlanEstimate& p = candidates_->plan(row);
  const TrainConfig& c = p.config;
  const SystemDescription& system = shown_.system;
  detail_->setText(tr("%1, micro-batch %2, %3 micro-batches per step\n"
                      "Step %4 on the busiest rank: kernels %5, %6 %7, pipeline bubble %8, "
                      "optimizer step and exposed data-parallel communication %9.\n"
                      "Limited by %10.")
                       .arg(QString::fromStdString(describeStrategy(c)))
                       .arg(c.microBatch)
                       .arg(c.gradientAccumulation)
                       .arg(seconds(p.stepSeconds), seconds(p.kernelSeconds),
                            QString::fromStdString(layerCommunicationName(c.parallel)),
                            seconds(p.layerCommSeconds), seconds(p.bubbleSeconds),
                            seconds(p.otherSeconds), QString::fromStdString(planLimit(p, system))));
  memory_->setRowCount(0);
  auto addRow = [&](const QString& name, double bytes) {
    const int r = memory_->rowCount();
    memory_->insertRow(r);
    memory_->setItem(r, 0, new QTableWidgetItem(name));
    auto* b = new QTableWidgetItem(QString::fromStdString(formatBytes(bytes)));
    b->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    memory_->setItem(r, 1, b);
    auto* s = new QTableWidgetItem(share(bytes, system.device.memoryBytes));
    s->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    memory_->setItem(r, 2, s);
  };
  for (const MemoryItem& item : p.memory.items)
    if (item.name != "data") addRow(QString::fromStdString(item.name), item.bytes);
  addRow(tr("total"), p.memory.perRankBytes());
  addRow(tr("the device"), system.device.memoryBytes);

  const int peers = c.parallel.data * c.parallel.tensor;
  timelineTitle_->setText(
      tr("Predicted step: one rank per pipeline rank (%1 of them)%2")
          .arg(c.parallel.pipeline)
          .arg(peers > 1 ? tr(", each standing for its %1 data- and tensor-parallel ranks, "
                              "which run the same program")
                               .arg(peers)
                         : QString()));
  timeline_->setMessage(tr("Simulating the step…"));
  jobs_.start(
      kDetail,
      [c, system](const JobTracker::Job&) {
        const StrategyPlan plan = planStrategy(c);
        const Simulation sim = simulateStep(plan, CostModel(system, plan));
        profiler::TraceData trace;
        trace.worldSize = c.parallel.worldSize();
        trace.events = predictedEvents(plan, sim, 1, PredictedRanks::OnePerPipelineRank);
        trace.adoptNames();
        trace.sortByTime();
        Detail d;
        d.index = std::make_shared<profiler::TimelineIndex>();
        d.index->build(trace);
        d.pipelineRanks = c.parallel.pipeline;
        return d;
      },
      [this](Detail d) { showDetail(std::move(d)); },
      [this](const QString& error) {
        timeline_->setMessage(tr("Could not simulate the step: %1").arg(error));
        emit candidateShown();
      });
}

void PlannerView::showDetail(Detail d) {
  timeline_->setMessage({});
  timeline_->setIndex(std::move(d.index));
  timeline_->fitAll();
  emit candidateShown();
}

void PlannerView::updateApply() {
  const QModelIndex current = table_->currentIndex();
  QString why;
  if (!current.isValid()) {
    why = tr("Select a candidate");
  } else if (!shownPanelModel_) {
    why = tr("Only a plan of the strategy panel's model can run here");
  } else {
    const TrainConfig& c = candidates_->plan(filtered_->mapToSource(current).row()).config;
    if (c.parallel.worldSize() > kMaxThreadRanks) {
      why = tr("This machine runs at most %1 ranks").arg(kMaxThreadRanks);
    } else {
      try {
        checkTrainable(c);
      } catch (const UserError& e) {
        why = QString::fromStdString(e.what());
      }
    }
  }
  apply_->setEnabled(why.isEmpty());
  apply_->setToolTip(why.isEmpty() ? tr("Set this strategy in the strategy panel and apply it: "
                                        "a live switch while a session runs")
                                   : why);
}

void PlannerView::apply() {
  const QModelIndex current = table_->currentIndex();
  if (!current.isValid() || !apply_->isEnabled()) return;
  emit applyRequested(
      documentWithPlan(shown_, candidates_->plan(filtered_->mapToSource(current).row())));
}

}  // namespace parascope::ui
