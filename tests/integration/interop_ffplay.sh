#!/usr/bin/env bash
# Interop with the real ffplay, the player README.md names first, over RTSP/UDP and RTSP/TCP with
# SRTP (default suite, key from the SDP's a=crypto), and from the SDP file of a push session
# (`--push`, no RTSP: `ffplay -protocol_whitelist file,udp,rtp,srtp,crypto -i FILE.sdp`). ffplay runs headless on SDL's dummy video and
# audio drivers, which still decode and present every frame on ffplay's clocks, and is stopped
# with SIGINT after a fixed time. Its -stats line then shows the master clock and the A-V
# difference: "A-V" appears only while both an audio and a video stream play, and a finite
# difference only once video frames have been presented. Asserted: the H.264 and AAC streams
# were found, the clock passed 3 s with a finite A-V difference below 0.5 s, no SRTP error in
# ffplay's log, and (UDP) the server read ffplay's RTCP Receiver Reports (a round trip on
# /metrics, read with curl).
#   interop_ffplay.sh udp|tcp|sdp SERVER_BINARY SAMPLE WORKDIR
set -euo pipefail
transport="$1"
server="$2"
sample="$3"
work="$4/$transport"
mkdir -p "$work"
cd "$work"
rm -f server.log player.log metrics.txt push.sdp
command -v ffplay >/dev/null || { echo "ffplay missing (Debian package ffmpeg; scripts/setup-deps.sh)"; exit 1; }

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rtsp_port=$(pick_port)
metrics_port=$(pick_port)
trap stop_server EXIT
if [[ "$transport" == sdp ]]; then
  push_port=$((40000 + (RANDOM % 10000) * 2))
  start_server server.log --stream sample="$sample" --listen 127.0.0.1:"$rtsp_port" --loop \
    --metrics 127.0.0.1:"$metrics_port" --push sample@127.0.0.1:"$push_port"@push.sdp \
    --log-level info
  [[ -s push.sdp ]] || { echo "FAIL: no SDP file written"; exit 1; }
  # shellcheck disable=SC2054 # one argument, ffmpeg's comma list
  input=(-protocol_whitelist file,udp,rtp,srtp,crypto -i push.sdp)
else
  start_server server.log --stream sample="$sample" --listen 127.0.0.1:"$rtsp_port" --loop \
    --metrics 127.0.0.1:"$metrics_port" --log-level info
  input=(-rtsp_transport "$transport" "rtsp://127.0.0.1:$rtsp_port/sample")
fi

SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy timeout -s INT 9 \
  ffplay -stats -loglevel info "${input[@]}" </dev/null >player.log 2>&1 || true
curl -sf --max-time 5 "http://127.0.0.1:$metrics_port/metrics" >metrics.txt || true

fail=0
# The stats line is rewritten with \r; the last one is ffplay's final state.
last=$(tr '\r' '\n' <player.log | grep -E '^ *[0-9.]+ A-V: *-?[0-9.]+ ' | tail -1 || true)
clock=$(awk '{print $1}' <<<"$last")
av=$(awk '{print $3}' <<<"$last")
errors=$(grep -ciE "hmac|authentication|srtp.*(fail|error)|decrypt" player.log || true)
rtt=$(awk '$1 ~ /^predrop_session_rr_rtt_seconds/ { print $2 }' metrics.txt | head -1)
echo "ffplay ($transport): clock ${clock:-?} s, A-V ${av:-?} s, $errors SRTP errors;" \
  "server: RR round trip ${rtt:-none} s"
grep -q "Video: h264" player.log || { echo "FAIL: no H.264 stream"; fail=1; }
grep -q "Audio: aac" player.log || { echo "FAIL: no AAC stream"; fail=1; }
if [[ -z "$last" ]] || ! awk -v c="$clock" -v d="$av" 'BEGIN { exit !(c >= 3 && d < 0.5 && d > -0.5) }'; then
  echo "FAIL: ffplay did not play audio and video for 3 s in sync"; tr '\r' '\n' <player.log | tail -20; fail=1
fi
if [[ "$errors" -ne 0 ]]; then
  echo "FAIL: SRTP errors in ffplay's log"; grep -iE "hmac|authentication|srtp|decrypt" player.log | head; fail=1
fi
# Over UDP ffplay sends RTCP RRs (plain RTCP, as ffmpeg 5.1 does); one that names an SR gives a
# round trip >= 0. Over TCP ffmpeg sends no RTCP at all.
if [[ "$transport" == udp ]] && ! awk -v r="${rtt:--1}" 'BEGIN { exit !(r >= 0) }'; then
  echo "FAIL: the server read no RR from ffplay"; fail=1
fi
exit $fail
