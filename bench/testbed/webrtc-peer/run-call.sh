#!/usr/bin/env bash
# One Chromium <-> Chromium run on the bed of bed.sh: the sender browser in the sender namespace,
# the receiver browser in the receiver namespace, N calls (RTCPeerConnections, each with Google
# Congestion Control as shipped) through the router's tbf, and a schedule of bottleneck changes,
# cross traffic and call events. Writes into OUT what call.mjs writes (sender.csv, receiver.csv,
# meta.json, t0, the browsers' logs) and, like run-scenario.sh for predrop:
#   qdisc.txt   the bottleneck's counters at the start of the calls and at the end
#   tbf.log     the bottleneck's counters every 100 ms ("EPOCH JSON" per line, `tc -s -j`): bytes
#               and packets forwarded, drops, backlog; summarize.py turns the backlog into a
#               queueing delay (backlog / rate), a coarse stand-in for per-packet captures
#   events      the bed's schedule as executed (planned s, actual s since the stream started, what)
#
#   run-call.sh --out DIR --clip FILE --duration S [--flows N] [--rate RATE]
#               [--event "T rate RATE|open"]... [--event "T cross BW SECONDS"]...
#               [--event "T start|stop|pause|resume FLOW"]... [-- CALL.MJS OPTIONS...]
#
# Bed events are timed from the first packets through the bottleneck (bed_schedule), call events
# from the moment the calls connected (call.mjs); the two differ by well under a second.
# The video cap defaults to WEBRTC_MAX_BITRATE (see README.md: the bed clip's rate on the wire).
# Takes the bed lock (/tmp/predrop-testbed.lock) unless BED_LOCKED=1. Exit 0 with "SKIP: ..." where
# namespaces are not permitted or Chromium/node are missing.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ "${BED_LOCKED:-0}" != 1 ]]; then
  exec env BED_LOCKED=1 flock /tmp/predrop-testbed.lock "$0" "$@"
fi
# shellcheck source=../bed.sh
source "$here/../bed.sh"

out="" clip="" duration=0 flows=1 rate="" bed_events=() call_events=() call_args=()
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --clip) clip="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --flows) flows="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --event)
      case "$2" in
        *" rate "* | *" cross "*) bed_events+=("$2") ;;
        *) call_events+=(--event "$2") ;;
      esac
      shift 2
      ;;
    --) shift; call_args=("$@"); break ;;
    *) echo "run-call: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" && -n "$clip" && "$duration" -gt 0 ]] || {
  echo "usage: $0 --out DIR --clip FILE --duration S [--flows N] [--rate R] [--event E]... [-- call.mjs options]" >&2
  exit 2
}
command -v node >/dev/null || bed_skip "node is not installed (apt-get install -y nodejs)"
[[ -x "${CHROMIUM:-/usr/bin/chromium}" ]] || bed_skip "chromium is not installed (apt-get install -y chromium)"
read -r y4m wav < <("$here/fake-media.sh" "$clip") || exit 1
mkdir -p "$out"
out="$(readlink -f "$out")"
rm -f "$out"/{sender.csv,receiver.csv,meta.json,t0,events,qdisc.txt,tbf.log,chromium-*.log}

bed_up "${rate:-$BED_OPEN_RATE}" || exit 1
cross=0
for ev in "${bed_events[@]}"; do [[ "$ev" == *" cross "* ]] && cross=1; done
((cross)) && { bed_cross_sink || exit 1; }
{
  echo "# before the calls"
  tc -s -n "$BED_RTR" qdisc show dev r1
} >"$out/qdisc.txt"
((${#bed_events[@]})) && bed_schedule "${bed_events[@]}"
# The bottleneck's counters every 100 ms, until bed_down ends the loop.
# shellcheck disable=SC2016  # $EPOCHREALTIME and $1 expand in the inner bash, on purpose
setsid bash -c 'while :; do printf "%s " "$EPOCHREALTIME"; tc -s -j -n "$1" qdisc show dev r1; sleep 0.1; done' \
  _ "$BED_RTR" >"$out/tbf.log" 2>/dev/null &
BED_PIDS+=("$!")

node "$here/call.mjs" --out "$out" --video "$y4m" --audio "$wav" \
  --sender-netns "$BED_SND" --receiver-netns "$BED_RCV" --flows "$flows" --duration "$duration" \
  --max-bitrate "${WEBRTC_MAX_BITRATE:-1160000}" "${call_events[@]}" "${call_args[@]}" &
call_pid=$!
BED_PIDS+=("$call_pid")
wait "$call_pid"
rc=$?
{
  echo "# at the end"
  tc -s -n "$BED_RTR" qdisc show dev r1
} >>"$out/qdisc.txt"
[[ -f "$BED_DIR/events" ]] && cp "$BED_DIR/events" "$out/events"
bed_down
exit "$rc"
