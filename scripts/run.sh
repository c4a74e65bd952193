#!/usr/bin/env bash
# README command 1: install what is missing, build (Release), and open the workbench on the main
# job, a short training run of the GPT on the fortunes corpus with in-process ranks, started at
# once. Without a display (DISPLAY and WAYLAND_DISPLAY unset) it says so in one line and runs the
# same session headless with parascope-cli. Arguments go to the program: key=value overrides for
# both, and the CLI's or the workbench's own flags.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]]; then
  echo "run.sh: no display (DISPLAY and WAYLAND_DISPLAY unset); running the session headless with parascope-cli train"
  exec ./build/app/parascope-cli train --config resources/configs/default.json "$@"
fi
exec ./build/app/parascope --config resources/configs/default.json --run "$@"
