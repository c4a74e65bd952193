#!/usr/bin/env bash
# The same session on in-process ranks and on MPI processes gives the same per-step losses, bit
# for bit (every reduction here sums two operands, which is order-free), so a combination tested
# against one rank on threads holds under MPI too.
#   session_mpi_check.sh CLI CONFIG MPIRUN NP key=value...
set -euo pipefail
cli=$1 config=$2 mpirun=$3 np=$4
shift 4
losses() { grep '"event":"step"' | grep -o '"loss_nats":[^,]*'; }
threads=$("$cli" train --json --config "$config" "$@" | losses)
mpi=$($mpirun --oversubscribe --allow-run-as-root -np "$np" "$cli" train --json --backend mpi \
  --config "$config" "$@" | losses)
if [[ -z "$threads" || "$threads" != "$mpi" ]]; then
  echo "session-mpi-check FAILED: threads and MPI losses differ"
  diff <(echo "$threads") <(echo "$mpi") || true
  exit 1
fi
echo "session-mpi-check: ok, $(echo "$threads" | wc -l) steps on $np ranks"
