// The search enumerates the open keys' values, validates each combination with the config's own
// parser (so a candidate is exactly a config `train` would accept for that world), orders the
// valid ones by a lower bound on their step and simulates them in that order until the bound
// passes the slowest of the best kept. Work is split over the hardware threads.
#include "core/plan/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>

#include "core/common/error.h"
#include "core/config/config_keys.h"
#include "core/config/model_kind.h"
#include "core/parallel/schedule.h"
#include "core/plan/cost_model.h"
#include "core/plan/simulator.h"
#include "core/plan/strategy_plan.h"

namespace parascope {

namespace {

constexpr int kMaxGpus = 1 << 20;
constexpr int kMaxTop = 1000;

const char* const kData = "data_parallel_size";
const char* const kTensor = "tensor_model_parallel_size";
const char* const kContext = "context_parallel_size";
const char* const kSequence = "sequence_parallel";
const char* const kPipeline = "pipeline_model_parallel_size";
const char* const kSchedule = "pipeline_schedule";
const char* const kVirtual = "virtual_pipeline_model_parallel_size";
const char* const kMicro = "train_micro_batch_size_per_gpu";
const char* const kAccumulation = "gradient_accumulation_steps";
const char* const kRecompute = "recompute_granularity";
const char* const kZero = "zero_optimization.stage";

// Variants of one base (sequence parallelism x recompute x ZeRO stage), for candidate order.
constexpr std::size_t kMaxVariants = 2 * 3 * 4;

// Chunks per pipeline rank the interleaved schedule is tried with.
constexpr int kVirtualSizes[] = {2, 3, 4, 6, 8};

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    d.push_back(i);
    if (i != n / i) d.push_back(n / i);
  }
  std::sort(d.begin(), d.end());
  return d;
}

nlohmann::json::json_pointer pointerTo(const std::string& path) {
  std::string p = "/" + path;
  std::replace(p.begin(), p.end(), '.', '/');
  return nlohmann::json::json_pointer(p);
}

void setAt(nlohmann::json& doc, const std::string& path, const nlohmann::json& value) {
  setConfigValue(doc, path, value, "plan: " + path);
}

void eraseAt(nlohmann::json& doc, const std::string& path) {
  const nlohmann::json::json_pointer at = pointerTo(path);
  if (!doc.contains(at)) return;
  doc[at.parent_pointer()].erase(at.back());
}

// The step's sequences: train_batch_size, else micro-batch x accumulation x data-parallel size
// as the document states them (their defaults where it does not).
std::int64_t globalBatchOf(const nlohmann::json& doc) {
  const nlohmann::json global = configValue(doc, "train_batch_size");
  if (!global.is_null()) {
    if (!global.is_number_integer() || global.get<std::int64_t>() < 1)
      throw UserError("plan: train_batch_size must be a whole number of at least 1, not " +
                      global.dump());
    return global.get<std::int64_t>();
  }
  std::int64_t product = 1;
  for (const char* key : {kMicro, kAccumulation, kData}) {
    const nlohmann::json v = configValue(doc, key);
    if (v.is_null()) continue;  // data_parallel_size: derived, 1 in-process
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
      throw UserError(std::string("plan: ") + key + " must be a whole number of at least 1, not " +
                      v.dump());
    product *= v.get<std::int64_t>();
  }
  return product;
}

// What rank 0's program says of a pipeline shape: the forwards it holds at once (a forward's
// activations stay until its input gradient, B or Bi, runs) and whether backward passes split
// (zero-bubble's Bi and W). Read from the schedule's own program, so exact for every schedule.
struct ScheduleFacts {
  int heldForwards = 0;
  bool splitsBackward = false;
};

ScheduleFacts scheduleFacts(const ScheduleInfo& schedule, const PipelineShape& shape) {
  ScheduleFacts facts;
  int live = 0;
  for (const Instruction& in : schedule.buildRank(shape, 0)) {
    if (in.op == Op::Forward) facts.heldForwards = std::max(facts.heldForwards, ++live);
    if (in.op == Op::Backward || in.op == Op::BackwardInput) --live;
    if (in.op == Op::BackwardInput) facts.splitsBackward = true;
  }
  return facts;
}

// Facts per (schedule, p, m, v), shared by the search's threads.
class ScheduleFactsCache {
 public:
  ScheduleFacts get(const TrainConfig& c) {
    const PipelineShape shape{c.parallel.pipeline, c.gradientAccumulation, c.pipeline.chunks};
    const auto key =
        std::make_tuple(c.pipeline.schedule, shape.stages, shape.microBatches, shape.chunks);
    {
      const std::lock_guard guard(lock_);
      if (const auto it = facts_.find(key); it != facts_.end()) return it->second;
    }
    const ScheduleFacts facts = scheduleFacts(findSchedule(c.pipeline.schedule), shape);
    const std::lock_guard guard(lock_);
    facts_.emplace(key, facts);
    return facts;
  }

 private:
  std::mutex lock_;
  std::map<std::tuple<std::string, int, int, int>, ScheduleFacts> facts_;
};

// The virtual stages' layer ranges (one stage of every layer without a pipeline).
std::vector<LayerRange> stagesOf(const TrainConfig& c, std::size_t layers) {
  if (!c.pipeline.stages.empty()) return c.pipeline.stages;
  return {{0, static_cast<int>(layers)}};
}

// Per layer, the seconds no strategy can beat on its parts, priced as the cost model prices
// each layer (tensor-parallel collectives included; casts and per-instruction costs left out,
// they only add): the forward's products, the attention core's (what selective recompute runs
// again), backward's input- and weight-side products, the element-wise kernels, the tensor
// group's collectives and what selective recompute's element-wise kernels add. They depend on
// the degrees and the micro-batch, not on the schedule, recompute or ZeRO stage, so variants
// share them.
struct LayerBounds {
  std::vector<double> forward, attention, input, weight, bytes, collectives, recomputedBytes;
};

LayerBounds layerBounds(const TrainConfig& c, const SystemDescription& system) {
  const DeviceDescription& d = system.device;
  const MatmulRate& rate = d.matmul(c.parallel.compute);
  const double scale = activationElementBytes(d, c.parallel.compute) / 4;
  const int t = c.parallel.tensor;
  const LinkClass link = linkClassOf(system, c.parallel.backend, t, 1);
  LayerBounds out;
  for (const LayerWork& w : c.model.kind->layerWork(c)) {
    double forward = 0, attention = 0, input = 0, weight = 0;
    for (const Gemm& g : w.gemms) {
      const double perDimension = g.flops() / std::max(1.0, std::min({g.m, g.n, g.k}));
      const double f = (g.flops() + perDimension * rate.halfDimension) / rate.peakFlops;
      const double b =
          g.flops() / rate.backwardPeakFlops + perDimension * rate.halfDimension / rate.peakFlops;
      forward += f;
      if (!g.weight) attention += f;
      input += g.weight ? b : 2 * b;
      weight += g.weight ? b : 0;
    }
    // The context group's exchange may hide entirely behind the attention core: no bound.
    double collectives = 0;
    for (const LayerCollective& col : w.collectives)
      if (!col.context)
        collectives += linkSeconds(system, link, col.op, 4 * scale * col.elements, t, 1);
    out.forward.push_back(forward);
    out.attention.push_back(attention);
    out.input.push_back(input);
    out.weight.push_back(weight);
    out.bytes.push_back(scale * w.elementwiseBytes / d.elementwiseBandwidth);
    out.collectives.push_back(collectives);
    out.recomputedBytes.push_back(scale * w.recomputedBytes / d.elementwiseBandwidth);
  }
  return out;
}

// LayerBounds per (tensor, context, sequence parallelism, micro-batch): the search's other keys
// (and the model, the precision and the backend, which it keeps) leave them as they are.
class LayerBoundsCache {
 public:
  explicit LayerBoundsCache(const SystemDescription& system) : system_(system) {}

  std::shared_ptr<const LayerBounds> get(const TrainConfig& c) {
    const ParallelStrategy& s = c.parallel;
    const auto key = std::make_tuple(s.tensor, s.context, s.sequenceParallel, c.microBatch);
    {
      const std::lock_guard guard(lock_);
      if (const auto it = bounds_.find(key); it != bounds_.end()) return it->second;
    }
    auto bounds = std::make_shared<const LayerBounds>(layerBounds(c, system_));
    const std::lock_guard guard(lock_);
    return bounds_.emplace(key, std::move(bounds)).first->second;
  }

 private:
  const SystemDescription& system_;
  std::mutex lock_;
  std::map<std::tuple<int, int, bool, int>, std::shared_ptr<const LayerBounds>> bounds_;
};

// The seconds no strategy of this shape can beat, from its layers' bounds. Rank r starts with
// its first stage's forward of the first micro-batch, after the stages before it ran theirs,
// then computes every micro-batch of its stages; unless backward passes split, its last
// backward then runs down the stages before it. Its slowest possible span, then the optimizer's
// own update of its share and the step's overhead.
double stepLowerBound(const TrainConfig& c, const SystemDescription& system, double parameters,
                      const ScheduleFacts& facts, const LayerBounds& l) {
  const DeviceDescription& d = system.device;
  const Recompute recompute = c.pipeline.recompute;
  const int t = c.parallel.tensor, p = c.parallel.pipeline;
  const std::size_t count = l.forward.size();
  // Per layer: forward, and backward's input side (recompute included) and whole.
  std::vector<double> forwards(count), inputSides(count), backwards(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double forward = l.forward[i] + l.bytes[i] + l.collectives[i];
    double input = l.input[i] + 2 * l.bytes[i] + l.collectives[i];
    if (recompute == Recompute::Full) input += forward;
    if (recompute == Recompute::Selective) input += l.attention[i] + l.recomputedBytes[i];
    forwards[i] = forward;
    inputSides[i] = input;
    backwards[i] = input + l.weight[i];
  }
  const std::vector<LayerRange> stages = stagesOf(c, count);
  auto sum = [](const std::vector<double>& v, const LayerRange& s) {
    double x = 0;
    for (int i = s.begin; i < s.end; ++i) x += v[static_cast<std::size_t>(i)];
    return x;
  };
  double span = 0, head = 0, tail = 0;
  for (int rank = 0; rank < p; ++rank) {
    double busy = 0;
    for (std::size_t s = static_cast<std::size_t>(rank); s < stages.size();
         s += static_cast<std::size_t>(p))
      busy += sum(forwards, stages[s]) + sum(backwards, stages[s]);
    busy *= c.gradientAccumulation;
    span = std::max(span, head + busy + (facts.splitsBackward ? 0 : tail));
    head += sum(forwards, stages[static_cast<std::size_t>(rank)]);
    tail += sum(inputSides, stages[static_cast<std::size_t>(rank)]);
  }
  // On a CPU the ranks' threads share the cores, which do everyone's work (each pipeline rank's
  // for its tensor, context and data ranks) in no less than all of it over their count.
  if (d.sharesCores()) {
    double work = 0;
    for (std::size_t i = 0; i < count; ++i) work += forwards[i] + backwards[i];
    work *= c.gradientAccumulation * c.parallel.ranksPerPipelineRank();
    span = std::max(span, work / d.cores);
  }
  // Every optimizer step starts after the pipeline span; the rank holding the most parameters
  // (at least the mean) then updates its share.
  const ParallelStrategy& st = c.parallel;
  const double updated =
      parameters / (static_cast<double>(t) * p) / (st.zeroStage >= 1 ? st.gradientGroup() : 1);
  return span + updated * 28 / d.optimizerBandwidth + system.stepOverhead;
}

PlanEstimate estimateStep(const TrainConfig& c, const SystemDescription& system,
                          MemoryEstimate memory) {
  PlanEstimate e;
  e.config = c;
  e.memory = std::move(memory);
  const StrategyPlan plan = planStrategy(c);
  const CostModel costs(system, plan);
  const Simulation sim = simulateStep(plan, costs);
  const ParallelStrategy& s = c.parallel;
  const int gpus = s.worldSize();
  e.stepSeconds = sim.stepSeconds;
  e.tokensPerSecond = plan.targetsPerStep / sim.stepSeconds;
  e.modelFlopsPerGpu =
      c.model.kind->flopsPerTarget(c.model) * plan.targetsPerStep / sim.stepSeconds / gpus;
  double hardware = 0;
  std::size_t busiest = 0;
  double kernels = 0, collectives = 0;
  for (std::size_t q = 0; q < plan.ranks.size(); ++q) {
    double k = 0, total = 0;
    for (const Instruction& in : plan.ranks[q].program) {
      if (!in.isCompute()) continue;
      const ComputeFeatures f = costs.features(plan.ranks[q], in);
      hardware += f.flops();
      k += kernelSeconds(system.device, s.compute, f);
      total += costs.computeSeconds(f);
    }
    if (sim.ranks[q].busy >= sim.ranks[busiest].busy) {
      busiest = q;
      kernels = k;
      collectives = total - k;
    }
    e.bubbleFraction +=
        sim.idleFraction(static_cast<int>(q)) / static_cast<double>(plan.ranks.size());
  }
  // Each pipeline rank's program runs on its tensor x context x data ranks, a share each.
  e.hardwareFlopsPerGpu = hardware * s.ranksPerPipelineRank() / sim.stepSeconds / gpus;
  e.mfu = e.modelFlopsPerGpu / system.device.matmul(s.compute).peakFlops;
  const double busy = sim.ranks[busiest].busy;
  // On a CPU, busy time is stretched by sharing the cores; split it as the unstretched parts.
  const double share = kernels + collectives > 0 ? busy / (kernels + collectives) : 0;
  e.kernelSeconds = kernels * share;
  e.layerCommSeconds = collectives * share;
  e.bubbleSeconds = sim.pipelineSeconds - busy;
  e.otherSeconds = sim.stepSeconds - sim.pipelineSeconds;
  return e;
}

// Bytes no rank of this strategy holds less of: model state alone, the whole model's
// `parameters` spread evenly over the tensor and pipeline ranks (the busiest holds at least the
// mean, padding only adds), stored, with gradients and AdamW's state as the ZeRO stage shards
// them (memory_estimate.cpp's replay of the same).
double modelStateLowerBound(const TrainConfig& c, double parameters) {
  const ParallelStrategy& s = c.parallel;
  const double perRank = parameters / (static_cast<double>(s.tensor) * s.pipeline);
  const double stored = static_cast<double>(dtypeSize(s.compute));
  const double d = s.gradientGroup();
  const double values = s.zeroStage >= 3 ? stored / d : stored;
  const double gradients = s.zeroStage >= 2 ? stored / d : stored;
  const double optimizer = (s.compute == DType::F32 ? 8.0 : 12.0) / (s.zeroStage >= 1 ? d : 1);
  return perRank * (values + gradients + optimizer);
}

// Activation bytes rank 0 holds at its peak, at least: `held` forwards, each leaving every layer
// of its chunk's kept state (none under full recompute) and output (the chunk's last layer's is
// sent, or is the losses), what mixed precision stores in the compute type at that size.
double activationLowerBound(const TrainConfig& c, double elementBytes, int held) {
  const std::vector<LayerActivations> layers = c.model.kind->layerActivations(c);
  const std::vector<LayerRange> stages = stagesOf(c, layers.size());
  const int p = c.parallel.pipeline;
  const std::vector<int> own = rankLayers(stages, p, 0);
  const bool full = c.pipeline.recompute == Recompute::Full;
  const double keptBytes =
      std::min(elementBytes, static_cast<double>(dtypeSize(c.parallel.compute)));
  double least = std::numeric_limits<double>::infinity();
  for (const LayerRange& chunk : rankChunkRanges(stages, p, 0)) {
    double left = 0;
    for (int i = chunk.begin; i < chunk.end; ++i) {
      const LayerActivations& a =
          layers[static_cast<std::size_t>(own[static_cast<std::size_t>(i)])];
      // Without full recompute the outputs are the next layers' inputs, narrowed like the state.
      const double output = i + 1 < chunk.end ? a.output : 0;
      const double low = full ? 0 : a.narrowed() + a.keptLow + output;
      left += ((full ? 0 : a.kept) + output - low) * elementBytes + low * keptBytes;
    }
    least = std::min(least, left);
  }
  return held * least;
}

MemoryEstimate deviceMemory(const TrainConfig& c, const SystemDescription& system) {
  // Data stays with the host; one rank per device.
  return estimateMemory(c, 0, 1, activationElementBytes(system.device, c.parallel.compute));
}

struct Valid {
  TrainConfig config;
  double bound = 0;
  std::size_t order = 0;  // in the enumeration: ties rank in it, whatever the threads did
};

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", whole > 0 ? 100 * part / whole : 0.0);
  return buf;
}

}  // namespace

const std::vector<std::string>& searchedKeys() {
  static const std::vector<std::string> keys = {kData,         kTensor,    kContext, kSequence,
                                                kPipeline,     kSchedule,  kVirtual, kMicro,
                                                kAccumulation, kRecompute, kZero};
  return keys;
}

nlohmann::ordered_json planStrategyKeys(const TrainConfig& c) {
  nlohmann::ordered_json keys;
  for (const auto& [path, value] : strategySettings(c))
    if (std::find(searchedKeys().begin(), searchedKeys().end(), path) != searchedKeys().end())
      keys[path] = value;
  nlohmann::ordered_json ordered;
  for (const std::string& k : searchedKeys())
    if (keys.contains(k)) ordered[k] = keys[k];
  return ordered;
}

PlanEstimate estimatePlan(const TrainConfig& config, const SystemDescription& system) {
  return estimateStep(config, system, deviceMemory(config, system));
}

std::string layerCommunicationName(const ParallelStrategy& s) {
  return s.context > 1 ? "tensor- and context-parallel communication"
                       : "tensor-parallel communication";
}

std::string planLimit(const PlanEstimate& p, const SystemDescription& system) {
  struct Part {
    std::string name;
    double seconds;
  };
  std::vector<Part> losses = {{"pipeline bubble", p.bubbleSeconds},
                              {layerCommunicationName(p.config.parallel), p.layerCommSeconds},
                              {"optimizer step, exposed data-parallel communication and step "
                               "overhead",
                               p.otherSeconds}};
  std::sort(losses.begin(), losses.end(),
            [](const Part& a, const Part& b) { return a.seconds > b.seconds; });
  const double step = p.stepSeconds;
  std::string line;
  if (p.kernelSeconds >= losses.front().seconds)
    line = "compute: kernels " + percent(p.kernelSeconds, step) + " of the step";
  else
    line = losses.front().name + ": " + percent(losses.front().seconds, step) +
           " of the step (kernels " + percent(p.kernelSeconds, step) + ")";
  std::string then;
  for (std::size_t i = p.kernelSeconds >= losses.front().seconds ? 0 : 1; i < losses.size(); ++i) {
    if (losses[i].seconds < 0.005 * step) continue;  // what rounds to 0% says nothing
    then +=
        (then.empty() ? "; then " : ", ") + losses[i].name + " " + percent(losses[i].seconds, step);
  }
  line += then;
  const double device = system.device.memoryBytes;
  line += "; memory " + formatBytes(p.memory.perRankBytes()) + " of " + formatBytes(device) +
          " per GPU (" + p.memory.largest().name + " the largest)";
  return line;
}

namespace {

// What every search starts from, once its input is known good: the document without the keys
// it searches, the global batch and the whole model's parameters.
struct Prepared {
  nlohmann::json base;
  std::int64_t globalBatch = 0;
  double parameters = 0;
  // The tokens of a sequence context parallelism splits; 0 for a model that cannot split.
  std::int64_t sequence = 0;
};

Prepared prepare(const PlanSearchRequest& r) {
  if (r.gpus < 1 || r.gpus > kMaxGpus)
    throw UserError("plan: --gpus " + std::to_string(r.gpus) + " is out of range; valid: 1.." +
                    std::to_string(kMaxGpus));
  if (r.top < 1 || r.top > kMaxTop)
    throw UserError("plan: --top " + std::to_string(r.top) + " is out of range; valid: 1.." +
                    std::to_string(kMaxTop));
  for (const std::string& key : r.fixed) {
    if (!isStrategyKey(key))
      throw UserError("plan: " + key +
                      " is not a strategy key; the search fixes strategy keys given as "
                      "key=value (see `parascope-cli config keys`)");
  }
  for (const char* key : {kTensor, kContext, kPipeline}) {
    const nlohmann::json v = configValue(r.document, key);
    if (r.fixed.count(key) > 0 && (!v.is_number_integer() || v.get<std::int64_t>() < 1))
      throw UserError(std::string("plan: ") + key + " must be a whole number of at least 1, not " +
                      v.dump());
  }
  Prepared out;
  out.globalBatch = globalBatchOf(r.document);
  out.base = r.document;
  for (const std::string& key : searchedKeys())
    if (r.fixed.count(key) == 0) eraseAt(out.base, key);
  eraseAt(out.base, "train_batch_size");
  // The model's own rules, once, with every strategy key at its default on one rank: a bad
  // model is its own message, not a search that finds nothing.
  nlohmann::json probe = out.base;
  for (const std::string& key : searchedKeys()) eraseAt(probe, key);
  probe["train_batch_size"] = 1;
  probe[kMicro] = 1;
  const TrainConfig model = parseTrainConfig(probe, 1);
  for (const auto& [name, shape] : model.model.kind->parameterShapes(model.model))
    out.parameters += static_cast<double>(shapeNumel(shape));
  if (model.model.kind->splitsLayers()) out.sequence = model.model.gpt.contextLength;
  return out;
}

}  // namespace

void applyPlanSetting(PlanSearchRequest& request, const std::string& assignment) {
  applyOverride(request.document, assignment);
  const std::string key = assignment.substr(0, assignment.find('='));
  if (isStrategyKey(key)) request.fixed.insert(key);
}

void checkPlanRequest(const PlanSearchRequest& request) {
  prepare(request);
}

PlanSearch searchPlans(const PlanSearchRequest& r) {
  const auto started = std::chrono::steady_clock::now();
  auto isFixed = [&](const char* key) { return r.fixed.count(key) > 0; };
  const Prepared prepared = prepare(r);
  const nlohmann::json& base = prepared.base;
  const double parameters = prepared.parameters;
  PlanSearch out;
  out.globalBatch = prepared.globalBatch;
  ScheduleFactsCache facts;
  LayerBoundsCache layerBounds(r.system);

  // Every combination of the open keys' values: bases of the keys that shape the programs, each
  // with its variants of sequence parallelism, recompute and ZeRO stage. A base is first
  // checked with the variant every rule allows when any does (no sequence parallelism, no
  // recompute, ZeRO-0, unless fixed otherwise), so a refused base skips its variants unparsed.
  auto open = [&](const char* key, std::vector<nlohmann::json> values) {
    if (isFixed(key)) return std::vector<nlohmann::json>{configValue(base, key)};
    return values;
  };
  auto ints = [](const std::vector<std::int64_t>& v) {
    std::vector<nlohmann::json> j;
    for (std::int64_t x : v) j.emplace_back(x);
    return j;
  };
  struct Base {
    nlohmann::json doc;
    bool tensorSplit = false;
  };
  std::vector<Base> bases;
  // Context degrees: those that split a sequence into two chunks per rank (config.cpp).
  std::vector<std::int64_t> contexts;
  for (std::int64_t c : divisors(r.gpus))
    if (c == 1 || (prepared.sequence > 0 && prepared.sequence % (2 * c) == 0))
      contexts.push_back(c);
  for (const nlohmann::json& tensor : open(kTensor, ints(divisors(r.gpus)))) {
    const std::int64_t t = tensor.get<std::int64_t>();
    if (r.gpus % t != 0) continue;
    for (const nlohmann::json& context : open(kContext, ints(contexts))) {
      const std::int64_t cp = context.get<std::int64_t>();
      if ((r.gpus / t) % cp != 0) continue;
      const bool dominated = cp > 1 && !isFixed(kContext) && !isFixed(kData) && !isFixed(kMicro);
      for (const nlohmann::json& pipeline : open(kPipeline, ints(divisors(r.gpus / t / cp)))) {
        const std::int64_t p = pipeline.get<std::int64_t>();
        if ((r.gpus / t / cp) % p != 0) continue;
        const std::int64_t d = r.gpus / t / cp / p;
        if (out.globalBatch % d != 0) continue;
        std::vector<nlohmann::json> schedules = {"1f1b"};
        if (p > 1) schedules = {"1f1b", "interleaved", "zb-h1", "gpipe"};
        for (const nlohmann::json& micro : open(kMicro, ints(divisors(out.globalBatch / d)))) {
          // Context degree c with micro-batch b, g = gcd(b, c) > 1: the strategy with c / g, b / g
          // and g times the data ranks does the same products on the same tokens per rank,
          // exchanges fewer keys and values over a smaller group and holds less, so it is never
          // slower nor larger. Where the three keys are open it is searched, and this one is not.
          if (dominated && std::gcd(micro.get<std::int64_t>(), cp) > 1) continue;
          for (const nlohmann::json& schedule : open(kSchedule, schedules)) {
            std::vector<nlohmann::json> virtuals = {1};
            if (schedule == "interleaved")
              virtuals = ints({std::begin(kVirtualSizes), std::end(kVirtualSizes)});
            for (const nlohmann::json& v : open(kVirtual, virtuals)) {
              Base b{base, t > 1};
              setAt(b.doc, kTensor, tensor);
              setAt(b.doc, kContext, context);
              setAt(b.doc, kPipeline, pipeline);
              b.doc["train_batch_size"] = out.globalBatch;
              setAt(b.doc, kMicro, micro);
              setAt(b.doc, kSchedule, schedule);
              setAt(b.doc, kVirtual, v);
              bases.push_back(std::move(b));
            }
          }
        }
      }
    }
  }
  if (bases.empty()) {
    std::string fixed;
    for (const std::string& key : r.fixed)
      fixed += (fixed.empty() ? "" : ", ") + key + "=" + configValue(base, key).dump();
    throw UserError("plan: no strategy for " + std::to_string(r.gpus) +
                    " GPUs: tensor x context x pipeline size must divide the GPUs, and the "
                    "data-parallel size the global batch of " +
                    std::to_string(out.globalBatch) +
                    (fixed.empty() ? std::string() : " (fixed: " + fixed + ")"));
  }
  struct Variant {
    nlohmann::json sequence, recompute, zero;
  };
  auto variantsOf = [&](const Base& b) {
    std::vector<Variant> all;
    const std::vector<nlohmann::json> sequence = b.tensorSplit
                                                     ? std::vector<nlohmann::json>{false, true}
                                                     : std::vector<nlohmann::json>{false};
    for (const nlohmann::json& sp : open(kSequence, sequence))
      for (const nlohmann::json& recompute : open(kRecompute, {"none", "selective", "full"}))
        for (const nlohmann::json& zero : open(kZero, {0, 1, 2, 3}))
          all.push_back({sp, recompute, zero});
    return all;
  };

  const unsigned threads = std::max(1U, std::min(8U, std::thread::hardware_concurrency()));
  auto parallel = [&](std::size_t count, const std::function<void(std::size_t)>& body) {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    std::exception_ptr failure;
    std::mutex failed;
    for (unsigned i = 0; i < threads; ++i) {
      pool.emplace_back([&] {
        for (std::size_t k; (k = next++) < count;) {
          if (r.cancel != nullptr && r.cancel->load()) {
            const std::lock_guard lock(failed);
            if (!failure) failure = std::make_exception_ptr(PlanSearchCancelled());
            next = count;
            break;
          }
          try {
            body(k);
          } catch (...) {
            const std::lock_guard lock(failed);
            if (!failure) failure = std::current_exception();
            next = count;
          }
        }
      });
    }
    for (std::thread& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  };

  // Validate and bound.
  std::vector<std::vector<Valid>> checked(bases.size());
  std::vector<std::int64_t> variantCounts(bases.size());
  std::vector<std::string> refusals(bases.size());
  parallel(bases.size(), [&](std::size_t i) {
    const std::vector<Variant> variants = variantsOf(bases[i]);
    variantCounts[i] = static_cast<std::int64_t>(variants.size());
    for (std::size_t k = 0; k < variants.size(); ++k) {
      nlohmann::json doc = bases[i].doc;
      setAt(doc, kSequence, variants[k].sequence);
      setAt(doc, kRecompute, variants[k].recompute);
      setAt(doc, kZero, variants[k].zero);
      try {
        TrainConfig c = parseTrainConfig(doc, r.gpus);
        const double bound =
            stepLowerBound(c, r.system, parameters, facts.get(c), *layerBounds.get(c));
        checked[i].push_back(Valid{std::move(c), bound, i * kMaxVariants + k});
      } catch (const UserError& e) {
        if (refusals[i].empty()) refusals[i] = e.what();
        if (k == 0 && (isFixed(kSequence) || !variants[k].sequence.get<bool>()) &&
            (isFixed(kRecompute) || variants[k].recompute == "none") &&
            (isFixed(kZero) || variants[k].zero == 0))
          return;  // the most permissive variant refused: so is every other
      }
    }
  });
  std::vector<Valid> valid;
  for (std::size_t i = 0; i < bases.size(); ++i) {
    out.candidates += variantCounts[i];
    for (Valid& v : checked[i]) valid.push_back(std::move(v));
  }
  out.invalid = out.candidates - static_cast<std::int64_t>(valid.size());
  if (valid.empty()) {
    const auto reason = std::find_if(refusals.begin(), refusals.end(),
                                     [](const std::string& m) { return !m.empty(); });
    throw UserError("plan: no strategy for " + std::to_string(r.gpus) + " GPUs satisfies the " +
                    "config's rules" +
                    (reason == refusals.end() ? std::string() : "; the first refused: " + *reason));
  }
  std::sort(valid.begin(), valid.end(), [](const Valid& a, const Valid& b) {
    return a.bound != b.bound ? a.bound < b.bound : a.order < b.order;
  });

  // Simulate in the bound's order; stop where the bound reaches the slowest of the best kept.
  std::mutex lock;
  struct Ranked {
    PlanEstimate plan;
    std::size_t order;
  };
  std::vector<Ranked> best;
  std::atomic<std::int64_t> outOfMemory{0}, simulated{0}, bounded{0};
  // A CPU's ranks on one node share its memory; a GPU's rank has the device's own.
  const double deviceBytes =
      r.system.device.memoryBytes /
      (r.system.device.sharesCores() ? std::min(r.gpus, r.system.devicesPerNode) : 1);
  // The candidate needing the least memory, for the message when none fits (at least `bytes`:
  // the bound where it alone was refused).
  struct Smallest {
    double bytes = std::numeric_limits<double>::infinity();
    std::size_t order = 0;
    const TrainConfig* config = nullptr;
  } smallest;
  auto cutoff = [&] {
    return static_cast<int>(best.size()) < r.top ? std::numeric_limits<double>::infinity()
                                                 : best.back().plan.stepSeconds;
  };
  parallel(valid.size(), [&](std::size_t i) {
    {
      const std::lock_guard guard(lock);
      if (r.prune && valid[i].bound > cutoff()) {
        ++bounded;
        return;
      }
    }
    const TrainConfig& c = valid[i].config;
    const double least =
        modelStateLowerBound(c, parameters) +
        activationLowerBound(c, activationElementBytes(r.system.device, c.parallel.compute),
                             facts.get(c).heldForwards);
    auto tooLarge = [&](double bytes) {
      ++outOfMemory;
      const std::lock_guard guard(lock);
      if (bytes < smallest.bytes || (bytes == smallest.bytes && valid[i].order < smallest.order))
        smallest = {bytes, valid[i].order, &c};
    };
    if (least > deviceBytes) return tooLarge(least);
    MemoryEstimate memory = deviceMemory(valid[i].config, r.system);
    if (memory.perRankBytes() > deviceBytes) return tooLarge(memory.perRankBytes());
    PlanEstimate e = estimateStep(valid[i].config, r.system, std::move(memory));
    ++simulated;
    const std::lock_guard guard(lock);
    if (r.onSimulated) r.onSimulated(e);
    best.push_back({std::move(e), valid[i].order});
    std::sort(best.begin(), best.end(), [](const Ranked& a, const Ranked& b) {
      return a.plan.stepSeconds != b.plan.stepSeconds ? a.plan.stepSeconds < b.plan.stepSeconds
                                                      : a.order < b.order;
    });
    if (static_cast<int>(best.size()) > r.top) best.pop_back();
  });
  if (best.empty()) {
    throw UserError("plan: none of the " + std::to_string(valid.size()) + " strategies for " +
                    std::to_string(r.gpus) + " GPUs fits in the " + formatBytes(deviceBytes) +
                    " of a device; the least needs at least " + formatBytes(smallest.bytes) + " (" +
                    planStrategyKeys(*smallest.config).dump() +
                    "); valid: more GPUs, a smaller model or micro-batch, or a device with more "
                    "memory");
  }
  for (Ranked& ranked : best) out.best.push_back(std::move(ranked.plan));
  out.outOfMemory = outOfMemory;
  out.simulated = simulated;
  out.bounded = bounded;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

bool wantsAutoParallel(const nlohmann::json& document) {
  const nlohmann::json::json_pointer at("/parallel/auto");
  return document.is_object() && document.contains(at) && document.at(at) == true;
}

PlanSearchRequest autoParallelRequest(const nlohmann::json& document, int mpiWorld,
                                      int hardwareThreads) {
  const nlohmann::json given = configValue(document, "parallel.world_size");
  int world = mpiWorld > 0 ? mpiWorld : std::max(1, hardwareThreads);
  if (!given.is_null()) {
    const int limit = mpiWorld > 0 ? kMaxGpus : kMaxThreadRanks;
    if (!given.is_number_integer() || given.get<std::int64_t>() < 1 ||
        given.get<std::int64_t>() > limit)
      throw UserError("config: parallel.world_size = " + given.dump() +
                      " is out of range; valid: 1.." + std::to_string(limit) +
                      (mpiWorld > 0 ? "" : " (in-process ranks)"));
    if (mpiWorld > 0 && given.get<std::int64_t>() != mpiWorld)
      throw UserError("config: parallel.world_size = " + given.dump() +
                      " differs from the MPI world of " + std::to_string(mpiWorld) +
                      " ranks; valid: " + std::to_string(mpiWorld) + " or unset");
    world = static_cast<int>(given.get<std::int64_t>());
  }
  PlanSearchRequest request;
  request.document = document;
  request.document.erase("parallel");
  request.gpus = world;
  request.top = 2;  // the choice, and the runner-up to say by how much it won
  for (const std::string& key : searchedKeys()) {
    if (key == kMicro || key == kAccumulation) continue;
    if (request.document.contains(pointerTo(key))) request.fixed.insert(key);
  }
  // The engine does not train context parallelism (checkTrainable): its runs search without.
  if (request.fixed.count(kContext) == 0) {
    setAt(request.document, kContext, 1);
    request.fixed.insert(kContext);
  }
  // The global batch the document describes, whatever split the search chooses for it.
  request.document["train_batch_size"] = globalBatchOf(request.document);
  return request;
}

nlohmann::json documentWithPlan(const PlanSearchRequest& request, const PlanEstimate& best) {
  nlohmann::json document = request.document;
  const nlohmann::ordered_json keys = planStrategyKeys(best.config);
  for (const auto& [key, value] : keys.items()) setAt(document, key, value);
  return document;
}

}  // namespace parascope
