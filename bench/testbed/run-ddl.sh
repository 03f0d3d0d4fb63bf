#!/usr/bin/env bash
# One DDL run on the test bed: the relay (predrop-server --mode ddl) in the sender namespace,
# N predrop-ddl-worker processes in the receiver namespace, so that the bottleneck (tbf on the
# router's egress) sits on the relay's downlink, where the relay pre-discards per peer.
# Writes into OUT: job.toml, relay-trace.csv, worker-<r>.csv, relay.log, worker-<r>.log.
#
#   run-ddl.sh --out DIR --policy FILE --rate RATE [--workers N] [--stages S]
#              [-- more predrop-ddl-worker options]
#
# FILE holds the [control] and [discard] sections (see policies/ddl-*.toml).
# Needs PREDROP_BIN (predrop-server, predrop-ddl-worker). Exit 0 with "SKIP: ..." where
# namespaces are not permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bed.sh
source "$here/bed.sh"

out="" policy="" rate="" workers=3 stages=300 extra=()
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --policy) policy="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run-ddl: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" && -r "$policy" && -n "$rate" ]] || {
  echo "usage: $0 --out DIR --policy FILE --rate RATE [--workers N] [--stages S]" >&2
  exit 2
}
bin="${PREDROP_BIN:?set PREDROP_BIN}"
mkdir -p "$out"
out="$(readlink -f "$out")"
rm -f "$out"/*.csv "$out"/*.log "$out"/*.out
port=9300
config="$out/job.toml"
{
  cat <<EOF
# Written by bench/testbed/run-ddl.sh; the policy part comes from $(basename "$policy").
[server]
mode = "ddl"
max_sessions = 16
session_timeout_s = 60
srtp = "AEAD_AES_128_GCM"
metrics_listen = ""
trace_csv = "$out/relay-trace.csv"
log_level = "info"

[ddl]
listen = "$BED_SND_IP:$port"
workers = $workers
stage_deadline_ms = "adaptive"
missing_chunk_fill = "zero"
chunk_bytes = 1024
worker_egress_discard = false
pacing = "paced"

EOF
  cat "$policy"
} >"$config"

exec 9>/tmp/predrop-testbed.lock
flock 9
bed_up "$rate" || exit 1

bed_spawn snd env -u PREDROP_DDL_KEY "$bin/predrop-server" -c "$config" >"$out/relay.out" 2>"$out/relay.log"
relay_pid=$BED_LAST_PID
key=""
for _ in $(seq 1 300); do
  key=$(sed -n 's/^PREDROP_DDL_KEY=//p' "$out/relay.out" 2>/dev/null | head -1)
  [[ -n "$key" ]] && grep -q 'listening on' "$out/relay.log" && break
  kill -0 "$relay_pid" 2>/dev/null || { echo "run-ddl: the relay exited" >&2; cat "$out/relay.log" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$key" ]] || { echo "run-ddl: no job key from the relay" >&2; exit 1; }

worker_pids=()
for ((r = 0; r < workers; r++)); do
  bed_spawn rcv env PREDROP_DDL_KEY="$key" "$bin/predrop-ddl-worker" --relay "$BED_SND_IP:$port" \
    --rank "$r" --stages "$stages" -c "$config" --csv "$out/worker-$r.csv" --print-every 0 \
    ${extra[@]+"${extra[@]}"} >"$out/worker-$r.out" 2>"$out/worker-$r.log"
  worker_pids+=("$BED_LAST_PID")
done
status=0
for pid in "${worker_pids[@]}"; do wait "$pid" || status=1; done
tc -s -n "$BED_RTR" qdisc show dev r1 >"$out/qdisc.txt" 2>&1
bed_down
exit $status
