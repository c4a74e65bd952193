#!/bin/sh
# Issue 16's MPI probes: rank 1 alone gets another setting (through a wrapper, as a user's
# per-node script would), or fails alone during setup. Every rank must end, with status 2 and
# the reason named, within a bound; a hang is killed by `timeout` and fails the test.
# Arguments: WORKDIR MPIRUN CLI CONFIG.
set -u
work=$1 mpirun=$2 cli=$3 config=$4
rm -rf "$work"
mkdir -p "$work/out"
cat > "$work/wrapper.sh" <<WRAP
#!/bin/sh
# The arguments after "--" go to rank 1 only.
rank1=""
args=""
for a in "\$@"; do
  if [ "\$a" = "--" ]; then rank1=yes; continue; fi
  if [ -n "\$rank1" ] && [ "\$OMPI_COMM_WORLD_RANK" != 1 ]; then continue; fi
  args="\$args '\$a'"
done
eval exec "$cli" \$args
WRAP
chmod +x "$work/wrapper.sh"
failed=0
# probe NAME EXPECTED-STDERR-TEXT ARGS...: status 2, the text on stderr, ended within 30 s.
probe() {
  name=$1 expect=$2
  shift 2
  start=$(date +%s)
  timeout 60 "$mpirun" --oversubscribe --allow-run-as-root -np 2 "$work/wrapper.sh" train \
    --backend mpi --config "$config" train_iters=3 eval_interval=0 model.num_layers=2 \
    model.hidden_size=32 model.context_length=16 train_micro_batch_size_per_gpu=4 \
    eval_iters=1 "$@" > "$work/$name.out" 2> "$work/$name.err"
  status=$?
  took=$(( $(date +%s) - start ))
  if [ "$status" -ne 2 ] || ! grep -qF -- "$expect" "$work/$name.err" || [ "$took" -gt 30 ]; then
    echo "FAIL $name: status $status after ${took}s; stderr:"
    cat "$work/$name.err"
    failed=1
  else
    echo "ok   $name: status 2 after ${took}s"
  fi
}
probe train-iters "config: ranks disagree on 'train_iters': rank 0 has 3, rank 1 has 5" \
  -- train_iters=5
probe num-layers "config: ranks disagree on 'model.num_layers': rank 0 has 2, rank 1 has 3" \
  -- model.num_layers=3
probe unknown-key "config: ranks disagree on 'model.num_layerz': rank 0 has unset, rank 1 has 3" \
  -- model.num_layerz=3
probe data-path "config: ranks disagree on 'data.path'" -- data.path=/nonexistent
probe save-dir "config: ranks disagree on '--save': rank 0 has \"\", rank 1 has \"" \
  -- --save "$work/out/ck"
probe keep "config: ranks disagree on '--keep': rank 0 has 0, rank 1 has 2" --save "$work/out/ck" -- --keep 2
probe trace-dir "--trace '$work/missing/run.rank1.json': directory '$work/missing' does not exist" \
  -- --trace "$work/missing/run.json"
probe save-weights "save_weights '$work/missing/w.safetensors': directory '$work/missing' does not exist" \
  save_weights="$work/missing/w.safetensors"
[ -z "$(ls -A "$work/out")" ] || { echo "FAIL: files left in $work/out"; ls -A "$work/out"; failed=1; }
exit $failed
