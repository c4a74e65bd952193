#!/usr/bin/env bash
# README command 2: install what is missing, build with tests, and run the whole suite through
# CTest; exits non-zero on any failure.
#   scripts/test.sh                 Release build, every test
#   scripts/test.sh --sanitize      also rebuild with ASan+UBSan (and TSan for threaded suites)
#                                   and run the suite again under them
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    *) echo "test.sh: unknown option '$arg' (allowed: --sanitize)" >&2; exit 2 ;;
  esac
done

bash scripts/setup.sh
bash scripts/build.sh --tests
(cd build && ctest --output-on-failure --timeout 900)

if ((sanitize)); then
  bash scripts/build.sh --tests --sanitize address,undefined
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure --timeout 1800 -LE no-sanitize)
fi
