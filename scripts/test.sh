#!/usr/bin/env bash
# README command 2: install what is missing, build with tests, and run the whole suite through
# CTest, then again under the sanitizers; exits non-zero on any failure.
#   scripts/test.sh                 Release suite, then ASan+UBSan (every test not labelled
#                                   no-sanitize) and TSan (tests labelled threads)
#   scripts/test.sh --no-sanitize   the Release suite only (the quick local loop)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitize) sanitize=0 ;;
    *) echo "test.sh: unknown option '$arg' (allowed: --no-sanitize)" >&2; exit 2 ;;
  esac
done

bash scripts/setup.sh
bash scripts/build.sh --tests
(cd build && ctest --output-on-failure --timeout 900)

if ((sanitize)); then
  bash scripts/build.sh --tests --sanitize address,undefined
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --output-on-failure --timeout 1800 -LE no-sanitize)
  bash scripts/build.sh --sanitize thread --label threads
  (cd build-tsan && ctest --output-on-failure --timeout 1800 -L threads)
fi
