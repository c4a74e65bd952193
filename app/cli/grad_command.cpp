// parascope-cli grad: loss and gradients of one batch for given weights, written as
// safetensors, so results can be compared tensor by tensor with another framework.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/config/config.h"
#include "core/io/safetensors.h"
#include "core/kernels/sgemm_library.h"
#include "core/model/gpt.h"
#include "core/plan/memory_estimate.h"
#include "core/train/trainer.h"

#if PARASCOPE_HAVE_CUDA
#include "core/cuda/device.h"
#include "core/cuda/device_memory.h"
#endif

namespace parascope::cli {

namespace {

struct GradOptions {
  std::string config, weights, tokens, out;
  std::string device;  // empty: the config's
  bool json = false;
};

// A GPU's memory for the model, after checking the device is there; null on the CPU.
std::unique_ptr<Allocator> deviceAllocator(const TrainConfig& config) {
  if (config.device.kind == Device::Kind::Cpu) return nullptr;
#if PARASCOPE_HAVE_CUDA
  const std::vector<cuda::DeviceInfo> devices = cuda::visibleDevices();
  if (devices.size() <= static_cast<std::size_t>(config.device.index))
    throw UserError("grad --device cuda: no CUDA device is visible (" + cuda::whyNoDevice() + ")");
  checkMemory(
      estimateMemory(config, 0, 1),
      static_cast<double>(devices[static_cast<std::size_t>(config.device.index)].memoryBytes));
  return std::make_unique<Allocator>(cuda::deviceMemory(config.device.index));
#else
  return nullptr;  // checkTrainable refused the device already
#endif
}

// T.bin: int32 little-endian token ids, B x (T + 1) with B the micro-batch and T the context.
Batch readTokens(const std::string& path, int B, int T, int vocab) {
  const std::int64_t expected = static_cast<std::int64_t>(B) * (T + 1) * 4;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw UserError(path + ": cannot read token file (" + ec.message() + ")");
  if (static_cast<std::int64_t>(size) != expected) {
    throw UserError(path + ": " + std::to_string(size) + " bytes, expected " +
                    std::to_string(expected) + " = " + std::to_string(B) +
                    " (train_micro_batch_size_per_gpu) x " + std::to_string(T + 1) +
                    " (context_length + 1) int32 token ids");
  }
  std::vector<std::int32_t> ids(static_cast<std::size_t>(B) * (T + 1));
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(ids.data()), expected);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      throw UserError(path + ": token " + std::to_string(ids[i]) + " at index " +
                      std::to_string(i) + " is outside [0, " + std::to_string(vocab) + ")");
    }
  }
  Batch b;
  b.inputs = Tensor::empty({B, T}, DType::I32, MemoryCategory::Workspace);
  b.targets = Tensor::empty({B, T}, DType::I32, MemoryCategory::Workspace);
  for (int r = 0; r < B; ++r) {
    for (int t = 0; t < T; ++t) {
      b.inputs.data<std::int32_t>()[r * T + t] = ids[static_cast<std::size_t>(r * (T + 1) + t)];
      b.targets.data<std::int32_t>()[r * T + t] =
          ids[static_cast<std::size_t>(r * (T + 1) + t + 1)];
    }
  }
  b.lossWeight = 1.0f / static_cast<float>(B * T);
  return b;
}

void runGrad(const GradOptions& o) {
  // Before any work, not after the gradients are computed; never over what it reads.
  checkOutputPath(o.out, "--out",
                  {{"--config", o.config}, {"--weights", o.weights}, {"--tokens", o.tokens}});
  nlohmann::json doc = readJsonFile(o.config);
  if (!o.device.empty()) doc["device"] = o.device;
  const TrainConfig config = parseTrainConfig(doc);
  if (config.model.kind != &gptModelKind()) {
    throw UserError("grad: model.type must be \"gpt\" (token batches); got \"" +
                    std::string(config.model.kind->name()) + "\"");
  }
  // One rank, no data set: the model, its gradients and one micro-batch's activations.
  checkTrainable(config);
  const std::unique_ptr<Allocator> device = deviceAllocator(config);
  if (!device) checkMemory(estimateMemory(config, 0, 1), availableMemoryBytes());
  kernels::setBlasThreads(1);
  const GptConfig& g = config.model.gpt;
  Model model(device ? *device : defaultAllocator());
  if (device) model.setOps(kernelsFor(config.device, config.parallel.compute));
  buildGpt(model, g);
  loadWeights(model, o.weights);
  Batch batch = readTokens(o.tokens, config.microBatch, g.contextLength, g.vocabSize);
  if (device) batch = uploadBatch(batch, g, *device);
  const MicroBatchResult r = model.forwardBackward(batch);
  model.ops().synchronize();
  const auto loss = static_cast<float>(r.lossSum / static_cast<double>(r.targets));
  Tensor lossTensor = Tensor::empty({}, DType::F32, MemoryCategory::Workspace);
  *lossTensor.data<float>() = loss;
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("loss", lossTensor);
  for (const Parameter& p : model.parameters()) out.emplace_back(p.name, p.grad.onHost());
  writeSafetensors(o.out, out, {{"format", "pt"}, {"content", "gradients"}});
  if (o.json) {
    std::printf("%s\n",
                nlohmann::json{
                    {"event", "grad"}, {"loss_nats", loss}, {"tensors", out.size()}, {"out", o.out}}
                    .dump()
                    .c_str());
  } else {
    std::printf("loss %.6f nats; %zu gradients written to %s\n", static_cast<double>(loss),
                out.size() - 1, o.out.c_str());
  }
}

}  // namespace

void registerGradCommand(CLI::App& app) {
  auto o = std::make_shared<GradOptions>();
  CLI::App* cmd = app.add_subcommand(
      "grad", "Loss and every parameter's gradient for one batch, written as safetensors");
  cmd->add_option("--config", o->config, "Config file (JSON); model and batch size")->required();
  cmd->add_option("--weights", o->weights, "Weights (safetensors)")->required();
  cmd->add_option("--tokens", o->tokens, "int32 token ids, B x (T+1)")->required();
  cmd->add_option("--out", o->out, "Output gradients (safetensors)")->required();
  cmd->add_option("--device", o->device,
                  "Where to compute: cpu or cuda (the first GPU); default: the config's device");
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { runGrad(*o); });
}

}  // namespace parascope::cli
