#!/usr/bin/env bash
# Interop over RTSP interleaved TCP (RFC 2326 §10.12) with the real player CLIs: RTP and RTCP as
# "$" frames on the RTSP connection, SRTP-protected as over UDP (default suite
# AES_CM_128_HMAC_SHA1_80).
#   ffmpeg:    ffmpeg -rtsp_transport tcp -i rtsp://... (key from SDP a=crypto)
#   gstreamer: gst-launch-1.0 rtspsrc protocols=tcp ... ! rtph264depay ! h264parse ! avdec_h264
#              ! fakesink (key from SDP a=key-mgmt MIKEY)
# Each asserts a minimum number of decoded video frames, no SRTP errors in the player's log, and
# from the server's /metrics that the session was interleaved and nothing was sent over UDP.
# Loopback only; the players are stopped with SIGINT after a fixed media duration, never timed.
#   interop_tcp.sh ffmpeg|gstreamer SERVER_BINARY SAMPLE WORKDIR
set -euo pipefail
player="$1"
server="$2"
sample="$3"
work="$4/$player"
mkdir -p "$work"
cd "$work"
rm -f server.log player.log frames.md5 metrics.txt

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rtsp_port=$(pick_port)
metrics_port=$(pick_port)

trap stop_server EXIT
start_server server.log --stream sample="$sample" --listen 127.0.0.1:"$rtsp_port" --loop \
  --metrics 127.0.0.1:"$metrics_port" --log-level info
url="rtsp://127.0.0.1:$rtsp_port/sample"

fail=0
case "$player" in
  ffmpeg)
    # 4 s of media (-t 4 = 120 frames at 30 fps); SIGINT if it hangs.
    timeout -s INT 15 ffmpeg -nostdin -v info -rtsp_transport tcp -i "$url" -t 4 -map 0:v \
      -f framemd5 frames.md5 >player.log 2>&1 || true
    frames=$(grep -vc '^#' frames.md5 || true)
    errors=$(grep -ciE "hmac|authentication|srtp.*(fail|error)|decrypt" player.log || true)
    min=90
    ;;
  gstreamer)
    command -v gst-launch-1.0 >/dev/null || { echo "gst-launch-1.0 missing (scripts/setup-deps.sh installs it)"; exit 1; }
    # fakesink prints one "chain" line per decoded frame with -v and silent=false; srtpdec logs
    # every packet it cannot unprotect as WARN.
    GST_DEBUG_NO_COLOR=1 GST_DEBUG=srtpdec:4 timeout -s INT 10 gst-launch-1.0 -v rtspsrc \
      location="$url" protocols=tcp latency=200 \
      ! rtph264depay ! h264parse ! avdec_h264 ! fakesink silent=false >player.log 2>&1 || true
    frames=$(grep -c "fakesink0:sink) (" player.log || true)
    errors=$(grep -E " srtpdec " player.log | grep -cE " (WARN|ERROR) " || true)
    min=60
    ;;
  *) echo "unknown player $player"; exit 2 ;;
esac
# The server's view, while it still runs: an interleaved session, frames sent, no UDP RTCP. Read
# with curl, the client README.md names for /metrics.
curl -sf --max-time 5 "http://127.0.0.1:$metrics_port/metrics" >metrics.txt || true
metric() { awk -v n="$1" '$1 == n { print $2 }' metrics.txt; }
sessions=$(metric predrop_interleaved_sessions_total)
sent=$(metric predrop_interleaved_frames_sent_total)
echo "$player over RTSP/TCP interleaved: $frames frames decoded, $errors SRTP errors;" \
  "server: ${sessions:-?} interleaved sessions, ${sent:-?} frames sent," \
  "$(metric predrop_interleaved_frames_dropped_total) dropped"
if [[ "$frames" -lt "$min" ]]; then
  echo "FAIL: fewer than $min frames"; tail -20 player.log; fail=1
fi
if [[ "$errors" -ne 0 ]]; then
  echo "FAIL: SRTP errors in the player's log"; grep -iE "hmac|authentication|srtp|decrypt" player.log | head; fail=1
fi
if [[ "${sessions:-0}" -lt 1 || "${sent:-0}" -lt 100 ]]; then
  echo "FAIL: the server did not serve an interleaved session"; fail=1
fi
exit $fail
