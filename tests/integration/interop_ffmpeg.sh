#!/usr/bin/env bash
# Interop with an independent client: the real ffmpeg/ffprobe CLI plays predrop-server's RTSP URL
# (UDP, SRTP keyed by SDP a=crypto) and decodes frames; then plays the SDP file the server writes
# for a push session (no RTSP). Usage: interop_ffmpeg.sh SERVER_BINARY SAMPLE WORKDIR
set -euo pipefail
server="$1"
sample="$2"
work="$3"
mkdir -p "$work"
cd "$work"
rm -f server.log ffmpeg-rtsp.log ffmpeg-sdp.log push.sdp

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rtsp_port=$(pick_port)
push_port=$((40000 + (RANDOM % 10000) * 2))

trap stop_server EXIT
start_server server.log --stream sample="$sample" --listen 127.0.0.1:"$rtsp_port" \
  --push sample@127.0.0.1:"$push_port"@push.sdp --loop --log-level info

fail=0
# 1. ffprobe sees both streams through RTSP DESCRIBE (SDP with a=crypto and a=extmap).
probe=$(timeout 20 ffprobe -v error -rtsp_transport udp -show_entries stream=codec_name \
  -of csv=p=0 "rtsp://127.0.0.1:$rtsp_port/sample")
echo "ffprobe streams: $(echo $probe)"
echo "$probe" | grep -q h264 || { echo "FAIL: ffprobe found no h264 stream"; fail=1; }
echo "$probe" | grep -q aac || { echo "FAIL: ffprobe found no aac stream"; fail=1; }

# 2. ffmpeg plays the RTSP URL over UDP with SRTP and decodes video frames. A receiving ffmpeg
#    holds its last frame back, so it is stopped with SIGINT after 4 s rather than waited for.
timeout -s INT 6 ffmpeg -nostdin -v info -rtsp_transport udp -i "rtsp://127.0.0.1:$rtsp_port/sample" \
  -t 4 -map 0:v -f framemd5 rtsp.md5 >ffmpeg-rtsp.log 2>&1 || true
frames=$(grep -vc '^#' rtsp.md5 || true)
echo "RTSP: ffmpeg decoded $frames video frames"
[[ "$frames" -ge 60 ]] || { echo "FAIL: too few frames over RTSP"; tail -20 ffmpeg-rtsp.log; fail=1; }
if grep -qiE "hmac|authentication|srtp.*(fail|error)" ffmpeg-rtsp.log; then
  echo "FAIL: SRTP errors in ffmpeg's log"; fail=1
fi

# 3. ffmpeg plays the SDP file of the push session (SRTP from a=crypto, no RTSP at all).
[[ -s push.sdp ]] || { echo "FAIL: no SDP file written"; exit 1; }
timeout -s INT 6 ffmpeg -nostdin -v info -protocol_whitelist file,udp,rtp,srtp,crypto \
  -i push.sdp -t 3 -map 0:v -f framemd5 sdp.md5 >ffmpeg-sdp.log 2>&1 || true
frames=$(grep -vc '^#' sdp.md5 || true)
echo "SDP file: ffmpeg decoded $frames video frames"
[[ "$frames" -ge 30 ]] || { echo "FAIL: too few frames from the SDP file"; tail -20 ffmpeg-sdp.log; cat push.sdp; fail=1; }

exit $fail
