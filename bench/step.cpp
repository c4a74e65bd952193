// parascope-cli bench step: training-step throughput of the reference GPT-mini on one rank or
// on --tp x --dp in-process ranks (--zero stage), with model FLOPs utilisation against
// this machine's single-thread sgemm peak times the ranks and, beside it, against the CPU's own
// multiply-add peak (what the BLAS kernels in use cost), both measured in the same run, and per
// rank the exposed (not overlapped) communication and peak memory by category. On one rank, where
// the step's time goes per kernel, each kernel's bytes moved per second (its spans' bytes,
// core/kernels/traffic.h) beside one thread's memory bandwidth measured in the same run. A
// benchmark prints figures; it never passes or fails.
#include "bench/step.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/session.h"
#include "bench/step_pipeline.h"
#include "core/common/error.h"
#include "core/common/scratch_directory.h"
#include "core/common/shipped_file.h"
#include "core/common/subprocess.h"
#include "core/config/config_keys.h"
#include "core/kernels/cpu_level.h"
#include "core/kernels/fma_peak.h"
#include "core/kernels/sgemm_library.h"
#include "core/kernels/sgemm_peak.h"
#include "core/kernels/stream_bandwidth.h"
#include "core/parallel/schedule.h"
#include "core/plan/memory_estimate.h"
#include "core/session/run_metrics.h"
#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/gpu_kernels.h"
#include "profiler/io/chrome_import.h"
#include "profiler/run_trace.h"
#include "profiler/tracer.h"

#if PARASCOPE_HAVE_CUDA
#include "core/cuda/device.h"
#include "core/cuda/gemm_peak.h"
#endif

namespace parascope::bench {

namespace {

// The same model trained by PyTorch (one thread; with ranks > 1 DistributedDataParallel over
// gloo, one process and thread per rank), run as a child process; its JSON line.
// On a GPU, `precision` and `mode` as torch_gpt_step.py takes them (fp32 eager elsewhere).
// `largest`: from `batch`, doubled while it fits the GPU (the JSON line's "batch" says where).
nlohmann::json runPyTorch(const BenchStepOptions& o, const GptConfig& g, int batch, int ranks = 1,
                          const std::string& device = "cpu", const std::string& precision = "fp32",
                          const std::string& mode = "eager", bool largest = false) {
  const std::string script =
      o.pytorchScript.empty() ? shippedFile("tests/tools/torch_gpt_step.py") : o.pytorchScript;
  std::vector<std::string> cmd = {o.python,      script,
                                  "--ranks",     std::to_string(ranks),
                                  "--steps",     std::to_string(o.steps),
                                  "--warmup",    std::to_string(o.warmup),
                                  "--layers",    std::to_string(g.numLayers),
                                  "--width",     std::to_string(g.hiddenSize),
                                  "--heads",     std::to_string(g.numHeads),
                                  "--context",   std::to_string(g.contextLength),
                                  "--batch",     std::to_string(batch),
                                  "--vocab",     std::to_string(g.vocabSize),
                                  "--device",    device,
                                  "--precision", precision,
                                  "--mode",      mode};
  if (largest) cmd.emplace_back("--largest");
  const ProcessOutput run = runCapturingOutput(cmd);
  const std::size_t last = run.out.rfind('{');
  if (run.exitStatus != 0 || last == std::string::npos) {
    throw UserError("--pytorch: '" + commandLine(cmd) +
                    "' failed (its own message is above; it needs Debian's python3-torch: " +
                    "apt-get install python3-torch" +
                    (device == "cuda" ? ", or a PyTorch built with CUDA" : "") + ")");
  }
  return nlohmann::json::parse(run.out.substr(last));
}

struct KernelTime {
  std::string name;
  double msPerStep;
  long callsPerStep;
  double bytesPerStep = 0;  // what its spans say they moved; 0 for spans that do not say
  double bytesPerSecond() const { return msPerStep > 0 ? bytesPerStep / (msPerStep * 1e-3) : 0; }
};

// Where a step's time goes: the traced steps after the untraced throughput measurement, leaf
// spans summed by name. The remainder of the step is listed as "other".
std::vector<KernelTime> kernelBreakdown(const profiler::TraceData& data, int steps,
                                        double* stepMs) {
  struct Sum {
    double ms = 0;
    long calls = 0;
    double bytes = 0;
  };
  std::map<std::string, Sum> sums;
  double total = 0;
  for (const trace::Event& e : data.events) {
    if (e.kind != trace::EventKind::Span) continue;
    const double ms = static_cast<double>(e.durationNs()) / 1e6;
    if (e.category == trace::Category::Step) {
      total += ms;
    } else if (e.category != trace::Category::Instruction &&  // parents of the kernels
               std::string(e.name) != "optimizer_step") {     // a parent of the adamw spans
      Sum& sum = sums[e.name];
      sum.ms += ms;
      sum.calls += 1;
      sum.bytes += static_cast<double>(e.bytes);
    }
  }
  std::vector<KernelTime> out;
  double covered = 0;
  for (const auto& [name, v] : sums) {
    out.push_back({name, v.ms / steps, v.calls / steps, v.bytes / steps});
    covered += v.ms;
  }
  std::sort(out.begin(), out.end(),
            [](const KernelTime& a, const KernelTime& b) { return a.msPerStep > b.msPerStep; });
  out.push_back({"other (untraced)", (total - covered) / steps, 0});
  *stepMs = total / steps;
  return out;
}

void runBenchStepParallel(const BenchStepOptions& o, const TrainConfig& config, double peak,
                          const kernels::FmaPeak& fma) {
  const int ranks = config.parallel.worldSize();
  const BenchRun run = runBenchSession(config, o.warmup, o.steps, 0, nullptr);
  const std::vector<RankFigures>& figures = run.ranks;
  const std::int64_t tokens = run.tokensPerStep;
  const double median = run.medianSeconds;
  const double tokensPerSecond = parascope::tokensPerSecond(static_cast<double>(tokens), median);
  const double mfu =
      modelFlopsUtilization(tokensPerSecond, config.model.gpt.flopsPerToken(), peak, ranks);
  if (o.json) {
    nlohmann::json line = {{"bench", "step"},
                           {"ranks", ranks},
                           {"precision", o.precision},
                           {"skipped_steps", figures[0].skipped},
                           {"tokens_per_step", tokens},
                           {"step_time_median_s", median},
                           {"tokens_per_s", tokensPerSecond},
                           {"sgemm_peak_gflops_per_rank", peak / 1e9},
                           {"fma_peak_gflops_per_rank", fma.flopsPerSecond / 1e9},
                           {"fma_isa", fma.isa},
                           {"cpu_level", kernels::cpuLevelName(kernels::cpuLevel())},
                           {"mfu", mfu},
                           {"mfu_of_fma_peak", mfu * peak / fma.flopsPerSecond}};
    for (const auto& [key, value] : strategySettings(config)) line[key] = value;
    std::printf("%s\n", line.dump().c_str());
  } else {
    std::printf(
        "GPT: %d layers, width %d, context %d; %d ranks (threads) = %d tensor-parallel%s x %d "
        "data-parallel, ZeRO %d, %s; global batch %d\n",
        config.model.gpt.numLayers, config.model.gpt.hiddenSize, config.model.gpt.contextLength,
        ranks, config.parallel.tensor, config.parallel.sequenceParallel ? " (sequence)" : "",
        config.parallel.data, config.parallel.zeroStage, o.precision.c_str(), config.globalBatch);
    std::printf("step time            %.2f ms median over %d steps\n", median * 1e3, o.steps);
    if (o.precision == "fp16") {
      std::printf("skipped steps        %d (fp16 gradient overflow)\n", figures[0].skipped);
    }
    std::printf("throughput           %.0f tokens/s\n", tokensPerSecond);
    std::printf("MFU                  %.1f%% of %d x single-thread sgemm peak (%.2f GFLOP/s)\n",
                100.0 * mfu, ranks, peak / 1e9);
    std::printf("                     %.1f%% of %d x single-thread FMA peak (%.2f GFLOP/s, %s)\n",
                100.0 * mfu * peak / fma.flopsPerSecond, ranks, fma.flopsPerSecond / 1e9,
                fma.isa.c_str());
    std::printf("element-wise kernels %s (chosen at run time)\n",
                kernels::cpuLevelName(kernels::cpuLevel()));
    std::printf(
        "\n  rank  exposed comm/step  share   peak MiB: param grad optim activ comm work\n");
  }
  for (int r = 0; r < ranks; ++r) {
    const RankFigures& f = figures[static_cast<std::size_t>(r)];
    double total = 0;
    for (double t : f.times) total += t;
    const double exposed = f.exposed / o.steps;
    const double share = exposedCommFraction(f.exposed, total);
    if (o.json) {
      nlohmann::json peakBytes;
      for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
        peakBytes[std::string(memoryCategoryName(static_cast<MemoryCategory>(c)))] = f.peak[c];
      }
      std::printf("%s\n", nlohmann::json{{"bench", "step_rank"},
                                         {"rank", r},
                                         {"exposed_comm_s_per_step", exposed},
                                         {"exposed_comm_share", share},
                                         {"peak_bytes", peakBytes}}
                              .dump()
                              .c_str());
    } else {
      std::printf("  %4d  %14.3f ms  %5.1f%%  ", r, exposed * 1e3, 100.0 * share);
      for (std::int64_t b : f.peak) std::printf(" %6.2f", static_cast<double>(b) / (1 << 20));
      std::printf("\n");
    }
  }
  if (!o.pytorch) return;
  const nlohmann::json torch = runPyTorch(o, config.model.gpt, config.microBatch, ranks);
  const double torchRate = torch["tokens_per_s"].get<double>();
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"bench", "step_pytorch_ddp"},
                                       {"version", torch["version"]},
                                       {"ranks", ranks},
                                       {"tokens_per_s", torchRate},
                                       {"step_time_median_s", torch["step_time_median_s"]},
                                       {"speedup", tokensPerSecond / torchRate}}
                            .dump()
                            .c_str());
  } else {
    std::printf("\nPyTorch %s DistributedDataParallel (gloo), %d processes x 1 thread:\n",
                torch["version"].get<std::string>().c_str(), ranks);
    std::printf("throughput           %.0f tokens/s (%.2f ms/step)\n", torchRate,
                torch["step_time_median_s"].get<double>() * 1e3);
    std::printf("ParaScope / PyTorch  %.2fx\n", tokensPerSecond / torchRate);
  }
}

#if PARASCOPE_HAVE_CUDA
// PyTorch at a run's precision: bf16 under autocast; fp32 for fp32 and fp16, which the script
// does not take.
std::string torchPrecisionFor(const BenchStepOptions& o) {
  return o.precision == "bf16" ? "bf16" : "fp32";
}

struct LargestBatch {
  int microBatch = 0;  // ParaScope's, by its memory estimate; 0: not measured
  double tokensPerSecond = 0;
  std::int64_t peakBytes = 0;
  nlohmann::json torch;  // PyTorch's line at its own largest, or null
};

// The largest micro-batch each side fits on the GPU. ParaScope's is its memory estimate's against
// 90% of the GPU's memory (the CUDA context, cuBLAS's workspaces and the caching allocator's
// slack hold the rest); PyTorch's is found by doubling the micro-batch until a step runs out.
LargestBatch measureLargestBatch(const TrainConfig& config, const BenchStepOptions& o,
                                 const cuda::DeviceInfo& gpu, const std::string& torchPrecision) {
  LargestBatch r;
  const double usable = 0.9 * static_cast<double>(gpu.memoryBytes);
  r.microBatch = largestMicroBatch(config, 0, config.parallel.worldSize(), usable);
  if (r.microBatch == 0)
    throw UserError("bench step --largest-batch: not one sequence fits 90% of " + gpu.name +
                    "'s memory by the estimate");
  nlohmann::json doc = config.document;
  doc["train_micro_batch_size_per_gpu"] = r.microBatch;
  doc.erase("train_batch_size");
  // Large steps: 3 measured after 1 warm-up, on both sides.
  BenchStepOptions few = o;
  few.warmup = 1;
  few.steps = 3;
  const BenchRun run = runBenchSession(parseTrainConfig(doc), few.warmup, few.steps, 0, nullptr);
  r.tokensPerSecond =
      parascope::tokensPerSecond(static_cast<double>(run.tokensPerStep), run.medianSeconds);
  for (const std::int64_t b : run.ranks[0].peak) r.peakBytes += b;
  if (o.pytorch)
    r.torch = runPyTorch(few, config.model.gpt, config.microBatch, 1, "cuda", torchPrecision,
                         "eager", true);
  return r;
}

struct GpuTracing {
  double medianSeconds = 0;  // of the traced run's measured steps
  double overhead = 0;       // its median over the untraced run's, less 1
  double gpuEventsPerStep = 0;
  double busy = 0;  // the share of the measured steps' time the GPU ran something
  // Where the GPU's time went: the traced run's kernels by name, over all its steps (CUPTI's
  // records carry no step), longest first.
  std::vector<profiler::GpuKernelStats> kernels;
  int steps = 0;
};

// The kernels bench step lists, by time; the rest are summed in one line.
constexpr std::size_t kGpuKernelsListed = 15;

// The same steps recorded as `train --trace` records a GPU run, CUPTI's activity included: what
// tracing costs a step, and how busy the GPU was in the steps measured.
GpuTracing measureGpuTracing(const TrainConfig& config, const BenchStepOptions& o,
                             double untracedMedian) {
  const ScratchDirectory scratch("", "parascope-bench-step", "bench step");
  const std::string path = scratch.path() + "/gpu-trace.json";
  GpuTracing t;
  t.medianSeconds = runBenchSession(config, o.warmup, o.steps, 0, nullptr,
                                    std::make_shared<profiler::RunTrace>(path))
                        .medianSeconds;
  t.overhead = t.medianSeconds / untracedMedian - 1;
  const profiler::TraceData trace = profiler::importChromeTrace(path);
  std::int64_t window = 0, idle = 0;
  for (const profiler::StepBreakdown& b : profiler::computeBreakdown(trace)) {
    if (!b.gpu || b.step <= o.warmup) continue;
    window += b.windowNs();
    idle += b.idleNs;
  }
  std::int64_t events = 0;
  for (const trace::Event& e : trace.events) events += trace::lane::isGpu(e.lane) ? 1 : 0;
  if (window > 0) {
    t.busy = 1.0 - static_cast<double>(idle) / static_cast<double>(window);
    t.gpuEventsPerStep = static_cast<double>(events) / (o.warmup + o.steps);
  }
  t.kernels = profiler::computeGpuKernels(trace);
  t.steps = o.warmup + o.steps;
  return t;
}

// The GPT on one GPU (`device: "cuda"`): throughput, MFU against the GPU's dense GEMM peak in the
// precision the products run in (cuBLAS: fp32 with TF32 off, bf16 or fp16 under mixed precision;
// measured in the same run), peak memory by category, what CUPTI tracing costs, and
// PyTorch training the same model on the same GPU in fp32.
void runBenchStepGpu(const BenchStepOptions& o, const TrainConfig& config) {
  const std::vector<cuda::DeviceInfo> devices = cuda::visibleDevices();
  if (devices.empty())
    throw UserError("bench step --device cuda: no CUDA device is visible (" + cuda::whyNoDevice() +
                    ")");
  const cuda::DeviceInfo& gpu = devices.front();
  const cuda::GemmPrecision peakPrecision =
      cuda::peakPrecision(cuda::productsFor(config.parallel.compute));
  const cuda::GemmRate peak = cuda::measureGemm(gpu.index, peakPrecision, 8192, 5);
  const std::string peakName(cuda::precisionName(peakPrecision));
  const BenchRun run = runBenchSession(config, o.warmup, o.steps, 0, nullptr);
  const double median = run.medianSeconds;
  const double tokensPerSecond =
      parascope::tokensPerSecond(static_cast<double>(run.tokensPerStep), median);
  const GpuTracing tracing = measureGpuTracing(config, o, median);
  const LargestBatch largest =
      o.largestBatch ? measureLargestBatch(config, o, gpu, torchPrecisionFor(o)) : LargestBatch{};
  const double flopsPerToken = config.model.gpt.flopsPerToken();
  const double mfu = modelFlopsUtilization(tokensPerSecond, flopsPerToken, peak.flopsPerSecond, 1);
  std::int64_t peakBytes = 0;  // each category's peak, added: at most what was live at once
  for (const std::int64_t b : run.ranks[0].peak) peakBytes += b;
  nlohmann::json torch;
  // PyTorch at this run's precision (bf16 under autocast; fp32 for fp32 and fp16, which the
  // script does not take), and what the bf16 goal is measured against: PyTorch 2's fused
  // attention and AdamW, eager and compiled. ParaScope's activations are f32 tensors so far, so
  // these stand beside it as the target; a PyTorch without them (1.x) leaves them out with its
  // reason.
  const std::string torchPrecision = torchPrecisionFor(o);
  std::vector<std::pair<std::string, nlohmann::json>> targets;
  if (o.pytorch) {
    torch = runPyTorch(o, config.model.gpt, config.microBatch, 1, "cuda", torchPrecision);
    for (const char* mode : {"sdpa", "compile"}) {
      try {
        targets.emplace_back(
            mode, runPyTorch(o, config.model.gpt, config.microBatch, 1, "cuda", "bf16", mode));
      } catch (const UserError& e) {
        targets.emplace_back(mode, nlohmann::json{{"error", e.what()}});
      }
    }
  }
  const GptConfig& g = config.model.gpt;
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"bench", "step_gpu"},
                                       {"device", gpu.name},
                                       {"precision", o.precision},
                                       {"tokens_per_step", run.tokensPerStep},
                                       {"step_time_median_s", median},
                                       {"tokens_per_s", tokensPerSecond},
                                       {"model_flops_per_token", flopsPerToken},
                                       {"gemm_peak_precision", peakName},
                                       {"gemm_peak_tflops", peak.flopsPerSecond / 1e12},
                                       {"mfu", mfu},
                                       {"peak_memory_bytes", peakBytes},
                                       {"traced_step_time_median_s", tracing.medianSeconds},
                                       {"tracing_overhead", tracing.overhead},
                                       {"gpu_events_per_step", tracing.gpuEventsPerStep},
                                       {"gpu_busy", tracing.busy}}
                            .dump()
                            .c_str());
    if (o.pytorch) {
      const double rate = torch["tokens_per_s"].get<double>();
      std::printf("%s\n", nlohmann::json{{"bench", "step_gpu_pytorch"},
                                         {"version", torch["version"]},
                                         {"tokens_per_s", rate},
                                         {"step_time_median_s", torch["step_time_median_s"]},
                                         {"max_memory_allocated_bytes",
                                          torch["max_memory_allocated_bytes"]},
                                         {"speedup", tokensPerSecond / rate}}
                              .dump()
                              .c_str());
      for (const auto& [mode, t] : targets) {
        nlohmann::json line = {
            {"bench", "step_gpu_pytorch_target"}, {"precision", "bf16"}, {"mode", mode}};
        if (t.contains("error")) {
          line["error"] = t["error"];
        } else {
          line["version"] = t["version"];
          line["tokens_per_s"] = t["tokens_per_s"];
          line["step_time_median_s"] = t["step_time_median_s"];
          line["max_memory_allocated_bytes"] = t["max_memory_allocated_bytes"];
        }
        std::printf("%s\n", line.dump().c_str());
      }
    }
    for (std::size_t i = 0; i < std::min(tracing.kernels.size(), kGpuKernelsListed); ++i) {
      const profiler::GpuKernelStats& k = tracing.kernels[i];
      std::printf("%s\n", nlohmann::json{{"bench", "step_gpu_kernel"},
                                         {"kernel", profiler::demangledKernelName(k.name)},
                                         {"ms_per_step", k.totalNs / 1e6 / tracing.steps},
                                         {"launches_per_step",
                                          static_cast<double>(k.launches) / tracing.steps},
                                         {"mean_us", k.meanNs() / 1e3},
                                         {"gpu_busy_share", k.busyShare()}}
                              .dump()
                              .c_str());
    }
    if (largest.microBatch > 0) {
      nlohmann::json line = {{"bench", "step_gpu_largest_batch"},
                             {"micro_batch", largest.microBatch},
                             {"tokens_per_s", largest.tokensPerSecond},
                             {"peak_memory_bytes", largest.peakBytes}};
      if (!largest.torch.is_null()) {
        line["pytorch_micro_batch"] = largest.torch["batch"];
        line["pytorch_tokens_per_s"] = largest.torch["tokens_per_s"];
        line["pytorch_max_memory_allocated_bytes"] = largest.torch["max_memory_allocated_bytes"];
      }
      std::printf("%s\n", line.dump().c_str());
    }
    return;
  }
  std::printf("GPT: %d layers, width %d, %d heads, context %d, vocab %d; micro-batch %d; %s\n",
              g.numLayers, g.hiddenSize, g.numHeads, g.contextLength, g.vocabSize,
              config.microBatch, o.precision.c_str());
  std::printf("device               %s (compute capability %d.%d)\n", gpu.name.c_str(), gpu.major,
              gpu.minor);
  std::printf("steps measured       %d (after %d warm-up)\n", o.steps, o.warmup);
  std::printf("step time            %.2f ms median\n", median * 1e3);
  std::printf("throughput           %.0f tokens/s\n", tokensPerSecond);
  std::printf("%-20s %.1f TFLOP/s (cuBLAS, dense, n = 8192%s)\n", (peakName + " GEMM peak").c_str(),
              peak.flopsPerSecond / 1e12,
              peakPrecision == cuda::GemmPrecision::F32 ? ", TF32 off" : "");
  std::printf("MFU                  %.1f%% of the %s GEMM peak\n", 100.0 * mfu, peakName.c_str());
  std::printf("peak memory          %.1f MiB (the categories' peaks added)\n",
              static_cast<double>(peakBytes) / (1 << 20));
  if (tracing.gpuEventsPerStep > 0) {
    std::printf("traced (CUPTI)       %.2f ms median, %+.1f%% step time; %.0f GPU events/step\n",
                tracing.medianSeconds * 1e3, 100.0 * tracing.overhead, tracing.gpuEventsPerStep);
    std::printf("GPU busy             %.1f%% of the traced steps (kernels, copies, memsets)\n",
                100.0 * tracing.busy);
    std::printf(
        "\nwhere the GPU's time goes (the traced run's %d steps; share of GPU busy time):\n",
        tracing.steps);
    std::printf("  %10s %9s %9s %6s  %s\n", "ms/step", "launches", "mean us", "share", "kernel");
    double restMs = 0;
    for (std::size_t i = 0; i < tracing.kernels.size(); ++i) {
      const profiler::GpuKernelStats& k = tracing.kernels[i];
      const double msPerStep = k.totalNs / 1e6 / tracing.steps;
      if (i >= kGpuKernelsListed) {
        restMs += msPerStep;
        continue;
      }
      std::printf("  %10.3f %9.1f %9.1f %5.1f%%  %s\n", msPerStep,
                  static_cast<double>(k.launches) / tracing.steps, k.meanNs() / 1e3,
                  100.0 * k.busyShare(),
                  profiler::withoutParameters(profiler::demangledKernelName(k.name)).c_str());
    }
    if (tracing.kernels.size() > kGpuKernelsListed) {
      std::printf("  %10.3f  (%zu more kernels)\n", restMs,
                  tracing.kernels.size() - kGpuKernelsListed);
    }
  } else {
    std::printf("traced (CUPTI)       no GPU activity collected (the reason is above)\n");
  }
  if (o.pytorch) {
    const double rate = torch["tokens_per_s"].get<double>();
    std::printf("\nPyTorch %s, same model, same GPU, %s:\n",
                torch["version"].get<std::string>().c_str(), torchPrecision.c_str());
    std::printf("throughput           %.0f tokens/s (%.2f ms/step)\n", rate,
                torch["step_time_median_s"].get<double>() * 1e3);
    std::printf("peak memory          %.1f MiB (max_memory_allocated)\n",
                torch["max_memory_allocated_bytes"].get<double>() / (1 << 20));
    std::printf("ParaScope / PyTorch  %.2fx\n", tokensPerSecond / rate);
    std::printf(
        "\nThe bf16 target (PyTorch, same model and GPU; ParaScope's activations are f32 tensors "
        "so far):\n");
    for (const auto& [mode, t] : targets) {
      const char* label = mode == "sdpa" ? "eager, SDPA + fused AdamW" : "torch.compile";
      if (t.contains("error")) {
        std::printf("%-26s not run: %s\n", label, t["error"].get<std::string>().c_str());
        continue;
      }
      std::printf("%-26s %.0f tokens/s, %.1f MiB; ParaScope / this %.2fx\n", label,
                  t["tokens_per_s"].get<double>(),
                  t["max_memory_allocated_bytes"].get<double>() / (1 << 20),
                  tokensPerSecond / t["tokens_per_s"].get<double>());
    }
  }
  if (largest.microBatch > 0) {
    std::printf("\nAt the largest micro-batch each side fits (3 steps after 1 warm-up):\n");
    std::printf(
        "ParaScope            micro-batch %d (its estimate, 90%% of the GPU): %.0f tokens/s, "
        "%.1f MiB\n",
        largest.microBatch, largest.tokensPerSecond,
        static_cast<double>(largest.peakBytes) / (1 << 20));
    if (!largest.torch.is_null()) {
      std::printf(
          "PyTorch              micro-batch %d (doubled until out of memory): %.0f "
          "tokens/s, %.1f MiB\n",
          largest.torch["batch"].get<int>(), largest.torch["tokens_per_s"].get<double>(),
          largest.torch["max_memory_allocated_bytes"].get<double>() / (1 << 20));
    }
  }
}
#endif

}  // namespace

void runBenchStep(const BenchStepOptions& o) {
  if (o.largestBatch && o.device != "cuda")
    throw UserError(
        "bench step --largest-batch: for --device cuda (a GPU's memory); valid here: "
        "leave it out");
  kernels::setBlasThreads(1);
  nlohmann::json doc = {{"model", {{"type", "gpt"}}},
                        {"train_micro_batch_size_per_gpu", 8},
                        {"train_iters", o.warmup + o.steps},
                        {"optimizer", {{"params", {{"lr", 3e-4}}}}}};
  doc["data_parallel_size"] = o.dp;
  doc["tensor_model_parallel_size"] = o.tp;
  doc["sequence_parallel"] = o.sequenceParallel;
  doc["zero_optimization"]["stage"] = o.zero;
  if (o.precision != "fp32") doc[o.precision]["enabled"] = true;
  if (o.pp > 1 || !o.schedule.empty() || o.recompute != "none") {
    doc["pipeline_model_parallel_size"] = o.pp;
    doc["recompute_granularity"] = o.recompute;
    const std::string schedule = o.schedule.empty() ? "1f1b" : o.schedule;
    doc["pipeline_schedule"] = schedule;
    doc["gradient_accumulation_steps"] = o.microbatches > 0 ? o.microbatches : o.pp > 1 ? 8 : 1;
    const int interleavedChunks = schedule == "interleaved" ? 2 : 1;
    doc["virtual_pipeline_model_parallel_size"] = o.vpp > 0 ? o.vpp : interleavedChunks;
  }
  doc["device"] = o.device;
  for (const auto& a : o.overrides) applyOverride(doc, a);
  const TrainConfig config = parseTrainConfig(doc);
  checkTrainable(config);
#if PARASCOPE_HAVE_CUDA
  if (config.device.kind == Device::Kind::Cuda) {
    runBenchStepGpu(o, config);
    return;
  }
#endif
  // Measured in this run (the workbench's cached peak is not used): a benchmark stands alone.
  const double peak = kernels::measureSgemmPeak();
  const kernels::FmaPeak fma = kernels::measureFmaPeak();
  const std::string sgemmKernels = kernels::sgemmKernels();
  const double stream = kernels::measureStreamBandwidth();
  if (config.pipeline.enabled) {
    runBenchStepPipeline(config, o.steps, o.warmup, o.json, peak);
    return;
  }
  if (config.parallel.worldSize() > 1) {
    runBenchStepParallel(o, config, peak, fma);
    return;
  }
  const int tracedSteps = std::max(3, o.steps / 4);
  profiler::Tracer tracer;
  const BenchRun run = runBenchSession(config, o.warmup, o.steps, tracedSteps, &tracer);
  std::vector<double> times = run.ranks[0].times;
  std::sort(times.begin(), times.end());
  const std::int64_t tokens = run.tokensPerStep;
  const double median = run.medianSeconds;
  const double tokensPerSecond = parascope::tokensPerSecond(static_cast<double>(tokens), median);
  const double flopsPerToken = config.model.gpt.flopsPerToken();
  const double achieved = modelFlopsPerSecond(tokensPerSecond, flopsPerToken);
  const double mfu = modelFlopsUtilization(tokensPerSecond, flopsPerToken, peak, 1);
  nlohmann::json torch;
  if (o.pytorch) torch = runPyTorch(o, config.model.gpt, config.microBatch);
  const double torchTokensPerSecond = o.pytorch ? torch["tokens_per_s"].get<double>() : 0.0;
  // PyTorch's products run on its BLAS, OpenBLAS for Debian's (libblas.so.3), at that library's
  // peak: its MFU against that, and against ours.
  const double torchPeak =
      o.pytorch ? kernels::measureSgemmPeak(kernels::SgemmLibrary::OpenBlas) : 0.0;
  const std::string torchKernels = kernels::sgemmKernels(kernels::SgemmLibrary::OpenBlas);
  const double torchMfu = modelFlopsUtilization(torchTokensPerSecond, flopsPerToken, torchPeak, 1);
  const double torchMfuOfOurs = modelFlopsUtilization(torchTokensPerSecond, flopsPerToken, peak, 1);
  // The most a step bound by these sgemm kernels could reach: every model FLOP at their peak.
  const double boundTokensPerSecond = peak / flopsPerToken;
  double tracedStepMs = 0;
  const std::vector<KernelTime> kernels =
      kernelBreakdown(tracer.collect(), tracedSteps, &tracedStepMs);
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"bench", "step"},
                                       {"ranks", 1},
                                       {"precision", o.precision},
                                       {"tokens_per_step", tokens},
                                       {"step_time_median_s", median},
                                       {"step_time_min_s", times.front()},
                                       {"tokens_per_s", tokensPerSecond},
                                       {"model_flops_per_token", flopsPerToken},
                                       {"achieved_gflops", achieved / 1e9},
                                       {"sgemm_peak_gflops", peak / 1e9},
                                       {"sgemm_kernels", sgemmKernels},
                                       {"fma_peak_gflops", fma.flopsPerSecond / 1e9},
                                       {"fma_isa", fma.isa},
                                       {"cpu_level", kernels::cpuLevelName(kernels::cpuLevel())},
                                       {"mfu", mfu},
                                       {"mfu_of_fma_peak", achieved / fma.flopsPerSecond},
                                       {"stream_GBps", stream / 1e9}}
                            .dump()
                            .c_str());
    if (o.pytorch) {
      std::printf("%s\n",
                  nlohmann::json{
                      {"bench", "step_pytorch"},
                      {"version", torch["version"]},
                      {"tokens_per_s", torchTokensPerSecond},
                      {"step_time_median_s", torch["step_time_median_s"]},
                      {"sgemm_kernels", torchKernels},
                      {"sgemm_peak_gflops", torchPeak / 1e9},
                      {"mfu", torchMfu},
                      {"mfu_of_parascope_sgemm_peak", torchMfuOfOurs},
                      {"mfu_of_fma_peak", modelFlopsPerSecond(torchTokensPerSecond, flopsPerToken) /
                                              fma.flopsPerSecond},
                      {"speedup", tokensPerSecond / torchTokensPerSecond},
                      {"speedup_bound_at_sgemm_peak", boundTokensPerSecond / torchTokensPerSecond}}
                      .dump()
                      .c_str());
    }
    for (const KernelTime& k : kernels) {
      nlohmann::json line{{"bench", "step_kernel"},
                          {"kernel", k.name},
                          {"ms_per_step", k.msPerStep},
                          {"calls_per_step", k.callsPerStep},
                          {"share_of_step", k.msPerStep / tracedStepMs}};
      if (k.bytesPerStep > 0) {
        line["bytes_per_step"] = k.bytesPerStep;
        line["GBps"] = k.bytesPerSecond() / 1e9;
        line["of_stream"] = k.bytesPerSecond() / stream;
      }
      std::printf("%s\n", line.dump().c_str());
    }
    return;
  }
  std::printf("GPT: %d layers, width %d, %d heads, context %d, vocab %d; micro-batch %d; %s\n",
              config.model.gpt.numLayers, config.model.gpt.hiddenSize, config.model.gpt.numHeads,
              config.model.gpt.contextLength, config.model.gpt.vocabSize, config.microBatch,
              o.precision.c_str());
  std::printf("steps measured       %d (after %d warm-up)\n", o.steps, o.warmup);
  std::printf("step time            %.2f ms median, %.2f ms best\n", median * 1e3,
              times.front() * 1e3);
  std::printf("throughput           %.0f tokens/s\n", tokensPerSecond);
  std::printf("model FLOPs/token    %.4g (6 N + 12 L T C)\n", flopsPerToken);
  std::printf("achieved             %.2f GFLOP/s\n", achieved / 1e9);
  std::printf("sgemm peak (1 thr)   %.2f GFLOP/s (%s)\n", peak / 1e9, sgemmKernels.c_str());
  std::printf("FMA peak (1 thr)     %.2f GFLOP/s (%s); the sgemm kernels reach %.1f%% of it\n",
              fma.flopsPerSecond / 1e9, fma.isa.c_str(), 100.0 * peak / fma.flopsPerSecond);
  std::printf("MFU                  %.1f%% of single-thread sgemm peak, %.1f%% of the FMA peak\n",
              100.0 * mfu, 100.0 * achieved / fma.flopsPerSecond);
  std::printf(
      "element-wise kernels %s (chosen at run time; PARASCOPE_CPU_LEVEL=baseline|avx2|avx512 "
      "lowers it)\n",
      kernels::cpuLevelName(kernels::cpuLevel()));
  if (o.pytorch) {
    std::printf("\nPyTorch %s, same model, 1 thread:\n",
                torch["version"].get<std::string>().c_str());
    std::printf("throughput           %.0f tokens/s (%.2f ms/step)\n", torchTokensPerSecond,
                torch["step_time_median_s"].get<double>() * 1e3);
    std::printf("sgemm peak (1 thr)   %.2f GFLOP/s (%s, the BLAS Debian's PyTorch calls)\n",
                torchPeak / 1e9, torchKernels.c_str());
    std::printf(
        "MFU                  %.1f%% of that sgemm peak, %.1f%% of ours, %.1f%% of the FMA peak\n",
        100.0 * torchMfu, 100.0 * torchMfuOfOurs,
        100.0 * modelFlopsPerSecond(torchTokensPerSecond, flopsPerToken) / fma.flopsPerSecond);
    std::printf("ParaScope / PyTorch  %.2fx; at most %.2fx with every FLOP at the sgemm peak\n",
                tokensPerSecond / torchTokensPerSecond,
                boundTokensPerSecond / torchTokensPerSecond);
  }
  std::printf(
      "\nwhere a step goes (traced steps, %.2f ms each); memory bandwidth (1 thread, "
      "STREAM triad) %.2f GB/s:\n",
      tracedStepMs, stream / 1e9);
  std::printf("  %-28s %10s %7s %6s %10s %10s\n", "kernel", "ms/step", "share", "calls", "GB/s",
              "of stream");
  for (const KernelTime& k : kernels) {
    std::printf("  %-28s %10.3f %6.1f%% %6ld", k.name.c_str(), k.msPerStep,
                100.0 * k.msPerStep / tracedStepMs, k.callsPerStep);
    if (k.bytesPerStep > 0) {
      std::printf(" %10.2f %9.0f%%\n", k.bytesPerSecond() / 1e9,
                  100.0 * k.bytesPerSecond() / stream);
    } else {
      std::printf(" %10s %10s\n", "-", "-");
    }
  }
}

}  // namespace parascope::bench
