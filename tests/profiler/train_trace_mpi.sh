#!/bin/sh
# train --trace under mpirun: two MPI ranks each write their own file, then the files are
# checked for aligned clocks. Arguments: OUTDIR MPIRUN CLI CONFIG CHECKER.
set -e
out=$1 mpirun=$2 cli=$3 config=$4 check=$5
rm -rf "$out"
mkdir -p "$out"
"$mpirun" --oversubscribe --allow-run-as-root -np 2 "$cli" train --backend mpi \
  --trace "$out/run.json" --config "$config" train_iters=3 model.num_layers=1 \
  model.hidden_size=32 model.context_length=16 train_micro_batch_size_per_gpu=4 eval_iters=1
"$check" "$out/run.rank0.json" "$out/run.rank1.json"
