#!/usr/bin/env bash
# One run on the test bed: one server (sender ns), N measuring clients (receiver ns), one policy,
# one schedule of bottleneck changes and cross-traffic bursts. Writes into OUT:
#   server.toml       the server config of the run (common part + the policy file)
#   trace.csv         the server's per-block trace (R, discarded, report, decision)
#   client-<i>.csv    each client's per-block table (L, PSNR, received, network loss, queue delay)
#   qdisc.txt         the bottleneck's counters at the end (bytes and packets sent, dropped)
#   events            the schedule as executed (planned s, actual s since the stream started, what)
#   server.log, client-<i>.log
#
#   run-scenario.sh --out DIR --policy FILE --clip FILE --blocks N [--clients N]
#                   [--rate RATE] [--event "T rate RATE|open"]... [--event "T cross BW SECONDS"]...
#   Environment: CLIENT_STAGGER_MS=N starts the clients N ms apart (default: together).
#
# FILE holds the [control] and [discard] sections of the server config (see policies/); the rest
# ([server], [server.streams], [blocks]) is written here so that every run shares it.
# Needs PREDROP_BIN (directory with predrop-server and predrop-client). Exit 0 with "SKIP: ..."
# where namespaces are not permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bed.sh
source "$here/bed.sh"

out="" policy="" clip="" blocks=0 clients=1 rate="" events=() cross=0
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --policy) policy="$2"; shift 2 ;;
    --clip) clip="$2"; shift 2 ;;
    --blocks) blocks="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --event)
      events+=("$2")
      [[ "$2" == *" cross "* ]] && cross=1
      shift 2
      ;;
    *) echo "run-scenario: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" && -n "$policy" && -n "$clip" && "$blocks" -gt 0 ]] || {
  echo "usage: $0 --out DIR --policy FILE --clip FILE --blocks N [--clients N] [--rate R] [--event E]..." >&2
  exit 2
}
bin="${PREDROP_BIN:?set PREDROP_BIN to the directory holding predrop-server and predrop-client}"
server_exe="$bin/predrop-server"
client_exe="$bin/predrop-client"
[[ -x "$server_exe" && -x "$client_exe" ]] || { echo "run-scenario: no binaries in $bin" >&2; exit 1; }
[[ -r "$policy" ]] || { echo "run-scenario: no policy file $policy" >&2; exit 2; }
[[ -r "$clip" ]] || { echo "run-scenario: no clip $clip" >&2; exit 2; }
clip="$(readlink -f "$clip")"
mkdir -p "$out"
out="$(readlink -f "$out")"
rm -f "$out"/trace.csv "$out"/client-*.csv "$out"/events "$out"/*.log
config="$out/server.toml"
{
  cat <<EOF
# Written by bench/testbed/run-scenario.sh; the policy part comes from $(basename "$policy").
[server]
mode = "stream"
metrics_listen = ""
max_sessions = 16
log_level = "${SERVER_LOG_LEVEL:-warn}"
# The client's GET_PARAMETER keep-alive comes every session_timeout_s / 2; the server's RTSP idle
# timeout must not close the connection of a playing session in between (it does at 30 s with the
# defaults 60 / 30, which ends the client's run after ~29 blocks).
session_timeout_s = 20
rtsp_idle_timeout_s = 3600

[server.streams]
clip = "$clip"

[blocks]
duration_ms = ${BLOCK_MS:-1000}
pacing = "paced"

EOF
  cat "$policy"
} >"$config"

# One bed at a time on this machine: runs measure timing, two at once would disturb each other.
exec 9>/tmp/predrop-testbed.lock
flock 9

bed_up "${rate:-$BED_OPEN_RATE}" || exit 1
((cross)) && { bed_cross_sink || exit 1; }

port=8554
bed_spawn snd "$server_exe" -c "$config" --listen "$BED_SND_IP:$port" \
  --trace-csv "$out/trace.csv" --max-stages "$blocks" >"$out/server.log" 2>&1
server_pid=$BED_LAST_PID
# The server packetizes the clip before it listens; wait for the RTSP port.
for _ in $(seq 1 300); do
  if bed_in snd bash -c "exec 3<>/dev/tcp/$BED_SND_IP/$port" 2>/dev/null; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "run-scenario: the server exited; see $out/server.log" >&2
    exit 1
  fi
  sleep 0.1
done

bed_schedule "${events[@]}"
client_pids=()
for ((i = 0; i < clients; i++)); do
  bed_spawn rcv "$client_exe" "rtsp://$BED_SND_IP:$port/clip" --reference "$clip" -n "$blocks" \
    --csv "$out/client-$i.csv" --log-level warn >"$out/client-$i.log" 2>&1
  client_pids+=("$BED_LAST_PID")
  # CLIENT_STAGGER_MS: start the clients this far apart, so that their blocks (and key frames)
  # do not reach a shared bottleneck together (bench/README.md, the capacity policy in shared).
  ((i + 1 < clients)) && [[ -n "${CLIENT_STAGGER_MS:-}" ]] && sleep "$(printf '%d.%03d' $((CLIENT_STAGGER_MS / 1000)) $((CLIENT_STAGGER_MS % 1000)))"
done
status=0
for pid in "${client_pids[@]}"; do
  wait "$pid" || status=1
done
cp "$BED_DIR/events" "$out/events" 2>/dev/null || : >"$out/events"
# What the bottleneck forwarded and dropped over the whole run (includes cross traffic).
tc -s -n "$BED_RTR" qdisc show dev r1 >"$out/qdisc.txt" 2>&1
bed_down
exit $status
