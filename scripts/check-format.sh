#!/usr/bin/env bash
# Fails, naming the files, if clang-format (.clang-format at the root) would change any tracked
# C++ source or header (tracked, or new and not ignored).
#   scripts/check-format.sh
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' '*.cu')
# One process for all files; every change it would make is a "file:line:col: error:" line.
mapfile -t unformatted < <(clang-format --dry-run --Werror "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if ((${#unformatted[@]})); then
  echo "check-format.sh: clang-format would change ${#unformatted[@]} file(s); run" >&2
  echo "  clang-format -i ${unformatted[*]}" >&2
  exit 1
fi
echo "check-format.sh: ${#files[@]} files formatted"
