#!/bin/sh
# word2vec's tables saved under mpirun by two servers (four processes), continued by one server
# (three processes) to step 80, against one process training 80 steps: the final training and
# validation losses must be equal to the last digit.
# Usage: checkpoint_mpi.sh MPIEXEC PARASCOPE_CLI CONFIG
set -eu
mpiexec=$1 cli=$2 config=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
small="--config $config model.max_vocab_size=2000 model.embedding_dim=16 parameter_server.sparse_table.rows=18384 train_micro_batch_size_per_gpu=64"
run() { "$mpiexec" --oversubscribe --allow-run-as-root -np "$@"; }
# shellcheck disable=SC2086
run 4 "$cli" train --backend mpi $small train_iters=40 parameter_server.server_num=2 --save "$dir/ck" > "$dir/save.out"
# shellcheck disable=SC2086
run 3 "$cli" train --backend mpi $small train_iters=80 parameter_server.server_num=1 --load "$dir/ck" --json > "$dir/load.out"
# shellcheck disable=SC2086
"$cli" train $small train_iters=80 --json > "$dir/straight.out"
losses() { grep '"event":"finished"' "$1" | grep -o '"[a-z_]*loss_nats":[^,}]*'; }
continued=$(losses "$dir/load.out")
straight=$(losses "$dir/straight.out")
if [ -z "$continued" ] || [ "$continued" != "$straight" ]; then
  echo "continued: $continued"
  echo "straight:  $straight"
  exit 1
fi
echo "$continued"
echo "word2vec checkpoint under mpirun: ok"
