#!/usr/bin/env bash
# The device checks, in one go on a GPU machine: builds without the GUI (the engine, profiler,
# CLI and every suite that needs only QtCore and QtTest, as on a cluster's GPU node), runs the
# `gpu` suite and the GPU benchmarks, and writes each step's log and a summary to OUTDIR.
#   scripts/gpu-check.sh OUTDIR
# Each step runs whatever the previous ones gave; the exit status is 1 when any step failed.
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
summary="$out/summary.txt"
: >"$summary"
failed=0

# step NAME SECONDS COMMAND...: runs COMMAND with its output in OUTDIR/NAME.log, stopped after
# SECONDS; one summary line. The limits keep one hung step from taking the others' time: the
# whole check has to fit the few minutes a GPU machine is lent for.
step() {
  local name=$1 limit=$2 start status code
  shift 2
  start=$(date +%s)
  timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1
  code=$?
  case $code in
  0) status=ok ;;
  124 | 137) status="FAILED (stopped after its $limit s)" ;;
  *) status="FAILED (exit $code)" ;;
  esac
  ((code == 0)) || failed=1
  echo "$name: $status in $(($(date +%s) - start)) s" | tee -a "$summary"
}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi: not available" >>"$summary"
# zlib from the image (its header from the carried packages where the image has none).
zlib_include=/usr/include
[[ -f $zlib_include/zlib.h ]] || zlib_include=/opt/deps/usr/include
step configure 60 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPARASCOPE_GUI=OFF \
  -DPARASCOPE_BUILD_TESTS=ON -DZLIB_INCLUDE_DIR="$zlib_include" \
  -DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1
# The default session trains on Debian's fortunes corpus; where the image has none, the carried
# package's copy (bootstrap.sh unpacks it under /opt/deps) stands at the path the configs name.
corpus=/usr/share/games/fortunes
if [[ ! -e $corpus && -d /opt/deps$corpus ]]; then
  mkdir -p "$(dirname "$corpus")" && ln -s "/opt/deps$corpus" "$corpus"
fi
# Ninja keeps going past a failed file (-k 0): one run on a device shows every file this
# toolchain rejects, and the GPU checks still run with whatever did build.
# What the GPU checks need first, so that a failure elsewhere cannot keep them from running.
mapfile -t gpu_targets < <(ctest --test-dir build-gpu -N -L gpu |
  awk '/Test +#/ {sub(/:.*/, "", $3); print $3}' | sort -u)
step build-gpu 300 cmake --build build-gpu --parallel "$(nproc)" -- -k 0 parascope-cli "${gpu_targets[@]}"
# One suite at a time: they read the whole device's free memory and time its work.
step gpu-suite 180 ctest --test-dir build-gpu -L gpu --output-on-failure -V
# The GPT on the GPU beside PyTorch on the same GPU, fp32: GPT-2 small's shape (12 layers, width
# 768, 12 heads, context 1024, vocabulary 50304), micro-batch 16.
step bench-step-gpu 240 build-gpu/app/parascope-cli bench step --device cuda --pytorch --json \
  --steps 10 model.num_layers=12 model.hidden_size=768 model.num_attention_heads=12 \
  model.context_length=1024 model.vocab_size=50304 train_micro_batch_size_per_gpu=16
# The same in bf16 mixed precision, the issue's benchmark setting: PyTorch in bf16 autocast beside
# it (ParaScope's products on the tensor cores, its activations still f32 tensors).
step bench-step-gpu-bf16 180 build-gpu/app/parascope-cli bench step --device cuda --pytorch \
  --precision bf16 --json --steps 10 model.num_layers=12 model.hidden_size=768 \
  model.num_attention_heads=12 model.context_length=1024 model.vocab_size=50304 \
  train_micro_batch_size_per_gpu=16
# A GPU run recorded as a user records one, CUPTI's activity in it: the file opens in Perfetto.
step train-trace-gpu 90 build-gpu/app/parascope-cli train device=cuda train_iters=4 \
  --trace "$out/gpu-trace.json"
# Two data-parallel ranks sharing the GPU, each on its own compute stream, the bucket reductions
# on the communication threads' streams, with ZeRO-2 and the optimizer offloaded to the host:
# `analyze` gives each rank's GPU kernels and how much of the communication the compute hid.
step train-trace-gpu-d2 120 build-gpu/app/parascope-cli train device=cuda train_iters=4 \
  data_parallel_size=2 zero_optimization.stage=2 zero_optimization.offload_optimizer.device=cpu \
  bf16.enabled=true --trace "$out/gpu-trace-d2.json"
step analyze-gpu-d2 60 build-gpu/app/parascope-cli analyze "$out/gpu-trace-d2.json"
# The GEMM peaks beside PyTorch's, each precision (measured on this kind of machine before).
step bench-gpu 90 build-gpu/app/parascope-cli bench gpu --pytorch --json
# The other suites, on this machine's toolchain and libraries.
step build 240 cmake --build build-gpu --parallel "$(nproc)" -- -k 0
step suite 240 ctest --test-dir build-gpu -LE "gpu|mpi" --parallel "$(nproc)" --output-on-failure \
  --timeout 300
# Last, as it takes longest: both sides at the largest micro-batch each fits.
step bench-step-gpu-largest 300 build-gpu/app/parascope-cli bench step --device cuda --pytorch \
  --largest-batch --json --steps 3 model.num_layers=12 model.hidden_size=768 \
  model.num_attention_heads=12 model.context_length=1024 model.vocab_size=50304 \
  train_micro_batch_size_per_gpu=16
grep -h "^[[:space:]]*[0-9]*% tests passed\|tests failed\|QINFO\|SKIP" "$out"/gpu-suite.log \
  "$out"/suite.log >>"$summary" 2>/dev/null
exit $failed
