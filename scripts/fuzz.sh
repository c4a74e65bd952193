#!/usr/bin/env bash
# Fuzzes the trace importer with libFuzzer (clang-14 from Debian, ASan+UBSan) in build-fuzz.
#   scripts/fuzz.sh [--time SECONDS] [--jobs N]
# Starts from the committed corpus (tests/profiler/fuzz_corpus) and keeps what it discovers in
# build-fuzz/corpus, so later runs continue from there. A crash leaves crash-* in build-fuzz;
# replay one with build-fuzz/profiler/parascope_import_fuzzer build-fuzz/crash-...
# The test suite runs a short deterministic replay of the same entry point (profiler_fuzz_replay).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
jobs=1
while (($#)); do
  case "$1" in
    --time) seconds="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    *) echo "fuzz.sh: unknown option '$1' (allowed: --time SECONDS, --jobs N)" >&2; exit 2 ;;
  esac
  shift
done

command -v clang++-14 >/dev/null || { echo "fuzz.sh: clang++-14 not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DPARASCOPE_BUILD_TESTS=OFF -DPARASCOPE_FUZZ=ON -DPARASCOPE_SANITIZE=address,undefined
cmake --build build-fuzz --target parascope_import_fuzzer --parallel "$(nproc)"

mkdir -p build-fuzz/corpus
cd build-fuzz
ASAN_OPTIONS=detect_leaks=1 ./profiler/parascope_import_fuzzer \
  -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" -max_len=65536 -rss_limit_mb=2048 \
  -timeout=10 corpus ../tests/profiler/fuzz_corpus
