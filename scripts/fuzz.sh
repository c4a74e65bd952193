#!/usr/bin/env bash
# Fuzzes with libFuzzer (clang-22 from Debian 12's security archive, ASan+UBSan) in build-fuzz.
#   scripts/fuzz.sh [--target import|config|safetensors|checkpoint] [--time SECONDS] [--jobs N]
# Targets: the trace importer (default; corpus tests/profiler/fuzz_corpus), the config path
# (a file's text, then after a NUL byte one key.path=value override per line; seeds: the
# shipped configs and tests/core/fuzz_corpus/config), and the safetensors reader (seeds: the
# test fixtures and tests/core/fuzz_corpus/safetensors), and the checkpoint reader (a checkpoint
# directory packed as a list of files; seeds: tests/core/fuzz_corpus/checkpoint, a two-rank
# ZeRO-1 checkpoint in formats 1 and 2). What a run discovers is kept in
# build-fuzz/corpus-TARGET, so later runs continue from there. A crash leaves crash-* in
# build-fuzz; replay one with build-fuzz/<dir>/parascope_TARGET_fuzzer build-fuzz/crash-...
# The test suite runs a short deterministic replay of each entry point (*_fuzz_replay).
# A long run, as documented in docs/limits.md: scripts/fuzz.sh --target config --time 3600
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
jobs=1
target=import
while (($#)); do
  case "$1" in
    --time) seconds="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --target) target="$2"; shift ;;
    *) echo "fuzz.sh: unknown option '$1' (allowed: --target import|config|safetensors|checkpoint, --time SECONDS, --jobs N)" >&2; exit 2 ;;
  esac
  shift
done

case "$target" in
  import) binary=profiler/parascope_import_fuzzer; seeds=(../tests/profiler/fuzz_corpus); max_len=65536 ;;
  config) binary=core/fuzz/parascope_config_fuzzer; seeds=(../tests/core/fuzz_corpus/config ../resources/configs); max_len=4096 ;;
  safetensors) binary=core/fuzz/parascope_safetensors_fuzzer; seeds=(../tests/core/fuzz_corpus/safetensors ../tests/fixtures); max_len=262144 ;;
  checkpoint) binary=core/fuzz/parascope_checkpoint_fuzzer; seeds=(../tests/core/fuzz_corpus/checkpoint); max_len=131072 ;;
  *) echo "fuzz.sh: unknown target '$target' (allowed: import, config, safetensors, checkpoint)" >&2; exit 2 ;;
esac

command -v clang++-22 >/dev/null || { echo "fuzz.sh: clang++-22 not found (run scripts/setup.sh)" >&2; exit 2; }
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DPARASCOPE_BUILD_TESTS=OFF -DPARASCOPE_FUZZ=ON -DPARASCOPE_SANITIZE=address,undefined
cmake --build build-fuzz --target "$(basename "$binary")" --parallel "$(nproc)"

mkdir -p "build-fuzz/corpus-$target"
cd build-fuzz
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 "./$binary" \
  -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" -max_len="$max_len" -rss_limit_mb=2048 \
  -timeout=10 "corpus-$target" "${seeds[@]}"
