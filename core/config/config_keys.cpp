// The table of config keys and its renderings. Defaults come from the engine's own structs
// (ParallelStrategy, LossScaleSpec, PipelineSpec, TrainConfig; the model kinds' keys from their
// configs) where they have one, so a default is written once.
#include "core/config/config_keys.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <stdexcept>

#include "core/config/config.h"
#include "core/config/ps_config.h"
#include "core/parallel/schedule.h"

namespace parascope {

namespace {

using nlohmann::json;

// The integers below are exact in a double, so ranges print and compare without rounding.
constexpr std::int64_t kMaxDegree = 4096;

ConfigKey object(std::string path, std::string fallbackWords, std::string help) {
  ConfigKey k;
  k.path = std::move(path);
  k.type = KeyType::Object;
  k.derived = std::move(fallbackWords);
  k.help = std::move(help);
  return k;
}

ConfigKey integer(std::string path, json fallback, std::int64_t min, std::int64_t max,
                  std::string help) {
  ConfigKey k;
  k.path = std::move(path);
  k.type = KeyType::Integer;
  k.fallback = std::move(fallback);
  k.intMin = min;
  k.intMax = max;
  k.help = std::move(help);
  return k;
}

ConfigKey number(std::string path, double fallback, double min, double max, std::string help) {
  ConfigKey k;
  k.path = std::move(path);
  k.type = KeyType::Number;
  k.fallback = fallback;
  k.min = min;
  k.max = max;
  k.help = std::move(help);
  return k;
}

ConfigKey boolean(std::string path, bool fallback, std::string help) {
  ConfigKey k;
  k.path = std::move(path);
  k.type = KeyType::Boolean;
  k.fallback = fallback;
  k.help = std::move(help);
  return k;
}

ConfigKey string(std::string path, json fallback, std::string help) {
  ConfigKey k;
  k.path = std::move(path);
  k.type = KeyType::String;
  k.fallback = std::move(fallback);
  k.help = std::move(help);
  return k;
}

ConfigKey choice(std::string path, json fallback, std::vector<std::string> choices,
                 std::string help) {
  ConfigKey k;
  k.path = std::move(path);
  k.type = KeyType::Choice;
  k.fallback = std::move(fallback);
  k.choices = std::move(choices);
  k.help = std::move(help);
  return k;
}

// Derived defaults: `fallback` stays null and the words say what decides it.
ConfigKey derived(ConfigKey k, std::string words) {
  k.fallback = nullptr;
  k.derived = std::move(words);
  return k;
}

ConfigKey strategy(ConfigKey k, json (*resolved)(const TrainConfig&)) {
  k.strategy = true;
  k.resolved = resolved;
  return k;
}

std::string precisionOf(const TrainConfig& c) {
  return c.parallel.compute == DType::F16    ? "fp16"
         : c.parallel.compute == DType::BF16 ? "bf16"
                                             : "fp32";
}

std::vector<std::string> scheduleNames() {
  std::vector<std::string> names;
  for (const ScheduleInfo* info : scheduleTable()) names.emplace_back(info->name);
  return names;
}

std::vector<std::string> kindNames() {
  std::vector<std::string> names;
  for (const ModelKind* kind : modelKinds()) names.emplace_back(kind->name());
  return names;
}

// The word2vec model and the parameter-server block (ps_config.h). word2vec is no ModelKind: it
// has no layers for the layer trainer, and trains through the parameter-server runner (core/ps).
std::vector<ConfigKey> word2vecKeys() {
  const Word2VecSpec m;
  return {
      integer("model.embedding_dim", m.dim, 1, 1024, "(word2vec) values per embedding row"),
      integer("model.window", m.window, 1, 64, "(word2vec) context words on each side"),
      integer("model.negatives", m.negatives, 1, 64,
              "(word2vec) negative samples per context word, from the unigram^0.75 table"),
      integer("model.max_vocab_size", m.vocabSize, 2, 1 << 22,
              "(word2vec) the most frequent words kept (others are dropped from the text)"),
      integer("model.min_count", m.minCount, 1, 1 << 30,
              "(word2vec) a word kept occurs at least this often"),
      number("model.sample", m.sample, 0.0, 1.0,
             "(word2vec) frequent words are kept with probability sqrt(t/f) + t/f, f the word's "
             "share of the text (word2vec's `-sample`); 0: every word kept"),
  };
}

std::vector<ConfigKey> tableKeys(const std::string& table, double lr, double initialRange) {
  const TableSpec t;
  const std::string p = "parameter_server." + table + ".";
  return {
      choice(p + "optimizer", rowRuleName(t.rule), {"sgd", "adagrad", "adam"},
             "per-row update rule (Paddle's accessors): `sgd`, `adagrad` (an accumulator per "
             "value) or `adam` (moments and bias corrections per row, so a row's first update is "
             "a first step whenever it comes)"),
      number(p + "learning_rate", lr, 0.0, 1e6, "the rule's learning rate"),
      number(p + "initial_range", initialRange, 0.0, 1e6,
             "(word2vec) values start uniform in [-r, r], drawn from (seed, table, row): the "
             "same under any number of servers. A GPT's rows start as the engine initialises "
             "its parameters for `seed`"),
      number(p + "initial_g2sum", t.initialG2sum, 0.0, 1e6,
             "(adagrad) the accumulator's starting value"),
      number(p + "beta1", t.beta1, 0.0, 0.999999, "(adam)"),
      number(p + "beta2", t.beta2, 0.0, 0.999999, "(adam)"),
      number(p + "epsilon", t.epsilon, 1e-12, 1.0,
             "(adam) above 0: a dense row without a gradient would divide 0 by 0"),
  };
}

std::vector<ConfigKey> parameterServerKeys() {
  const ParameterServerSpec ps;
  std::vector<ConfigKey> keys = {
      object("parameter_server", "sync, 1 server, 2 workers",
             "(word2vec, gpt) Paddle Fleet's parameter-server mode; see "
             "`docs/parameter_server.md`. A GPT with this block trains its token embedding as "
             "the sparse table and its other parameters as the dense one"),
      choice("parameter_server.mode", psModeName(ps.mode), {"sync", "async", "geo", "collective"},
             "`sync`: every step's pushes merged and applied before the next pulls; `async`: "
             "pushes applied as they arrive, pulls answered at once; `geo`: workers train local "
             "copies and push their change every `k_steps`; `collective`: no servers, the "
             "workers all-reduce dense gradients (the comparison)"),
      derived(integer("parameter_server.server_num", nullptr, 0, 256,
                      "server ranks: the first ranks of the world, each holding the rows whose "
                      "hash falls to it and a slice of the dense table"),
              "1; 0 in mode `collective`"),
      integer("parameter_server.worker_num", ps.workers, 1, 256,
              "worker ranks: each trains on its share of every step's batch (centre words, or "
              "one micro-batch of sequences each)"),
      integer("parameter_server.k_steps", ps.kSteps, 1, 1 << 20,
              "(geo) local steps between pushes"),
      choice("parameter_server.worker_failure", "stop", {"stop", "continue"},
             "what a failing worker does to the run: `stop` ends every rank with its reason; "
             "`continue` (mode `async`, not worker 0, which reports) reports it and trains on "
             "with the others"),
      object("parameter_server.sparse_table", "adam",
             "word2vec: the input vectors, one row per word, then the hashed word pairs; gpt: "
             "the token embedding `wte`, one row per token"),
      derived(integer("parameter_server.sparse_table.rows", nullptr, 3, std::int64_t{1} << 32,
                      "(word2vec) rows in all: `model.max_vocab_size` word rows, the rest hashed "
                      "(previous word, word) pairs; rows are created when first pulled"),
              "`model.max_vocab_size` + 2^22"),
  };
  for (ConfigKey& k : tableKeys("sparse_table", ps.sparse.learningRate, 0.01)) {
    keys.push_back(std::move(k));
  }
  keys.push_back(object("parameter_server.dense_table", "adam",
                        "word2vec: the output vectors (`model.max_vocab_size` x "
                        "`model.embedding_dim`); gpt: every parameter but `wte`, end to end in "
                        "rows of `model.hidden_size`; sliced over the servers"));
  for (ConfigKey& k : tableKeys("dense_table", ps.dense.learningRate, 0.0)) {
    keys.push_back(std::move(k));
  }
  return keys;
}

std::vector<ConfigKey> buildKeys() {
  const ParallelStrategy parallel;
  const LossScaleSpec loss;
  const PipelineSpec pipeline;
  const TrainConfig train;
  std::vector<ConfigKey> keys = {
      object("model", "GPT-mini", "the model; see `model`"),
      object("data", "fortunes text", "what it trains on; see `data`"),
      derived(integer("train_batch_size", nullptr, 1, 1 << 24,
                      "samples per optimizer step (the global batch)"),
              "micro-batch x accumulation x data-parallel"),
      strategy(integer("train_micro_batch_size_per_gpu", train.microBatch, 1, 1 << 20,
                       "samples per forward/backward pass on one rank"),
               [](const TrainConfig& c) { return json(c.microBatch); }),
      strategy(integer("gradient_accumulation_steps", train.gradientAccumulation, 1, 1 << 20,
                       "micro-batches per optimizer step; a pipeline's micro-batches (m)"),
               [](const TrainConfig& c) { return json(c.gradientAccumulation); }),
      integer("train_iters", train.trainIters, 1, 1 << 30, "optimizer steps"),
      object("optimizer", "AdamW", "see `optimizer`"),
      object("scheduler", "constant", "the learning-rate schedule; see `scheduler`"),
      number("gradient_clipping", train.gradientClipping, 0.0, 1e6,
             "max global gradient L2 norm (as `clip_grad_norm_`); 0: off"),
      integer("eval_interval", train.evalInterval, 0, 1 << 30,
              "evaluate every N steps (and after the last); 0: only at the end"),
      integer("eval_iters", train.evalIters, 0, 1 << 20,
              "validation micro-batches per evaluation (text); images always use the whole "
              "test set"),
      integer("log_interval", train.logInterval, 1, 1 << 30,
              "print a plain progress line every N steps"),
      integer("seed", train.seed, 0, INT64_MAX,
              "parameters are initialised from (seed, parameter name); batches from (seed, "
              "sample number)"),
      integer("memory_limit_bytes", train.memoryLimitBytes, 0, std::int64_t{1} << 50,
              "per rank: the most bytes its tracked memory (parameters, gradients, optimizer "
              "state, activations, buffers, workspace; not the data set) may hold. A run whose "
              "estimate exceeds it is refused before it starts, naming the offload that would "
              "fit (`docs/offload.md`); an allocation past it fails the run. 0: no limit"),
      choice("device", "cpu", {"cpu", "cuda"},
             "where the ranks compute: `cuda` trains on the first GPU, so far the GPT on one "
             "rank in fp32 (`docs/gpu.md`), in a build with the CUDA toolkit"),
      string("save_weights", train.saveWeights,
             "write the trained weights to this safetensors file"),
      string("init_weights", train.initWeights,
             "start from the full weights in this safetensors file (as `save_weights` or "
             "`checkpoint export` write them) instead of the seeded initialisation; AdamW's "
             "moments start at zero and the run at step 0. A checkpoint given with `--load` "
             "takes precedence"),
      strategy(derived(integer("data_parallel_size", nullptr, 1, kMaxDegree,
                               "data-parallel replicas (Megatron's name); the threads backend "
                               "runs at most 256 ranks in all"),
                       "1 (threads); world / (tensor x context x pipeline) under mpirun"),
               [](const TrainConfig& c) { return json(c.parallel.data); }),
      strategy(integer("tensor_model_parallel_size", parallel.tensor, 1, kMaxDegree,
                       "tensor-parallel degree (GPT only): heads, MLP width and vocabulary split "
                       "Megatron-style, see `docs/tensor_parallel.md`"),
               [](const TrainConfig& c) { return json(c.parallel.tensor); }),
      strategy(integer("context_parallel_size", parallel.context, 1, kMaxDegree,
                       "context-parallel degree (GPT only): each sequence's tokens split over "
                       "this many ranks, keys and values exchanged in attention (Megatron's "
                       "`--context-parallel-size`). Planned, not trained by this engine"),
               [](const TrainConfig& c) { return json(c.parallel.context); }),
      strategy(boolean("sequence_parallel", parallel.sequenceParallel,
                       "with `tensor_model_parallel_size` > 1: layernorms and residuals work on "
                       "1/t of the token rows (Megatron's `--sequence-parallel`)"),
               [](const TrainConfig& c) { return json(c.parallel.sequenceParallel); }),
      strategy(integer("pipeline_model_parallel_size", parallel.pipeline, 1, kMaxDegree,
                       "pipeline-parallel degree (GPT only); see "
                       "[Pipeline parallelism](#pipeline-parallelism)"),
               [](const TrainConfig& c) { return json(c.parallel.pipeline); }),
      strategy(choice("pipeline_schedule", pipeline.schedule, scheduleNames(),
                      "the pipeline schedule (`docs/schedules.md`); its size rules (e.g. "
                      "interleaved: m a multiple of p, v >= 2) are checked and their messages "
                      "name these keys"),
               [](const TrainConfig& c) { return json(c.pipeline.schedule); }),
      strategy(integer("virtual_pipeline_model_parallel_size", pipeline.chunks, 1, kMaxDegree,
                       "model chunks per pipeline rank (v); above 1 needs `interleaved`"),
               [](const TrainConfig& c) { return json(c.pipeline.chunks); }),
      [] {
        ConfigKey k = derived(integer("pipeline_model_parallel_layout", nullptr, 1, 1 << 20,
                                      "layers per virtual stage: Megatron's string "
                                      "(`\"Ett|tt|tL\"`: E embedding, t block, L head, `|` "
                                      "between stages, `t*3` repeats) or one layer count per "
                                      "stage (`[3, 3]`, counting the embedding and head as "
                                      "layers). Balanced: blocks split evenly (`num_layers` a "
                                      "multiple of p·v), embedding first, head last"),
                              "balanced");
        k.type = KeyType::Layout;
        k.count = kMaxDegree;
        return k;
      }(),
      strategy(choice("recompute_granularity", "none", {"none", "selective", "full"},
                      "activation recompute: selective recomputes each block's attention core "
                      "in backward, full keeps only each layer's input"),
               [](const TrainConfig& c) { return json(recomputeName(c.pipeline.recompute)); }),
      choice("backend", "threads", {"threads", "mpi"},
             "ranks as in-process threads, or Open MPI processes started by `mpirun` (CLI: "
             "`--backend`)"),
      object("parallel", "not automatic", "let the planner choose the strategy; see `parallel`"),
      object("zero_optimization", "stage 0", "DeepSpeed's ZeRO block; see `zero_optimization`"),
      object("aio", "as below",
             "DeepSpeed's aio block: how swapped state reaches the disk; see `aio`"),
      object("fp16", "disabled", "DeepSpeed's fp16 block; see `fp16` and `bf16`"),
      object("bf16", "disabled", "DeepSpeed's bf16 block; see `fp16` and `bf16`"),
      strategy(derived(choice("communication_data_type", nullptr, {"fp32", "fp16", "bf16"},
                              "the type gradients travel in between data-parallel ranks, "
                              "independent of the compute type (summed in f32 by the "
                              "communication layer, rounded once), as in DeepSpeed"),
                       "the compute type"),
               [](const TrainConfig& c) {
                 return json(c.parallel.gradComm == DType::F16    ? "fp16"
                             : c.parallel.gradComm == DType::BF16 ? "bf16"
                                                                  : "fp32");
               }),

      boolean("parallel.auto", false,
              "choose the strategy before the run: `parascope-cli plan`'s best for the world "
              "size on this machine (`train --system` names another description). Strategy keys "
              "the config sets are kept, but for the micro-batch size and accumulation steps, "
              "which the search chooses for the config's global batch"),
      derived(integer("parallel.world_size", nullptr, 1, kMaxDegree,
                      "ranks `parallel.auto` plans for: the MPI world under mpirun, where it "
                      "must equal it"),
              "the MPI world under mpirun, else this machine's hardware threads"),

      strategy(integer("zero_optimization.stage", parallel.zeroStage, 0, 3,
                       "0: replicated optimizer; 1: AdamW moments sharded over the "
                       "data-parallel ranks; 2: gradients sharded too (reduce-scatter); 3: "
                       "parameters sharded too (gathered around each layer)"),
               [](const TrainConfig& c) { return json(c.parallel.zeroStage); }),
      strategy(integer("zero_optimization.reduce_bucket_size", parallel.bucketElements, 1,
                       std::int64_t{1} << 40,
                       "gradient bucket capacity in elements (DeepSpeed counts elements); the "
                       "default is 25 MiB of f32, as PyTorch DDP's `bucket_cap_mb`. From stage "
                       "2 on a bucket also ends with each layer's parameters"),
               [](const TrainConfig& c) { return json(c.parallel.bucketElements); }),
      strategy(integer("zero_optimization.stage3_prefetch_bucket_size", parallel.prefetchElements,
                       0, std::int64_t{1} << 40,
                       "ZeRO-3: parameters in elements that may be gathered ahead of the layer "
                       "needing them (the next layer's, while one runs); 0: none, each layer "
                       "gathers its own when it starts"),
               [](const TrainConfig& c) { return json(c.parallel.prefetchElements); }),
      strategy(integer("zero_optimization.stage3_max_live_parameters", parallel.maxLiveElements, 1,
                       std::int64_t{1} << 40,
                       "ZeRO-3: gathered parameters in elements beyond which nothing is "
                       "prefetched or kept gathered for later; a running layer's own are "
                       "always gathered"),
               [](const TrainConfig& c) { return json(c.parallel.maxLiveElements); }),
      strategy(boolean("zero_optimization.overlap_comm", parallel.overlapComm,
                       "start a bucket's reduction as soon as backward has filled it; false: "
                       "reduce all buckets after backward"),
               [](const TrainConfig& c) { return json(c.parallel.overlapComm); }),
      object("zero_optimization.offload_optimizer", "device none",
             "ZeRO-Offload and ZeRO-Infinity of the optimizer state (`docs/offload.md`)"),
      choice("zero_optimization.offload_optimizer.device",
             std::string(offloadDeviceName(parallel.offloadOptimizer.device)),
             {"none", "cpu", "nvme"},
             "where this rank's ZeRO shard of AdamW's moments and (mixed precision) f32 master "
             "lives: none; cpu, host memory (from a GPU ZeRO-Offload: the CPU's AdamW updates it, "
             "the gradients and parameters streamed by bucket; a CPU run's ranks keep it there "
             "already); nvme, files under `nvme_path`, streamed through memory in sub-groups at "
             "each step. "
             "Needs `stage` 1 or more"),
      derived(string("zero_optimization.offload_optimizer.nvme_path", nullptr,
                     "(nvme) an existing, writable directory on a filesystem with direct I/O "
                     "(O_DIRECT), ideally a local NVMe disk; each rank's swap file is created "
                     "there and removed when the run ends, or by the system if it dies"),
              "none; needed with device nvme"),
      integer("zero_optimization.offload_optimizer.buffer_count",
              parallel.offloadOptimizer.bufferCount, 1, 1024,
              "(nvme) sub-groups in memory at once: one is updated while the others are read "
              "ahead or written back; 1: no overlap"),
      boolean("zero_optimization.offload_optimizer.pin_memory", parallel.offloadOptimizer.pinMemory,
              "(nvme) lock the I/O buffers in memory (mlock; `ulimit -l` bounds it)"),
      object("zero_optimization.offload_param", "device none",
             "ZeRO-Infinity's parameter offload (ZeRO-3)"),
      choice("zero_optimization.offload_param.device",
             std::string(offloadDeviceName(parallel.offloadParam.device)), {"none", "cpu", "nvme"},
             "where ZeRO-3's parameter shard lives: none; cpu, host memory, where this "
             "engine's ranks already keep it; nvme, files under `nvme_path`, each layer's part "
             "read before its gather and the whole shard swept through memory at the update"),
      derived(string("zero_optimization.offload_param.nvme_path", nullptr,
                     "(nvme) the directory of the parameter swap files, as "
                     "offload_optimizer.nvme_path (it may be the same)"),
              "none; needed with device nvme"),
      integer("zero_optimization.offload_param.buffer_count", 5, 1, 1024,
              "(nvme) bucket parts in memory at once: those being read ahead of their gathers, "
              "and at the update one updated while the next are read and the last written"),
      integer("zero_optimization.offload_param.buffer_size", 100'000'000, 1, std::int64_t{1} << 40,
              "(nvme) elements per parameter buffer: at least a rank's part of ZeRO-3's largest "
              "bucket (a layer's parameters over the data-parallel ranks)"),
      integer("zero_optimization.offload_param.max_in_cpu", 1'000'000'000, 0, std::int64_t{1} << 40,
              "(nvme) read for DeepSpeed's configs; this engine keeps only the `buffer_count` "
              "buffers in memory"),
      boolean("zero_optimization.offload_param.pin_memory", false,
              "(nvme) lock the parameter buffers in memory (mlock)"),
      integer("zero_optimization.sub_group_size", parallel.subGroupElements, 1,
              std::int64_t{1} << 40,
              "elements of the optimizer shard updated as one sub-group: with offload to nvme, "
              "the unit read, updated and written back (`buffer_count` of them in memory)"),
      integer("aio.block_size", parallel.aio.blockSize, 4096, std::int64_t{1} << 30,
              "bytes per request handed to the kernel, a multiple of 4096"),
      integer("aio.queue_depth", parallel.aio.queueDepth, 1, 1024,
              "requests in flight at most per submission queue"),
      integer("aio.thread_count", parallel.aio.threadCount, 1, 64,
              "submission queues per rank (kernel AIO contexts), each of `queue_depth` requests; "
              "a request's blocks are spread over them, DeepSpeed's intra-request parallelism "
              "(its I/O threads; here the rank's thread submits to all, which direct I/O never "
              "blocks)"),
      boolean("aio.single_submit", parallel.aio.singleSubmit,
              "submit each request on its own rather than a batch per call"),
      boolean("aio.overlap_events", parallel.aio.overlapEvents,
              "submit new requests as completions free queue slots; false: a batch of "
              "`queue_depth` at a time, each waited for whole"),

      strategy(boolean("fp16.enabled", false,
                       "fp16 mixed precision: fp16 parameters, activations and gradients, fp32 "
                       "master weights and Adam moments (`docs/data_parallel.md`)"),
               [](const TrainConfig& c) { return json(precisionOf(c) == "fp16"); }),
      number("fp16.loss_scale", loss.staticScale, 0.0, 1e30, "0: dynamic; > 0: a fixed scale"),
      integer("fp16.initial_scale_power", loss.initialScalePower, 0, 64,
              "the dynamic scale starts at 2^this"),
      integer("fp16.loss_scale_window", loss.lossScaleWindow, 1, 1 << 30,
              "clean steps after which the dynamic scale doubles"),
      integer("fp16.hysteresis", loss.hysteresis, 1, 1 << 20,
              "an overflow first uses up one unit; with none left the scale halves"),
      boolean("fp16.consecutive_hysteresis", loss.consecutiveHysteresis,
              "false: the hysteresis is restored only when the scale grows; true: after every "
              "clean step"),
      number("fp16.min_loss_scale", loss.minLossScale, 0.0, 1e30,
             "> 0 and at most 2^`initial_scale_power`; an overflow at the minimum ends the run"),
      strategy(boolean("bf16.enabled", false,
                       "bf16 mixed precision (as fp16, without loss scaling); at most one of "
                       "`fp16.enabled` and `bf16.enabled`"),
               [](const TrainConfig& c) { return json(precisionOf(c) == "bf16"); }),

      choice("data.type", "text", {"text", "idx"}, "byte-level text, or IDX images + labels"),
      derived(string("data.path", nullptr,
                     "a text file or directory tree; for idx a directory with "
                     "`train-images-idx3-ubyte.gz`, `train-labels-idx1-ubyte.gz`, "
                     "`t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz`"),
              "`/usr/share/games/fortunes` (text), `/usr/share/datasets/fashion-mnist` (idx)"),
      number("data.validation_fraction", 0.1, 0.0, 0.5,
             "(text) share of 16 KiB blocks held out for validation"),

      choice("optimizer.type", "AdamW", {"AdamW"},
             "weight decay is decoupled and applies to matrices and embeddings, not to biases "
             "and LayerNorm parameters"),
      object("optimizer.params", "as below", "AdamW's hyperparameters"),
      number("optimizer.params.lr", 1e-3, 0.0, 10.0, "peak learning rate"),
      [] {
        ConfigKey k = number("optimizer.params.betas", 0.0, 0.0, 0.999999, "beta1, beta2");
        k.type = KeyType::Numbers;
        k.fallback = json::array({0.9, 0.999});
        k.count = 2;
        return k;
      }(),
      number("optimizer.params.eps", 1e-8, 0.0, 1.0, "added to the second moment's root"),
      number("optimizer.params.weight_decay", 0.01, 0.0, 10.0, "decoupled weight decay"),

      choice("scheduler.type", "constant", {"constant", "WarmupLR", "WarmupCosineLR"},
             "constant: lr; WarmupLR: lr (s+1)/warmup during warm-up, then lr; WarmupCosineLR: "
             "linear warm-up, then cosine from lr down to `cos_min_ratio` x lr at "
             "`total_num_steps` (s: the 0-based step)"),
      object("scheduler.params", "none", "the schedule's parameters"),
      integer("scheduler.params.warmup_num_steps", 0, 0, 1 << 30,
              "(WarmupLR, WarmupCosineLR) warm-up steps"),
      derived(integer("scheduler.params.total_num_steps", nullptr, 1, 1 << 30,
                      "(WarmupCosineLR) the step the cosine reaches its floor"),
              "`train_iters`"),
      number("scheduler.params.cos_min_ratio", 0.0, 0.0, 1.0,
             "(WarmupCosineLR) the floor as a fraction of lr"),
  };
  // model.type, then each kind's own keys, after the top-level blocks.
  const auto data = std::find_if(keys.begin(), keys.end(),
                                 [](const ConfigKey& k) { return k.path == "data.type"; });
  std::vector<std::string> types = kindNames();
  types.emplace_back("word2vec");
  std::vector<ConfigKey> model = {choice("model.type", "gpt", types,
                                         "a GPT trains on `data.type` `\"text\"`, an MLP on "
                                         "`\"idx\"`, word2vec (skip-gram, negative sampling) "
                                         "on `\"text\"` words with `parameter_server`")};
  for (const ModelKind* kind : modelKinds())
    for (ConfigKey& k : kind->keys()) model.push_back(std::move(k));
  for (ConfigKey& k : word2vecKeys()) model.push_back(std::move(k));
  keys.insert(data, model.begin(), model.end());
  for (ConfigKey& k : parameterServerKeys()) keys.push_back(std::move(k));
  return keys;
}

std::string formatInteger(std::int64_t v) {
  if (v == INT64_MAX) return "2^63-1";
  if (v > (1 << 16) && (v & (v - 1)) == 0) {
    int bits = 0;
    while ((std::int64_t{1} << bits) != v) ++bits;
    return "2^" + std::to_string(bits);
  }
  return std::to_string(v);
}

// %g without the exponent's "+" and leading zeros: 1e6, 1e-8, 0.5.
std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  std::string s = buf;
  const std::size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string exponent = s.substr(e + 1);
  const bool negative = exponent[0] == '-';
  exponent.erase(0, 1);
  exponent.erase(0, exponent.find_first_not_of('0'));
  return s.substr(0, e + 1) + (negative ? "-" : "") + exponent;
}

std::string code(const json& v) {
  std::string text(1, '`');
  text += v.dump();
  text += '`';
  return text;
}

}  // namespace

std::string ConfigKey::section() const {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

std::string ConfigKey::name() const {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

const std::vector<ConfigKey>& configKeys() {
  static const std::vector<ConfigKey> keys = buildKeys();
  return keys;
}

const ConfigKey& configKey(std::string_view path) {
  for (const ConfigKey& k : configKeys())
    if (k.path == path) return k;
  throw std::logic_error("config key '" + std::string(path) + "' is not in the key table");
}

bool isStrategyKey(std::string_view path) {
  for (const ConfigKey& k : configKeys())
    if (k.path == path) return k.strategy;
  return false;
}

json configValue(const json& document, std::string_view path) {
  const ConfigKey& key = configKey(path);
  const json* at = &document;
  std::size_t begin = 0;
  while (at->is_object()) {
    const std::size_t dot = path.find('.', begin);
    const std::string part(path.substr(begin, dot == std::string_view::npos ? dot : dot - begin));
    const auto it = at->find(part);
    if (it == at->end()) break;
    if (dot == std::string_view::npos) return *it;
    at = &*it;
    begin = dot + 1;
  }
  return key.fallback;
}

std::vector<std::pair<std::string, json>> strategySettings(const TrainConfig& config) {
  std::vector<std::pair<std::string, json>> settings;
  for (const ConfigKey& k : configKeys())
    if (k.strategy) settings.emplace_back(k.path, k.resolved(config));
  return settings;
}

std::string typeText(const ConfigKey& k) {
  const std::string ints = formatInteger(k.intMin) + ".." + formatInteger(k.intMax);
  const std::string numbers = formatNumber(k.min) + ".." + formatNumber(k.max);
  switch (k.type) {
    case KeyType::Object: return "object";
    case KeyType::Integer: return "int " + ints;
    case KeyType::Number: return "number " + numbers;
    case KeyType::Boolean: return "bool";
    case KeyType::String: return "string";
    case KeyType::Choice: {
      std::string text;
      for (const std::string& c : k.choices) text += (text.empty() ? "" : ", ") + code(json(c));
      return text;
    }
    case KeyType::Integers: return "array of up to " + std::to_string(k.count) + " ints " + ints;
    case KeyType::Numbers: return "array of " + std::to_string(k.count) + " numbers " + numbers;
    case KeyType::Layout: return "string, or array of ints " + ints;
  }
  return "";
}

std::string defaultText(const ConfigKey& k) {
  if (k.fallback.is_null()) return k.derived;
  if (k.type == KeyType::Number) return formatNumber(k.fallback.get<double>());
  if (k.type == KeyType::Integer) return formatInteger(k.fallback.get<std::int64_t>());
  return code(k.fallback);
}

std::vector<std::string> configSections() {
  std::vector<std::string> sections;
  for (const ConfigKey& k : configKeys()) {
    const std::string s = k.section();
    if (std::find(sections.begin(), sections.end(), s) == sections.end()) sections.push_back(s);
  }
  return sections;
}

std::string markdownTable(std::string_view section) {
  std::string table = "| key | type, range | default | meaning |\n| --- | --- | --- | --- |\n";
  for (const ConfigKey& k : configKeys()) {
    if (k.section() != section) continue;
    std::string help = k.help;
    for (std::size_t i = 0; (i = help.find('|', i)) != std::string::npos; i += 2)
      help.replace(i, 1, "\\|");
    table +=
        "| `" + k.name() + "` | " + typeText(k) + " | " + defaultText(k) + " | " + help + " |\n";
  }
  return table;
}

}  // namespace parascope
