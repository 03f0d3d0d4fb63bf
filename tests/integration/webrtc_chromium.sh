#!/usr/bin/env bash
# WebRTC egress in a real browser (issue 22, docs/webrtc.md): clips generated here with the ffmpeg
# CLI are served by predrop-server, and Debian's headless Chromium opens each stream's WHEP player
# page (/<stream>/), driven over the DevTools pipe by webrtc_chromium.mjs: ICE and DTLS must
# connect and getStats() must count at least MIN frames decoded in PLAY_S seconds of a 30 fps
# clip, with no ICE/DTLS failure. Required: VP8 and H.264 constrained baseline and VP9. Reported
# only: H.264 High with B-frames under the offered 42e01f payload type (docs/webrtc.md says why
# it does not play). Transport-cc (docs/webrtc.md "Adaptation from transport-cc"): for every
# clip that plays, /metrics must count the browser's transport-cc feedback and the block reports
# made from it, and the block trace must hold reported blocks (L > 0) on which the capacity policy
# decided (its estimate set). The H.264 baseline clip runs with control.browser_policy = "client"
# (the exact rule, which reads P): at least 2 of its block reports must reach the controller
# with the page's P for the block (predrop_webrtc_page_quality_blocks_total, and P > 0 in the
# trace). Audio (docs/webrtc.md "Audio"): the VP8 clip carries Opus, which
# must play beside the video (>= MIN_AUDIO packets in PLAY_S, < 20 % of its samples concealed);
# the H.264 baseline clip carries AAC, whose audio section the answer rejects (no audio packet
# arrives) and the server log says why, once. Each figures line carries the page's quality per
# second of play (docs/webrtc.md "Quality in the page": decoded, dropped, freezes, freeze ms,
# P), and the server must have counted at least PLAY_S - 1 of them posted by the page. Then
# webrtc_forged.py: a forged STUN check and a stranger's DTLS get no
# answer and are counted. Exits 77 (ctest SKIP_RETURN_CODE) without chromium, node or ffmpeg.
#   webrtc_chromium.sh SERVER_BINARY WORKDIR
set -euo pipefail
# shellcheck disable=SC2034  # read by lib.sh start_server
server="$1"
work="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"
# shellcheck source=lib.sh
source "$here/lib.sh"
require_tools "$chromium" node ffmpeg python3
play_s=5
min_frames=120 # of 150 in 5 s at 30 fps
min_audio=200  # Opus packets of 250 in 5 s (20 ms each)
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.toml figures.jsonl

# name|file|ffmpeg encoding arguments|required|audio (opus, aac or none)|control.browser_policy
# ("client": the exact rule, fed with transport-cc's L and the page's P per block)
clips=(
  "vp8|vp8.webm|-c:v libvpx -b:v 800k -g 30 -deadline realtime -cpu-used 8|yes|opus|player"
  "h264_baseline|h264b.mp4|-c:v libx264 -profile:v baseline -bf 0 -g 30 -b:v 800k|yes|aac|client"
  "vp9|vp9.webm|-c:v libvpx-vp9 -b:v 800k -g 30 -deadline realtime -cpu-used 8|yes|none|player"
  "h264_high_bframes|h264h.mp4|-c:v libx264 -profile:v high -bf 3 -g 30 -b:v 800k|no|none|player"
)

# The value of a counter on the server's /metrics (0 when absent).
metric() {
  curl -fsS "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }'
}
# Blocks of the trace that a report reached and the policy decided on (the capacity policy
# unless $2 is "client"), those of them with a P above 0 (the page's), and the last one's L, P,
# loss, queueing delay and estimate.
reported_blocks() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))
        if r["reported"] == "1" and float(r["reception_period_us"]) > 0
        and (r["capacity_kbps"] or sys.argv[2] == "client")]
with_p = [r for r in rows if float(r["performance"]) > 0]
last = rows[-1] if rows else {}
print(len(rows), len(with_p), " ".join(f"{k}={last.get(k, '')}" for k in
      ("stage", "rate", "reception_period_us", "performance", "received", "announced",
       "queue_delay_us", "capacity_kbps", "reason")))
PY
}
trap stop_server EXIT
failed=0
for c in "${clips[@]}"; do
  IFS='|' read -r name file args required audio browser <<<"$c"
  sound=()
  want_audio=0
  case "$audio" in
  opus)
    sound=(-f lavfi -i sine=frequency=440:duration=10 -c:a libopus -b:a 64k)
    want_audio=$min_audio
    ;;
  aac) sound=(-f lavfi -i sine=frequency=440:duration=10 -c:a aac -b:a 96k) ;;
  esac
  # shellcheck disable=SC2086  # the encoder arguments are words
  ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=s=640x360:r=30:d=10 "${sound[@]:0:4}" \
    $args "${sound[@]:4}" "$file"
  rtsp_port=$(pick_port)
  metrics_port=$(pick_port)
  cat >"$name.toml" <<TOML
[server]
metrics_listen = "127.0.0.1:$metrics_port"
trace_csv = "$work/$name.trace.csv"
[server.streams]
$name = "$work/$file"
[control]
browser_policy = "$browser"
TOML
  start_server "$name.server.log" -c "$name.toml" --listen 127.0.0.1:"$rtsp_port" --loop \
    --log-level info
  if node "$here/webrtc_chromium.mjs" "http://127.0.0.1:$metrics_port/$name/" "$work" \
    "$min_frames" "$play_s" "$want_audio" >"$name.browser.out" 2>&1; then
    echo "$name: plays: $(head -1 "$name.browser.out")"
  elif [[ "$required" == yes ]]; then
    echo "$name: FAILED"
    cat "$name.browser.out"
    failed=1
  else
    echo "$name: does not play (expected, docs/webrtc.md): $(head -1 "$name.browser.out")"
  fi
  head -1 "$name.browser.out" | sed "s/^{/{\"clip\":\"$name\",/" >>figures.jsonl
  twcc=$(metric "$metrics_port" predrop_webrtc_twcc_feedback_total)
  twcc_reports=$(metric "$metrics_port" predrop_webrtc_twcc_reports_total)
  echo "$name: transport-cc: $twcc feedback messages, $twcc_reports block reports"
  # NACK/RTX and PLI/FIR (docs/webrtc.md): shown (loopback loses nothing, so NACKs are rare).
  echo "$name: nacks $(metric "$metrics_port" predrop_webrtc_nacks_total)," \
    "rtx $(metric "$metrics_port" predrop_webrtc_rtx_packets_total)," \
    "rtx unknown $(metric "$metrics_port" predrop_webrtc_rtx_unknown_total)," \
    "key frame requests $(metric "$metrics_port" predrop_webrtc_key_frame_requests_total)"
  if [[ "$required" == yes ]] && ((twcc == 0 || twcc_reports == 0)); then
    echo "$name: FAILED: no transport-cc feedback or no block report made from it"
    failed=1
  fi
  # The page posts each second's quality to its session (docs/webrtc.md "Quality in the page").
  page_reports=$(metric "$metrics_port" predrop_webrtc_page_reports_total)
  echo "$name: $page_reports quality reports from the page"
  if [[ "$required" == yes ]] && ((page_reports < play_s - 1)); then
    echo "$name: FAILED: the page's quality reports did not reach the server"
    failed=1
  fi
  # Block reports that reached the controller with the page's P for the block (docs/webrtc.md
  # "Quality in the page"): the exact rule waits for it; capacity takes a report at once.
  quality_blocks=$(metric "$metrics_port" predrop_webrtc_page_quality_blocks_total)
  echo "$name: $quality_blocks block reports with the page's P ($browser policy)"
  if [[ "$required" == yes && "$browser" == client ]] && ((quality_blocks < 2)); then
    echo "$name: FAILED: the controller got the page's P for fewer than 2 blocks"
    failed=1
  fi
  if [[ "$audio" == aac ]]; then
    said=$(grep -c "its audio is not sent to browsers" "$name.server.log" || true)
    echo "$name: AAC audio refused, said $said time(s) in the log"
    if ((said != 1)); then
      echo "$name: FAILED: the log should say once why the AAC audio is not sent"
      failed=1
    fi
  fi
  if [[ "$name" == vp8 ]]; then
    python3 "$here/webrtc_forged.py" "$metrics_port" "$name" || failed=1
  fi
  stop_server
  read -r blocks blocks_p last < <(reported_blocks "$name.trace.csv" "$browser")
  echo "$name: $blocks blocks reported to the $browser policy ($blocks_p with P > 0); last: $last"
  if [[ "$required" == yes ]] && ((blocks == 0)); then
    echo "$name: FAILED: no block measurement reached the controller"
    failed=1
  fi
  if [[ "$required" == yes && "$browser" == client ]] && ((blocks_p < 2)); then
    echo "$name: FAILED: the trace shows the page's P on fewer than 2 blocks"
    failed=1
  fi
done
exit $failed
