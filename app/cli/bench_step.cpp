// parascope-cli bench step: its options and wiring; the benchmark itself is bench/step.cpp.
#include <memory>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "bench/step.h"
#include "core/parallel/schedule.h"

namespace parascope::cli {

void registerBenchStepCommand(CLI::App& bench) {
  auto o = std::make_shared<bench::BenchStepOptions>();
  CLI::App* cmd = bench.add_subcommand("step", "Training-step throughput and MFU of GPT-mini");
  cmd->add_option("--steps", o->steps, "Measured steps")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", o->warmup, "Unmeasured warm-up steps")->check(CLI::Range(0, 1000));
  cmd->add_flag("--pytorch", o->pytorch,
                "Also train the same model with PyTorch (Debian's python3-torch; with --dp, "
                "DistributedDataParallel over gloo) and compare");
  cmd->add_option("--python", o->python,
                  "The Python with PyTorch for --pytorch (default: python3 on the PATH)");
  cmd->add_option("--pytorch-script", o->pytorchScript,
                  "The PyTorch side of --pytorch (default: tests/tools/torch_gpt_step.py in this "
                  "executable's tree)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--device", o->device,
                  "cpu, or cuda: the GPT on the first GPU in fp32, MFU against that GPU's fp32 "
                  "GEMM peak, --pytorch on the same GPU")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_flag("--largest-batch", o->largestBatch,
                "With --device cuda: also run at the largest micro-batch that fits the GPU, "
                "ParaScope's by its memory estimate, PyTorch's (with --pytorch) by doubling");
  cmd->add_option("--dp", o->dp, "Data-parallel ranks (in-process threads)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--tp", o->tp, "Tensor-parallel ranks (in-process threads)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--sequence-parallel", o->sequenceParallel,
                "Sequence parallelism in the tensor-parallel group");
  cmd->add_option("--zero", o->zero, "ZeRO stage")->check(CLI::Range(0, 3));
  cmd->add_option("--precision", o->precision,
                  "fp32, or bf16 / fp16 mixed precision (16-bit parameters, activations and "
                  "gradients, fp32 master weights; fp16 with dynamic loss scaling)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  cmd->add_option("--pp", o->pp, "Pipeline ranks (in-process threads; x --dp in all)")
      ->check(CLI::Range(1, 256));
  std::vector<std::string> schedules;
  for (const ScheduleInfo* schedule : scheduleTable()) schedules.emplace_back(schedule->name);
  cmd->add_option("--schedule", o->schedule, "Pipeline schedule (default 1f1b with --pp > 1)")
      ->check(CLI::IsMember(schedules));
  cmd->add_option("--microbatches", o->microbatches,
                  "Micro-batches per step of a pipeline program (default 8 with --pp > 1)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--vpp", o->vpp, "Model chunks per pipeline rank (default 2 if interleaved)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--recompute", o->recompute, "Activation recompute: none, selective or full")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  cmd->add_option("overrides", o->overrides, "Config overrides as key.path=value");
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { bench::runBenchStep(*o); });
}

}  // namespace parascope::cli
