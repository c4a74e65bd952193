#!/bin/sh
# The workbench ended by SIGTERM while a session runs: exit status 143 (128 + 15), and the
# temporary folder of its run traces is gone. Usage: sigterm_check.sh PARASCOPE CONFIG
set -u
tmp=$(mktemp -d)
home=$(mktemp -d)
TMPDIR="$tmp" XDG_CONFIG_HOME="$home" XDG_CACHE_HOME="$home" XDG_RUNTIME_DIR="$home" \
  QT_QPA_PLATFORM=offscreen \
  "$1" --run --config "$2" model.hidden_size=32 model.num_layers=2 model.context_length=16 \
  train_micro_batch_size_per_gpu=2 train_iters=100000 &
pid=$!
# Once the run has its folder of traces (made when the window is), let it train a moment.
for _ in $(seq 100); do
  [ -n "$(ls -A "$tmp")" ] && break
  sleep 0.1
done
sleep 2
kill -TERM "$pid"
wait "$pid"
status=$?
left=$(ls -A "$tmp")
rm -rf "$tmp" "$home"
echo "exit status $status; left behind: '${left}'"
[ "$status" -eq 143 ] && [ -z "$left" ]
