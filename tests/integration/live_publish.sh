#!/usr/bin/env bash
# Live ingest end to end (docs/live.md) with the real ffmpeg as publisher and as viewer:
#   - a clip generated here (testsrc, H.264 with B-frames, 1 s GOP, 8 s) is published with
#     ffmpeg -re -c copy -f rtsp -rtsp_transport tcp rtsp://.../live?secret=...;
#   - a wrong secret is refused (403), a second publisher is refused (455);
#   - viewers: ffmpeg over RTSP/TCP (SRTP, framemd5: every picture it decodes is bit-exact with
#     the clip's, R = 0 as ffmpeg sends no Receiver Reports over TCP) and the measuring client
#     (PDFB, per-block PSNR against the clip);
#   - the publisher ends: both viewers end by themselves (RTCP BYE), the server is still up and
#     logs what holding a block cost (the added latency), and the stream is gone (404);
#   - then the same clip is published again over UDP (-rtsp_transport udp: RTP to the server's
#     port pair) and an ffmpeg viewer over UDP decodes it bit-exact.
# Loopback only; nothing is timed but the hang guards.
#   live_publish.sh SERVER_BINARY CLIENT_BINARY WORKDIR
set -euo pipefail
server="$1"
client="$2"
work="$3"
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.md5 metrics.txt live.toml

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_live_clip clip.mp4 8
ffmpeg -nostdin -v error -i clip.mp4 -f framemd5 clip.md5

start_publish_server 2

publish() { publish_clip clip.mp4 "$1" tcp "$2"; }  # publish URL LOG

fail=0
publish "$base?secret=$secret" publisher.log &
pub_pid=$!
await server.log "'live' published" || fail=1

# Refused: a wrong secret, then a second publisher with the right one.
if publish "$base?secret=wrong-secret-0123456" wrong.log; then
  echo "FAIL: a wrong secret was accepted"; fail=1
elif ! grep -q "403" wrong.log; then
  echo "FAIL: a wrong secret was not answered 403"; tail -5 wrong.log; fail=1
fi
if publish "$base?secret=$secret" second.log; then
  echo "FAIL: a second publisher was accepted"; fail=1
elif ! grep -q "455" second.log; then
  echo "FAIL: a second publisher was not answered 455"; tail -5 second.log; fail=1
fi

# Viewers, while it is published; both must end by themselves when the publisher does.
timeout -s INT 40 ffmpeg -nostdin -v info -rtsp_transport tcp -i "$base" -map 0:v \
  -f framemd5 viewer.md5 >viewer.log 2>&1 &
view_pid=$!
timeout -s INT 40 "$client" "$base" --reference clip.mp4 --log-level info >client.log 2>&1 &
client_pid=$!

pub_rc=0
wait "$pub_pid" || pub_rc=$?
view_rc=0
wait "$view_pid" || view_rc=$?
client_rc=0
wait "$client_pid" || client_rc=$?
pub_pid=""
view_pid=""
client_pid=""
fetch_metrics "$metrics_port" metrics.txt

# After the publisher left: nobody publishes, DESCRIBE gets 404.
if timeout -s INT 10 ffprobe -v error -rtsp_transport tcp "$base" >probe.log 2>&1; then
  echo "FAIL: the stream is still described after its publisher left"; fail=1
fi

# Bit-exact pictures: every picture the viewer decoded is one of the clip's.
md5_hashes clip.md5 | sort -u >clip.hashes
md5_hashes viewer.md5 >viewer.hashes
frames=$(wc -l <viewer.hashes)
foreign=$(sort viewer.hashes | comm -23 - clip.hashes | wc -l)
blocks=$(awk '/^blocks / { print $2 }' client.log | tr -d ',')
psnr=$(sed -n 's/.*mean PSNR \([0-9.]*\) dB.*/\1/p' client.log)
hold=$(grep -o "hold mean [0-9]* ms max [0-9]* ms" server.log || true)
echo "publisher rc=$pub_rc; ffmpeg viewer rc=$view_rc: $frames pictures, $foreign not the clip's;" \
  "measuring client rc=$client_rc: ${blocks:-?} blocks, mean PSNR ${psnr:-?} dB;" \
  "server: ${hold:-no hold figure}, publishes $(metric metrics.txt predrop_publishes_total)," \
  "refused $(metric metrics.txt predrop_publishes_refused_total)," \
  "packets $(metric metrics.txt predrop_publish_packets_total)"

[[ "$pub_rc" -eq 0 ]] || { echo "FAIL: the publisher failed"; tail -5 publisher.log; fail=1; }
[[ "$view_rc" -eq 0 ]] || { echo "FAIL: the ffmpeg viewer did not end cleanly"; tail -5 viewer.log; fail=1; }
[[ "$client_rc" -eq 0 ]] || { echo "FAIL: the measuring client did not end cleanly"; tail -5 client.log; fail=1; }
if [[ "$frames" -lt 100 ]]; then
  echo "FAIL: the ffmpeg viewer decoded fewer than 100 pictures"; tail -5 viewer.log; fail=1
fi
if [[ "$foreign" -ne 0 ]]; then
  echo "FAIL: $foreign pictures are not bit-exact with the clip"; fail=1
fi
if [[ "${blocks:-0}" -lt 4 ]] || ! awk -v p="${psnr:-0}" 'BEGIN { exit !(p >= 35) }'; then
  echo "FAIL: the measuring client got fewer than 4 blocks or a mean PSNR under 35 dB"
  tail -15 client.log; fail=1
fi
if [[ -z "$hold" ]]; then
  echo "FAIL: the server did not log the publication's end"; fail=1
fi

# Again over UDP: the stream is free, the publisher sends RTP from its client_port.
publish_clip clip.mp4 "$base?secret=$secret" udp publisher-udp.log &
pub_pid=$!
await server.log "'live' published" 2 || fail=1
timeout -s INT 40 ffmpeg -nostdin -v info -rtsp_transport udp -i "$base" -map 0:v \
  -f framemd5 viewer-udp.md5 >viewer-udp.log 2>&1 &
view_pid=$!
udp_pub_rc=0
wait "$pub_pid" || udp_pub_rc=$?
udp_view_rc=0
wait "$view_pid" || udp_view_rc=$?
pub_pid=""
view_pid=""
md5_hashes viewer-udp.md5 >viewer-udp.hashes
udp_frames=$(wc -l <viewer-udp.hashes)
udp_foreign=$(sort viewer-udp.hashes | comm -23 - clip.hashes | wc -l)
echo "over UDP: publisher rc=$udp_pub_rc; ffmpeg viewer rc=$udp_view_rc: $udp_frames pictures," \
  "$udp_foreign not the clip's; $(grep "'live' ended" server.log | tail -1 | sed 's/.*ended: //')"
[[ "$udp_pub_rc" -eq 0 ]] || { echo "FAIL: the UDP publisher failed"; tail -5 publisher-udp.log; fail=1; }
[[ "$udp_view_rc" -eq 0 ]] || { echo "FAIL: the UDP viewer did not end cleanly"; tail -5 viewer-udp.log; fail=1; }
if [[ "$udp_frames" -lt 100 || "$udp_foreign" -ne 0 ]]; then
  echo "FAIL: over UDP fewer than 100 pictures or pictures not bit-exact"; fail=1
fi

if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "FAIL: the server died"; tail -20 server.log; fail=1
fi
exit $fail
