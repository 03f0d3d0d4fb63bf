#!/usr/bin/env bash
# A pulled stream end to end (docs/live.md "Pull", issue 23 item 2), with real ffmpeg on both
# ends and two predrop-servers, an origin and an edge:
#   ffmpeg -re -f rtsp ──publish──▶ origin predrop ──RTSP/TCP pull──▶ edge predrop ──▶ ffmpeg viewer
#   - the edge's stream is source = "rtsp://origin/live" (pull = "on-demand"): before any viewer
#     it has only DESCRIBEd the origin; a viewer's SETUP starts the pull;
#   - the origin lists the edge (edges = [...]): the ffmpeg viewer asks the origin, is redirected
#     (302) to the edge and decodes pictures bit-exact with the clip (RTSP/TCP, R = 0);
#   - the origin is killed (SIGKILL) mid-stream and started again on the same port, and the
#     clip published again: the edge logs and counts the failures (refused while it is down,
#     404 until the publisher is back), backs off, reconnects, and the same viewer goes on
#     decoding pictures of the second run; nothing crashes;
#   - a second edge stream pulls "always" from a port where nobody listens: counted failures,
#     a growing back-off, the server stays up.
# Loopback only; nothing is timed but the hang guards.
#   pull_relay.sh SERVER_BINARY WORKDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
server="$1"
work="$2"
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.md5 ./*.toml ./*.txt ./*.hashes

# shellcheck source=lib.sh
source "$here/lib.sh"

make_live_clip clip.mp4 8
ffmpeg -nostdin -v error -i clip.mp4 -f framemd5 clip.md5

origin_port=$(pick_port)
edge_port=$(pick_port)
edge_metrics=$(pick_port)
dead_port=$(pick_port)
origin_metrics=$(pick_port)
secret="test-secret-0123456789"
write_config origin.toml "$origin_port" "$origin_metrics" 1 <<EOF
[server.streams.live]
source = "publish"
publish_secret = "$secret"
edges = ["rtsp://127.0.0.1:$edge_port/relay"]
EOF
write_config edge.toml "$edge_port" "$edge_metrics" 2 <<EOF
[server.streams.relay]
source = "rtsp://127.0.0.1:$origin_port/live"

[server.streams.nowhere]
source = "rtsp://127.0.0.1:$dead_port/none"
pull = "always"
EOF

origin_pid=""
edge_pid=""
pub_pid=""
view_pid=""
trap 'kill "$pub_pid" "$view_pid" "$origin_pid" "$edge_pid" 2>/dev/null || true; wait' EXIT

start_origin() {  # start_origin LOG
  "$server" -c origin.toml 2>"$1" &
  origin_pid=$!
  await "$1" "serving rtsp" 1
}
publish() {  # publish LOG: ffmpeg sends the clip in real time to the origin
  publish_clip clip.mp4 "rtsp://127.0.0.1:$origin_port/live?secret=$secret" tcp "$1" &
  pub_pid=$!
}
metrics() { fetch_metrics "$edge_metrics" "$1"; }

fail=0
start_origin origin-1.log
publish publisher-1.log
await origin-1.log "'live' published" 1
"$server" -c edge.toml 2>edge.log &
edge_pid=$!
await edge.log "serving rtsp" 1
await edge.log "'relay': described" 1
metrics metrics-idle.txt
idle_state=$(metric metrics-idle.txt 'predrop_pull_state{stream="relay",state="idle"}')
idle_plays=$(metric metrics-idle.txt 'predrop_pull_plays_total{stream="relay"}')
if [[ "$idle_state" != 1 || "$idle_plays" != 0 ]]; then
  echo "FAIL: on-demand: before any viewer the pull is not idle (state $idle_state, plays $idle_plays)"
  fail=1
fi

# The viewer asks the origin, which redirects it (302) to the edge; the edge's own pull is
# served (X-Predrop-Relay). The viewer waits through the origin's restart.
timeout -s INT 60 ffmpeg -nostdin -v info -rtsp_transport tcp \
  -i "rtsp://127.0.0.1:$origin_port/live" -map 0:v -flush_packets 1 -f framemd5 viewer.md5 >viewer.log 2>&1 &
view_pid=$!
await edge.log "'relay': playing" 1
# Some pictures through the relay, then the origin dies with its publisher.
for _ in $(seq 200); do
  [[ -s viewer.md5 && "$(grep -vc '^#' viewer.md5)" -ge 40 ]] && break
  sleep 0.1
done
before=$(grep -vc '^#' viewer.md5 || true)
fetch_metrics "$origin_metrics" metrics-origin.txt
redirects=$(metric metrics-origin.txt predrop_redirects_total)
kill -9 "$origin_pid"
wait "$origin_pid" 2>/dev/null || true
origin_pid=""
wait "$pub_pid" 2>/dev/null || true
pub_pid=""
await edge.log "'relay': .*again in" 2
# The origin again on the same port, and the clip published again.
start_origin origin-2.log
publish publisher-2.log
await origin-2.log "'live' published" 1
await edge.log "'relay': playing" 2
wait "$pub_pid" || true
pub_pid=""
# The publisher's end ends the origin's stream: the edge backs off again, the viewer waits;
# it is stopped here.
await edge.log "'relay': the upstream sent an RTCP BYE" 1 || true
kill -INT "$view_pid" 2>/dev/null || true
wait "$view_pid" 2>/dev/null || true
view_pid=""
metrics metrics-end.txt

md5_hashes clip.md5 | sort -u >clip.hashes
md5_hashes viewer.md5 >viewer.hashes
frames=$(wc -l <viewer.hashes)
foreign=$(sort -u viewer.hashes | comm -23 - clip.hashes | wc -l)  # the clip plays twice
after=$((frames - before))
plays=$(metric metrics-end.txt 'predrop_pull_plays_total{stream="relay"}')
failures=$(metric metrics-end.txt 'predrop_pull_failures_total{stream="relay"}')
dead_failures=$(metric metrics-end.txt 'predrop_pull_failures_total{stream="nowhere"}')
dead_row=$(metric metrics-end.txt 'predrop_pull_failures_in_a_row{stream="nowhere"}')
echo "origin: ${redirects:-?} viewer(s) redirected to the edge; edge viewer: $frames pictures ($before before the origin's restart, $after after)," \
  "$foreign not the clip's; relay: plays ${plays:-?}, failures ${failures:-?};" \
  "nowhere: failures ${dead_failures:-?} (${dead_row:-?} in a row)"
grep "'relay'" edge.log | sed 's/^.*\] //' | head -20

if [[ "${redirects:-0}" -lt 1 ]]; then
  echo "FAIL: the origin redirected nobody (predrop_redirects_total ${redirects:-?})"; fail=1
fi
if [[ "$before" -lt 40 || "$after" -lt 100 ]]; then
  echo "FAIL: the viewer did not decode pictures on both sides of the origin's restart"
  tail -5 viewer.log; fail=1
fi
if [[ "$foreign" -ne 0 ]]; then
  echo "FAIL: $foreign pictures are not bit-exact with the clip"; fail=1
fi
if [[ "${plays:-0}" -lt 2 || "${failures:-0}" -lt 1 ]]; then
  echo "FAIL: the pull did not reconnect (plays ${plays:-?}, failures ${failures:-?})"; fail=1
fi
if [[ "${dead_failures:-0}" -lt 3 ]]; then
  echo "FAIL: pulling from a closed port was not retried (${dead_failures:-?} failures)"; fail=1
fi
if ! kill -0 "$edge_pid" 2>/dev/null; then
  echo "FAIL: the edge died"; tail -20 edge.log; fail=1
fi
exit $fail
