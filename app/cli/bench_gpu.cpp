// parascope-cli bench gpu: its options and wiring; the benchmark itself is bench/gpu.cpp.
#include <memory>

#include "app/cli/commands.h"
#include "bench/gpu.h"

namespace parascope::cli {

void registerBenchGpuCommand(CLI::App& bench) {
  auto o = std::make_shared<bench::BenchGpuOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "gpu", "Each CUDA device's name and dense GEMM peak (fp32, tf32, bf16, fp16) with cuBLAS");
  cmd->add_option("--size", o->n, "GEMM size n (n x n x n)")->check(CLI::Range(1, 32768));
  cmd->add_option("--reps", o->reps, "Timed calls per precision (the best is kept)")
      ->check(CLI::Range(1, 10000));
  cmd->add_flag("--pytorch", o->pytorch, "Also time PyTorch's matmul on the same device");
  cmd->add_option("--python", o->python, "The Python with PyTorch for --pytorch");
  cmd->add_option("--pytorch-script", o->pytorchScript,
                  "The PyTorch side of --pytorch (default: tests/tools/torch_gemm_peak.py in this "
                  "executable's tree)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", o->json, "One JSON object per line");
  cmd->callback([o] { bench::runBenchGpu(*o); });
}

}  // namespace parascope::cli
