#!/usr/bin/env bash
# Configures and builds ParaScope into a build directory.
#   scripts/build.sh [--tests] [--sanitize address,undefined|thread] [--dir DIR]
#                    [--label L]   build only the test executables whose CTest label is L
#                    [--suites L;M]  with --tests: configure only the Qt Test suites labelled L
#                                  or M (the other tests, MPI jobs and replays, all)
set -euo pipefail
cd "$(dirname "$0")/.."

tests=OFF
sanitize=""
dir=""
label=""
suites=""
while (($#)); do
  case "$1" in
    --tests) tests=ON ;;
    --sanitize) sanitize="$2"; shift ;;
    --dir) dir="$2"; shift ;;
    --label) label="$2"; tests=ON; shift ;;
    --suites) suites="$2"; shift ;;
    *) echo "build.sh: unknown option '$1' (allowed: --tests, --sanitize LIST, --dir DIR, --label L, --suites L;M)" >&2; exit 2 ;;
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
# Every tree compiles each folder's sources up to eight at a time as one (CMake's unity build):
# the optimised tree with the suites scripts/test.sh runs there in 165 s instead of 305 s on 2
# cores, the sanitized ones in about half the CPU; clang-tidy checks the same unity sources
# (scripts/tidy.sh) in 72 s where a source at a time took 234 s.
# Clang 22 and lld (Debian 12's security archive, installed by setup.sh) for every tree: with the
# third-party and standard headers precompiled (which GCC cannot share between sources) the
# optimised tree builds in 305 s instead of GCC 12's 540 s on 2 cores, and a GPT step runs as
# fast; Clang's sanitizers are the ones their guides describe. A tree configured with another
# compiler is started afresh: CMake cannot switch.
toolchain=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld)
if [[ -f "$dir/CMakeCache.txt" ]] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-22$' "$dir/CMakeCache.txt"; then
  rm -rf "$dir"
fi
if [[ -n "$sanitize" ]]; then
  build_type=RelWithDebInfo
fi
# The suites' selection means something only to a tree with tests (CMake warns of it otherwise).
selection=()
[[ "$tests" == ON ]] && selection=(-DPARASCOPE_TEST_SUITES="$suites")
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${toolchain[@]}" -DCMAKE_UNITY_BUILD=ON \
  -DPARASCOPE_BUILD_TESTS="$tests" -DPARASCOPE_SANITIZE="$sanitize" "${selection[@]}"
targets=()
if [[ -n "$label" ]]; then
  # Test names are their executables' target names, or NAME:function (tests/CMakeLists.txt:
  # parascope_add_test).
  mapfile -t targets < <(cd "$dir" && ctest -N -L "$label" | awk '/Test +#/ {sub(/:.*/, "", $3); print $3}' | sort -u)
  ((${#targets[@]})) || { echo "build.sh: no test is labelled '$label'"; exit 0; }
  targets=(--target "${targets[@]}")
fi
cmake --build "$dir" --parallel "$(nproc)" "${targets[@]}"
