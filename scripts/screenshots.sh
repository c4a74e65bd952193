#!/usr/bin/env bash
# The README's pictures: the workbench on the default GPT session with two pipeline stages,
# photographed by its own --screenshot-dir flag after 30 steps (offscreen: no display needed),
# copied to docs/images/workbench.png (the window) and workbench-pipeline.png (the Pipeline view).
set -euo pipefail
cd "$(dirname "$0")/.."
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
QT_QPA_PLATFORM=offscreen ./build/app/parascope --config resources/configs/default.json --run \
  --screenshot-dir "$shots" --quit-after-steps 30 pipeline_model_parallel_size=2 \
  gradient_accumulation_steps=4 train_micro_batch_size_per_gpu=2 train_iters=30 eval_interval=10
mkdir -p docs/images
cp "$shots/window.png" docs/images/workbench.png
cp "$shots/view-pipeline.png" docs/images/workbench-pipeline.png
