#!/usr/bin/env bash
# The bed's external media pair for a browser watching predrop (issue 22; run-case.sh --media
# ext:THIS): each media flow is predrop-server in the sender namespace serving the clip over WHEP
# (its player page, the one tests/integration/webrtc_chromium uses) and a headless Chromium in the
# flow's receiver namespace that opens that page and plays for the flow's duration
# (whep-viewer.mjs). The server adapts the browser from its transport-cc feedback
# (control.browser_policy, "player" by default: the capacity policy; docs/webrtc.md).
#
#   whep-viewer.sh sender|receiver --flow I --listen IP --peer IP --out DIR --seconds N
#   whep-viewer.sh clip OUT [SECONDS]     the browser variant of the bed clip (no B-frames, Opus;
#                                          CLIP_CODEC=vp8 and OUT.webm: VP8 in three temporal layers)
#   (run-case.sh starts sender/receiver in their namespaces and ends them with SIGTERM to their
#   process group)
#
# The clip is the one run-case.sh was given (PREDROP_CLIP); it must play in a browser: H.264
# without B-frames (or VP8/VP9), audio Opus or none (make it with `whep-viewer.sh clip`).
# Flow I's server: HTTP (WHEP, the page, /metrics) on IP:8080+I, RTSP on IP:8554+I.
# Writes into DIR: whep-server-I.toml, whep-server-I.log, whep-trace-I.csv (the server's block
# trace: R, the estimate, L, loss, queue, P per block), whep-metrics-I.txt (/metrics, every 2 s
# while the flow runs, the last kept), whep-viewer-I[-K].csv and .json (the page: per second
# decoded, dropped, freezes, P; K counts a flow's segments after the first).
# Settings (environment): PREDROP_BIN (predrop-server), WHEP_BROWSER_POLICY (player),
# WHEP_PLAYER_ADAPTATION (rr: transport-cc drives capacity; fixed: R stays WHEP_PLAYER_RATE, 0),
# WHEP_ALERT_MS (control.browser_alert_ms: the interim alert from transport-cc, 0 = off; unset:
# the server's default, 80),
# WHEP_POLICY (a bench/testbed/policies/*.toml: its [control] keys, e.g. rmax, and its other sections
# join the server's config, as run-case.sh gives predrop's own runs; default none: the server's
# defaults), WHEP_SERVER_LOG (info), BLOCK_MS (1000), BED_FLOW_NICE (-5, as run-case.sh runs
# predrop's server).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
role="${1:?usage: $0 sender|receiver --flow I --listen IP --peer IP --out DIR --seconds N | clip OUT [SECONDS]}"
shift
if [[ "$role" == clip ]]; then
  CLIP_BFRAMES=0 CLIP_AUDIO=opus CLIP_CODEC="${CLIP_CODEC:-h264}" exec "$here/../make-clip.sh" "${1:?clip OUT [SECONDS]}" "${2:-150}" testsrc2
fi
flow="" listen="" peer="" out="" seconds=""
args=("$@")
while (($#)); do
  case "$1" in
    --flow) flow="$2" ;;
    --listen) listen="$2" ;;
    --peer) peer="$2" ;;
    --out) out="$2" ;;
    --seconds) seconds="$2" ;;
    *) echo "whep-viewer: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -n "$flow" && -n "$listen" && -n "$peer" && -n "$out" && -n "$seconds" ]] || {
  echo "whep-viewer: --flow, --listen, --peer, --out and --seconds are required" >&2; exit 2; }
http_port=$((8080 + flow))
rtsp_port=$((8554 + flow))

if [[ "$role" == receiver ]]; then
  exec node "$here/whep-viewer.mjs" "${args[@]}" --url "http://$peer:$http_port/clip/"
fi
[[ "$role" == sender ]] || { echo "whep-viewer: sender, receiver or clip" >&2; exit 2; }
bin="${PREDROP_BIN:?set PREDROP_BIN to the directory holding predrop-server}"
clip="${PREDROP_CLIP:?whep-viewer: no clip (give run-case.sh --clip; make one with: whep-viewer.sh clip OUT)}"
# A flow that pauses and resumes is two segments: the second keeps the first's trace and log.
tag="$flow"
[[ -e "$out/whep-server-$flow.log" ]] && tag="$flow-$(date +%s)"
{
  cat <<TOML
# Written by bench/testbed/webrtc-peer/whep-viewer.sh (one browser viewer per server).
[server]
mode = "stream"
metrics_listen = "$listen:$http_port"
max_sessions = 16
log_level = "${WHEP_SERVER_LOG:-info}"
session_timeout_s = 20
trace_csv = "$out/whep-trace-$tag.csv"

[server.streams]
clip = "$clip"

[blocks]
duration_ms = ${BLOCK_MS:-1000}
pacing = "paced"

TOML
  # The browser's keys go into the policy's [control] table (TOML allows one [control]).
  control="browser_policy = \"${WHEP_BROWSER_POLICY:-player}\"
player_adaptation = \"${WHEP_PLAYER_ADAPTATION:-rr}\"
player_rate = ${WHEP_PLAYER_RATE:-0.0}${WHEP_ALERT_MS:+
browser_alert_ms = $WHEP_ALERT_MS}"
  if [[ -n "${WHEP_POLICY:-}" ]] && grep -q '^\[control\]' "$WHEP_POLICY"; then
    awk -v keys="$control" '{ print } /^\[control\]$/ { print keys }' "$WHEP_POLICY"
  else
    [[ -n "${WHEP_POLICY:-}" ]] && cat "$WHEP_POLICY"
    printf '[control]\n%s\n' "$control"
  fi
} >"$out/whep-server-$tag.toml"
nice -n "${BED_FLOW_NICE:--5}" "$bin/predrop-server" -c "$out/whep-server-$tag.toml" \
  --listen "$listen:$rtsp_port" --loop >"$out/whep-server-$tag.log" 2>&1 &
server=$!
# The server's counters while it runs (it dies with this process group at the flow's stop).
trap 'kill -TERM "$server" 2>/dev/null; exit 0' TERM INT HUP
while kill -0 "$server" 2>/dev/null; do
  curl -fsS -m 1 "http://$listen:$http_port/metrics" >"$out/.whep-metrics-$tag.txt" 2>/dev/null &&
    mv -f "$out/.whep-metrics-$tag.txt" "$out/whep-metrics-$tag.txt"
  sleep 2 &
  wait $! || true
done
wait "$server"
