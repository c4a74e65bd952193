#!/usr/bin/env bash
# Runs clang-tidy (the checks in .clang-tidy, warnings as errors) over every project source that
# the build compiles, in parallel; headers are checked through the sources that include them.
# Needs a configured and built tree (compile_commands.json, and moc's generated files for the
# Qt tests).
#   scripts/tidy.sh [BUILD_DIR]     default: build
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${1:-build}"
db="$dir/compile_commands.json"
[[ -f "$db" ]] || { echo "tidy.sh: no $db; run scripts/build.sh first" >&2; exit 2; }
tidy=clang-tidy-14
command -v "$tidy" >/dev/null || tidy=clang-tidy

# Project sources only: the repository's .cpp files the build compiles (not moc's output, and
# not the CUDA-only sources of a build without CUDA).
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' |
  grep -F -x -f <(sed -n "s|^ *\"file\": \"$PWD/\(.*\)\",*$|\1|p" "$db" | sort -u))
((${#files[@]})) || { echo "tidy.sh: no sources found in $db" >&2; exit 2; }

# -mavx512fp16: clang 14 parses _Float16 (test_tensor.cpp's reference) only with it; GCC and
# newer clang on any x86-64. It changes only what clang-tidy parses, not the build.
start=$SECONDS
if ! printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 2 "$tidy" -p "$dir" --quiet --extra-arg=-mavx512fp16 2>/dev/null; then
  echo "tidy.sh: clang-tidy found problems (above)" >&2
  exit 1
fi
echo "tidy.sh: ${#files[@]} sources clean in $((SECONDS - start)) s"
