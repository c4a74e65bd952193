#!/usr/bin/env bash
# Checkpoints across backends and world sizes: saved by 4 MPI processes (T2 x D2) and loaded by 2
# MPI processes (D2) and by 2 in-process ranks, the continued run's losses equal those of the same
# save and load done entirely with in-process ranks, bit for bit.
#   checkpoint_mpi_check.sh CLI CONFIG MPIRUN key=value...
set -euo pipefail
cli=$1 config=$2 mpirun=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
losses() { grep '"event":"step"' | grep -o '"loss_nats":[^,]*'; }
mpi() { $mpirun --oversubscribe --allow-run-as-root -np "$1" "$cli" train --json --backend mpi \
  --config "$config" "${@:2}"; }
save=(train_iters=3 tensor_model_parallel_size=2 data_parallel_size=2)
load=(train_iters=6 data_parallel_size=2)

"$cli" train --json --config "$config" "$@" "${save[@]}" --save "$work/threads" >/dev/null
want=$("$cli" train --json --config "$config" "$@" "${load[@]}" --load "$work/threads" | losses)

mpi 4 "$@" "${save[@]}" --save "$work/mpi" >/dev/null
"$cli" checkpoint verify "$work/mpi"
got_mpi=$(mpi 2 "$@" "${load[@]}" --load "$work/mpi" | losses)
got_threads=$("$cli" train --json --config "$config" "$@" "${load[@]}" --load "$work/mpi" | losses)

if [[ $(echo "$want" | wc -l) != 3 || "$want" != "$got_mpi" || "$want" != "$got_threads" ]]; then
  echo "checkpoint-mpi-check FAILED: losses after loading differ"
  paste <(echo "$want") <(echo "$got_mpi") <(echo "$got_threads") || true
  exit 1
fi
echo "checkpoint-mpi-check: ok, saved on 4 MPI processes, loaded on 2 and in-process"
