#!/usr/bin/env bash
# A live switch under mpirun: 4 MPI processes change their layout twice (D4 ZeRO-3 -> T2 x D2 ->
# P2 x D2) over point-to-point transfers; every step's loss and gradient norm equal the same
# switches made by 4 in-process ranks, bit for bit (the norm's 17 digits show any difference in
# the reduced gradients), and each switch is reported.
#   switch_mpi_check.sh CLI CONFIG MPIRUN key=value...
set -euo pipefail
cli=$1 config=$2 mpirun=$3
shift 3
losses() { grep '"event":"step"' | grep -o '"grad_norm":[^,]*,"loss_nats":[^,]*'; }
run=(train --json --config "$config" "$@" train_iters=6 data_parallel_size=4
  zero_optimization.stage=3
  --switch 2:tensor_model_parallel_size=2,data_parallel_size=2,zero_optimization.stage=1
  --switch 4:tensor_model_parallel_size=1,pipeline_model_parallel_size=2,zero_optimization.stage=0)

threads=$("$cli" "${run[@]}")
mpi=$($mpirun --oversubscribe --allow-run-as-root -np 4 "$cli" "${run[@]}" --backend mpi)
want=$(echo "$threads" | losses)
got=$(echo "$mpi" | losses)
switches=$(echo "$mpi" | grep -c '"event":"switch"' || true)
if [[ $(echo "$want" | wc -l) != 6 || "$want" != "$got" || "$switches" != 2 ]]; then
  echo "switch-mpi-check FAILED: $switches switch reports; norms and losses (threads, mpi):"
  paste <(echo "$want") <(echo "$got") || true
  exit 1
fi
echo "switch-mpi-check: ok, 2 switches on 4 MPI processes equal the in-process run"
