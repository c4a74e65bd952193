#!/usr/bin/env bash
# Configures and builds ParaScope into a build directory.
#   scripts/build.sh [--tests] [--sanitize address,undefined|thread] [--dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

tests=OFF
sanitize=""
dir=""
while (($#)); do
  case "$1" in
    --tests) tests=ON ;;
    --sanitize) sanitize="$2"; shift ;;
    --dir) dir="$2"; shift ;;
    *) echo "build.sh: unknown option '$1' (allowed: --tests, --sanitize LIST, --dir DIR)" >&2; exit 2 ;;
  esac
  shift
done

if [[ -z "$dir" ]]; then
  case "$sanitize" in
    "") dir=build ;;
    thread) dir=build-tsan ;;
    *) dir=build-asan ;;
  esac
fi
build_type=Release
[[ -n "$sanitize" ]] && build_type=RelWithDebInfo
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" \
  -DPARASCOPE_BUILD_TESTS="$tests" -DPARASCOPE_SANITIZE="$sanitize"
cmake --build "$dir" --parallel "$(nproc)"
