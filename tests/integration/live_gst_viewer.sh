#!/usr/bin/env bash
# GStreamer watches a live stream (issue 23 item 9, docs/live.md "Tests"): the real ffmpeg
# publishes a clip made here (H.264 with B-frames, 1 s GOP, 8 s) in real time, and
# gst-launch-1.0 rtspsrc plays it (SRTP keyed by MIKEY, as for a file stream): rtph264depay,
# h264parse, avdec_h264, raw I420 pictures into a file. Every picture GStreamer decodes must be
# bit-exact with one of the clip's (the md5 of each picture against the clip's framemd5, R = 0),
# at least 100 of the 200; the viewer ends by itself when the publisher does (the server's RTCP
# BYE), and the server stays up. Once over RTSP/TCP (interleaved: nothing can be lost), once over
# UDP. Over UDP a receiver can lose packets in its own socket buffer on a loaded machine: a run
# whose jitter buffer reports lost packets is inconclusive and is tried again (at most three
# times, as lib.sh's retry_lossy does for ffmpeg's "RTP: missed"). Loopback only; nothing is timed
# but the hang guards.
#   live_gst_viewer.sh SERVER_BINARY WORKDIR
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
server="$1"
work="$2"
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.md5 ./*.hashes ./*.yuv live.toml

command -v gst-launch-1.0 >/dev/null || { echo "FAIL: gst-launch-1.0 missing (scripts/setup-deps.sh)"; exit 1; }
for element in rtspsrc rtph264depay h264parse avdec_h264; do
  if ! gst-inspect-1.0 "$element" >/dev/null 2>&1; then
    echo "FAIL: GStreamer element $element missing (scripts/setup-deps.sh)"
    exit 1
  fi
done

make_live_clip clip.mp4 8
ffmpeg -nostdin -v error -i clip.mp4 -f framemd5 clip.md5
md5_hashes clip.md5 | sort -u >clip.hashes
picture_bytes=$((320 * 240 * 3 / 2))  # one I420 picture of the clip

start_publish_server 1

# yuv_hashes FILE: the md5 of each I420 picture in FILE, a line a picture (as framemd5's hash).
yuv_hashes() {
  python3 - "$1" "$picture_bytes" <<'EOF'
import hashlib, sys
with open(sys.argv[1], "rb") as f:
    while True:
        picture = f.read(int(sys.argv[2]))
        if len(picture) < int(sys.argv[2]):
            break
        print(hashlib.md5(picture).hexdigest())
EOF
}

fail=0
run=0
# gst_view PROTOCOL: one publication and a GStreamer viewer over PROTOCOL (tcp or udp); prints
# what it saw. Returns 0 when every check passed, 2 when the viewer's jitter buffer lost packets
# (inconclusive), 1 otherwise.
gst_view() {
  local protocol="$1" pub_rc=0 view_rc=0 frames foreign lost
  run=$((run + 1))
  rm -f "gst-$protocol.yuv" "gst-$protocol.log"
  publish_clip clip.mp4 "$base?secret=$secret" tcp "publisher-$protocol.log" &
  pub_pid=$!
  await server.log "'live' published" "$run" || return 1
  # The jitter buffer logs each packet it gives up as lost at level 5 ("Packet #n lost").
  GST_DEBUG_NO_COLOR=1 GST_DEBUG=rtpjitterbuffer:5 timeout -s INT -k 5 40 gst-launch-1.0 -e \
    rtspsrc location="$base" protocols="$protocol" latency=200 \
    ! rtph264depay ! h264parse ! avdec_h264 ! video/x-raw,format=I420 \
    ! filesink location="gst-$protocol.yuv" >"gst-$protocol.log" 2>&1 &
  view_pid=$!
  count_foreign_pictures "gst-$protocol.hashes" yuv_hashes "gst-$protocol.yuv"
  lost=$(grep -cE "Packets? #[0-9]+( -> #[0-9]+)? lost" "gst-$protocol.log" || true)
  echo "GStreamer viewer over $protocol (attempt): publisher rc=$pub_rc, gst-launch rc=$view_rc;" \
    "$frames pictures, $foreign not the clip's; packets reported lost: $lost"
  await server.log "'live' ended" "$run" || return 1
  if [[ "$protocol" == udp && "$lost" -ne 0 ]]; then
    return 2
  fi
  local ok=0
  [[ "$pub_rc" -eq 0 ]] || { echo "FAIL: the publisher failed"; tail -5 "publisher-$protocol.log"; ok=1; }
  if [[ "$view_rc" -ne 0 ]]; then
    echo "FAIL: gst-launch over $protocol did not end by itself after the publisher (rc $view_rc)"
    grep -E "ERROR|WARN|EOS" "gst-$protocol.log" | grep -v rtpjitterbuffer | tail -8
    ok=1
  fi
  if [[ "$frames" -lt 100 ]]; then
    echo "FAIL: GStreamer over $protocol decoded fewer than 100 of the 200 pictures"
    grep -E "ERROR|WARN" "gst-$protocol.log" | grep -v rtpjitterbuffer | tail -8
    ok=1
  fi
  if [[ "$foreign" -ne 0 ]]; then
    echo "FAIL: over $protocol $foreign pictures GStreamer decoded are not bit-exact with the clip's"
    ok=1
  fi
  return "$ok"
}

gst_view tcp || fail=1
result=0
retry_lossy "GStreamer viewer over udp" gst_view udp || result=$?
[[ "$result" -eq 0 ]] || fail=1

if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "FAIL: the server died"; tail -20 server.log; fail=1
fi
exit $fail
