#!/usr/bin/env bash
# README command 2: install what is missing, check formatting, build and run every test through
# CTest, and exit non-zero on any failure. Each suite runs once under AddressSanitizer and
# UndefinedBehaviorSanitizer, and again under ThreadSanitizer where it runs threads; the
# optimised build without sanitizers runs what they cannot or need not (the MPI jobs, the
# workbench's window, the learning runs) and the numeric suites, once with the kernels chosen for
# this CPU and again with each other family of matrix-product kernels the CPU can execute;
# clang-tidy checks every product source.
#   scripts/test.sh                 all of the above
#   scripts/test.sh --no-sanitize   without the sanitizer builds: every suite in the optimised
#                                   build (the quick local loop)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitize) sanitize=0 ;;
    *) echo "test.sh: unknown option '$arg' (allowed: --no-sanitize)" >&2; exit 2 ;;
  esac
done

# Where the time goes: each phase says when it ended.
phase() { echo "test.sh: $1 done after $SECONDS s"; }

bash scripts/setup.sh
bash scripts/check-format.sh
# Under the sanitizers every other suite runs anyway: the optimised build holds only the numeric
# ones, those the sanitizers leave to it (the learning runs) and the tests that are not suites,
# which saves compiling the rest a third time.
suites=""
((sanitize)) && suites="numeric;no-sanitize"
bash scripts/build.sh --tests --suites "$suites"
phase build
# Suites run as many at a time as there are cores, the longest first (tests/CMakeLists.txt).
jobs=$(nproc)
(cd build && ctest --output-on-failure --timeout 900 -j "$jobs")
phase suite

# One real window: the workbench under Xvfb runs a tiny session for a few steps, saves the window
# and each view as PNGs and quits; its exit status and the images are checked. Its settings (the
# last config, the layout) and its cached sgemm peak go to throw-away homes, not the user's.
shots=$(mktemp -d)
config_home=$(mktemp -d)
cache_home=$(mktemp -d)
XDG_CONFIG_HOME="$config_home" XDG_CACHE_HOME="$cache_home" xvfb-run -a -s "-screen 0 1920x1200x24" timeout 300 \
  ./build/app/parascope --run \
  --config resources/configs/default.json --screenshot-dir "$shots" --quit-after-steps 3 model.hidden_size=32 model.num_layers=2 \
  model.context_length=16 train_micro_batch_size_per_gpu=2 data_parallel_size=2 train_iters=20 \
  eval_interval=2 eval_iters=1
for png in window.png view-log.png view-memory.png view-pipeline.png view-communication.png \
  view-breakdown.png view-compare.png; do
  # A blank or truncated image would be a few KiB at most.
  [[ $(stat -c %s "$shots/$png" 2>/dev/null || echo 0) -gt 20000 ]] ||
    { echo "test.sh: the workbench under Xvfb did not save $png" >&2; exit 1; }
done
[[ -f "$config_home/ParaScope/parascope.conf" ]] ||
  { echo "test.sh: the workbench under Xvfb kept its settings elsewhere" >&2; exit 1; }
rm -rf "$shots" "$config_home" "$cache_home"
phase "window under Xvfb"

# The single-precision products run on oneDNN, which picks its kernels by the instructions the CPU
# has; OpenBLAS, their other library (PARASCOPE_SGEMM=openblas), picks a kernel family for the CPU.
# Kernels round differently, and a numeric test must pass whichever runs, not only this machine's.
# So the numeric suites (both backends) run again with oneDNN limited to each narrower instruction
# set this CPU can execute (DNNL_MAX_CPU_ISA: AVX2, AVX, SSE4.1; the run above had the widest),
# and on OpenBLAS with each of its families forced that this CPU can execute: SkylakeX (AVX-512),
# Haswell and Zen (AVX2, different blocking), Sandybridge (AVX), Nehalem and Prescott (SSE only;
# /proc/cpuinfo calls SSE3 "pni"). test_kernels checks that the forced library and kernels are the
# ones in use.
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
needs() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
declare -A required=([AVX2]="avx2 fma" [AVX]="avx" [SSE41]="sse4_1"
  [SkylakeX]="avx512f avx512bw avx512dq avx512vl" [Haswell]="avx2 fma"
  [Zen]="avx2 fma" [Sandybridge]="avx" [Nehalem]="ssse3 sse4_1 sse4_2" [Prescott]="pni")
runs=()
for isa in AVX2 AVX SSE41; do runs+=("DNNL_MAX_CPU_ISA=$isa"); done
for core in SkylakeX Haswell Zen Sandybridge Nehalem Prescott; do
  runs+=("PARASCOPE_SGEMM=openblas OPENBLAS_CORETYPE=$core")
done
for run in "${runs[@]}"; do
  kernels=${run##*=}
  # shellcheck disable=SC2086  # the list of flags splits into words on purpose
  if ! needs ${required[$kernels]}; then
    echo "test.sh: skipping $run: this CPU lacks ${required[$kernels]}"
    continue
  fi
  echo "test.sh: numeric suites with $run"
  # shellcheck disable=SC2086  # the assignments split into words on purpose
  (cd build && env $run ctest --output-on-failure --timeout 900 -j "$jobs" -L numeric)
done

phase "numeric suites under each kernel family"

# clang-tidy over the sources the optimised tree compiled: its unity sources and the few compiled
# alone (scripts/tidy.sh), with their compile commands and moc's output.
bash scripts/tidy.sh build
phase clang-tidy

if ((sanitize)); then
  bash scripts/build.sh --tests --sanitize address,undefined
  # Allocation stacks of 5 frames instead of 30: ASan records one at every malloc and free, and
  # the suites run in three quarters of the time; an error's own stack stays whole.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:malloc_context_size=5 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --output-on-failure --timeout 1800 -j "$jobs" -LE no-sanitize)
  phase "AddressSanitizer and UndefinedBehaviorSanitizer"
  bash scripts/build.sh --sanitize thread --label threads
  (cd build-tsan && ctest --output-on-failure --timeout 1800 -j "$jobs" -L threads)
  phase ThreadSanitizer
fi
