#!/usr/bin/env bash
# Runs clang-tidy (the checks in .clang-tidy, warnings as errors) over every product source that
# the build compiles, in parallel, through the unity sources the build compiled them in; headers
# are checked through the sources that include them. Needs a configured and built tree
# (compile_commands.json, and moc's generated files for the GUI).
#   scripts/tidy.sh [BUILD_DIR]     default: build
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${1:-build}"
db="$dir/compile_commands.json"
[[ -f "$db" ]] || { echo "tidy.sh: no $db; run scripts/build.sh first" >&2; exit 2; }
# clang-tidy 22 (Debian 12's security archive, installed by setup.sh) runs the same checks about
# 2.5 times faster than 14: it no longer matches inside system headers.
tidy=clang-tidy-22
command -v "$tidy" >/dev/null || { echo "tidy.sh: $tidy is missing; run scripts/setup.sh" >&2; exit 2; }

# The product as the build compiled it: each folder's unity sources (Unity/unity_N_cxx.cxx, each
# including up to eight of the folder's .cpp files, which the checks read as they read headers)
# and the repository's .cpp files compiled alone (those a unity build skips); not moc's output,
# not the CUDA-only sources of a build without CUDA, not the suites under tests/, which the
# compilers' warnings and three sanitizers check. A unity source parses the headers its .cpp
# files share once: the GUI's eight sources of unity_0 are checked in 5 s instead of 27 s.
root="$(cd "$dir" && pwd)"
mapfile -t compiled < <(sed -n 's|^ *"file": "\(.*\)",*$|\1|p' "$db" | sort -u)
mapfile -t unity < <(printf '%s\n' "${compiled[@]}" | grep -E "^$root/.*/Unity/unity_[0-9]+_cxx\.cxx$" |
  grep -v "^$root/tests/" || true)
mapfile -t alone < <(git ls-files --cached --others --exclude-standard '*.cpp' | grep -v '^tests/' |
  grep -F -x -f <(printf '%s\n' "${compiled[@]}" | sed -n "s|^$PWD/||p") || true)
((${#unity[@]} + ${#alone[@]})) || { echo "tidy.sh: no sources found in $db" >&2; exit 2; }
# Each unity source with the number of .cpp files it includes; those compiled alone count one.
counted=()
for u in "${unity[@]}"; do
  # Not those of the empty sources the precompiled headers are built with.
  n=$(grep -c "^#include \"$PWD/" "$u" || true)
  ((n)) && counted+=("$n $u")
done
for a in "${alone[@]}"; do counted+=("1 $a"); done
covered=$(printf '%s\n' "${counted[@]}" | awk '{n += $1} END {print n}')

# The precompiled headers hold only third-party and standard headers, so clang-tidy 22 reads
# Clang 22's as the build made them, in about half the time for a source that includes Qt.
# The largest unity sources first, so that no long one starts last.
start=$SECONDS
if ! printf '%s\n' "${counted[@]}" | sort -rn | cut -d' ' -f2- |
  xargs -P "$(nproc)" -n 1 "$tidy" -p "$dir" --config-file=.clang-tidy --quiet 2>/dev/null; then
  echo "tidy.sh: clang-tidy found problems (above)" >&2
  exit 1
fi
echo "tidy.sh: $covered sources clean ($((${#counted[@]} - ${#alone[@]})) unity sources, ${#alone[@]} alone) in $((SECONDS - start)) s"
