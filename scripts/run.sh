#!/usr/bin/env bash
# README command 1: install what is missing, build (Release), and run the main job: a short
# training run of the GPT on the fortunes corpus with in-process ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/app/parascope-cli train --config resources/configs/default.json "$@"
