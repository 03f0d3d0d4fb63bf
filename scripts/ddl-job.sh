#!/usr/bin/env bash
# A DDL job as separate processes on loopback: the relay (predrop-server --mode ddl) and N
# predrop-ddl-worker processes. The relay generates the job key and prints it
# (PREDROP_DDL_KEY=a=crypto:...); this script hands it to the workers through the environment,
# as a job launcher would. For the same job in one process with one merged table per stage, use
# build/<dir>/ddl/train/predrop-ddl-job (docs/ddl-mode.md).
#
#   scripts/ddl-job.sh [--bin DIR] [--workers N] [--stages S] [--config FILE] [--port P]
#                      [--out DIR] [-- more predrop-ddl-worker options]
#
# --bin      build directory holding server/predrop-server and ddl/train/predrop-ddl-worker
#            (default build/release; scripts/build.sh release makes it)
# --port     relay UDP port on 127.0.0.1 (default 9300; 0 = any free port)
# --out      where the logs and CSV traces go (default build/ddl-job)
# Rank 0's per-stage lines are shown; every process logs to --out.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
workers=3
stages=300
config=configs/ddl.toml
port=9300
out=build/ddl-job
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "ddl-job.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
server="$bin/server/predrop-server"
worker="$bin/ddl/train/predrop-ddl-worker"
for b in "$server" "$worker"; do
  [[ -x "$b" ]] || { echo "ddl-job.sh: $b not found; build first (scripts/build.sh release)" >&2; exit 2; }
done
mkdir -p "$out"
rm -f "$out"/relay.* "$out"/worker-*

# The job's file with this run's worker count, address and trace.
job_config="$out/job.toml"
sed -e "s/^workers *=.*/workers = $workers/" \
    -e "s/^listen *=.*/listen = \"127.0.0.1:$port\"/" \
    -e "s|^trace_csv *=.*|trace_csv = \"$out/relay-trace.csv\"|" \
    -e "s/^metrics_listen *=.*//" "$config" > "$job_config"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

env -u PREDROP_DDL_KEY "$server" -c "$job_config" >"$out/relay.out" 2>"$out/relay.log" &
relay_pid=$!
pids+=("$relay_pid")
key=""
address=""
for _ in $(seq 200); do
  key=$(sed -n 's/^PREDROP_DDL_KEY=//p' "$out/relay.out" 2>/dev/null | head -1)
  address=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$out/relay.log" 2>/dev/null | head -1)
  [[ -n "$key" && -n "$address" ]] && break
  kill -0 "$relay_pid" 2>/dev/null || { cat "$out/relay.log" >&2; exit 1; }
  sleep 0.05
done
[[ -n "$key" && -n "$address" ]] || { echo "ddl-job.sh: the relay did not start" >&2; exit 1; }
echo "relay $address, $workers workers x $stages stages, logs in $out"

worker_pids=()
for ((r = 0; r < workers; r++)); do
  args=(--relay "$address" --rank "$r" --stages "$stages" -c "$job_config"
        --csv "$out/worker-$r.csv" ${extra[@]+"${extra[@]}"})
  if [[ $r -eq 0 ]]; then
    PREDROP_DDL_KEY="$key" "$worker" "${args[@]}" 2>"$out/worker-$r.log" \
      > >(tee "$out/worker-$r.out") &
  else
    PREDROP_DDL_KEY="$key" "$worker" "${args[@]}" --print-every 0 >"$out/worker-$r.out" \
      2>"$out/worker-$r.log" &
  fi
  worker_pids+=($!)
  pids+=($!)
done
# A worker that fails ends the job: the others would wait for it at the start.
status=0
running=("${worker_pids[@]}")
while [[ ${#running[@]} -gt 0 && $status -eq 0 ]]; do
  still=()
  for p in "${running[@]}"; do
    if kill -0 "$p" 2>/dev/null; then still+=("$p"); elif ! wait "$p"; then status=1; fi
  done
  running=(${still[@]+"${still[@]}"})
  [[ ${#running[@]} -gt 0 ]] && sleep 0.2
done
if [[ $status -ne 0 ]]; then
  for p in "${worker_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill -TERM "$relay_pid" 2>/dev/null || true
fi
wait "$relay_pid" || status=1
pids=()
for ((r = 1; r < workers; r++)); do
  tail -n 1 "$out/worker-$r.out"
done
if [[ $status -ne 0 ]]; then
  for ((r = 0; r < workers; r++)); do
    echo "--- worker $r: $out/worker-$r.log"
    tail -n 3 "$out/worker-$r.log"
  done
fi
grep -h "job over" "$out/relay.log" | sed 's/^.*\] //'
exit $status
