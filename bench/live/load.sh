#!/usr/bin/env bash
# One publisher -> N viewers on one server core (issue 23 item 7), next to the same N viewers of a
# file stream: predrop-server with one worker pinned to CPU 0; on CPU 1 an ffmpeg that publishes
# a generated 1 Mbit/s H.264 clip in real time (-re, -c copy, looped) and predrop-load with N
# full RTSP + SRTP + PDFB clients on one thread (configs/load/capacity-1000.toml). Per run: the
# sessions held, packets per second, the server's CPU (predrop-load reads /proc of the server),
# late stages (the server's predrop_late_blocks_total) and the clients' loss. Real sockets on
# loopback; nothing is mocked. Results go to OUT (default /tmp/predrop-live-load): one
# predrop-load summary per run and table.md.
#   bench/live/load.sh [N ...]                       (default: 300 1000)
#   BUILD=build/release OUT=/tmp/x bench/live/load.sh 1000
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build/release}"
out="${OUT:-/tmp/predrop-live-load}"
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(300 1000)
hold="${HOLD_S:-30}"
for tool in ffmpeg taskset "$build/server/predrop-server" "$build/load/predrop-load"; do
  command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done
mkdir -p "$out"
cd "$out"
clip="$out/clip.mp4"
if [[ ! -s "$clip" ]]; then
  # 1 Mbit/s, 25 fps, a key frame every second (one block), no B-frames: what a camera sends.
  ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=s=640x360:r=25:d=60 -c:v libx264 \
    -preset veryfast -tune zerolatency -b:v 1000k -maxrate 1000k -bufsize 500k -g 25 \
    -keyint_min 25 -bf 0 "$clip"
fi
secret="load-test-secret-0123456789"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

describe() {  # $1 = port, $2 = stream: prints the RTSP status line of a DESCRIBE
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 0
  printf 'DESCRIBE rtsp://127.0.0.1:%s/%s RTSP/1.0\r\nCSeq: 1\r\n\r\n' "$1" "$2" >&3
  local line=""
  read -r -t 2 line <&3 || true
  exec 3<&-
  printf '%s\n' "$line"
}

run() {  # $1 = live|file, $2 = N
  local kind="$1" n="$2" port mport
  port=$((20000 + RANDOM % 20000))
  mport=$((port + 1))
  cat >server.toml <<EOF
[server]
rtsp_listen = "127.0.0.1:$port"
max_sessions = 3000
max_sessions_per_address = 3000
max_rtsp_connections = 4000
metrics_listen = "127.0.0.1:$mport"
log_level = "warn"
[server.streams]
file = "$clip"
[server.streams.live]
source = "publish"
publish_secret = "$secret"
[blocks]
duration_ms = 1000
pacing = "paced"
rtp_payload_bytes = 1200
[control]
policy = "basic"
EOF
  taskset -c 0 "$build/server/predrop-server" -c server.toml --loop --workers 1 \
    >"server-$kind-$n.log" 2>&1 &
  local server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  local publisher_pid=""
  if [[ "$kind" == live ]]; then
    taskset -c 1 ffmpeg -nostdin -v error -re -stream_loop -1 -i "$clip" -c copy \
      -rtsp_transport tcp -f rtsp "rtsp://127.0.0.1:$port/live?secret=$secret" \
      >"publisher-$n.log" 2>&1 &
    publisher_pid=$!
    pids+=("$publisher_pid")
    # Viewers join once the stream is published (a DESCRIBE before that is 404).
    local status=""
    for _ in $(seq 50); do
      status=$(describe "$port" live)
      [[ "$status" == *" 200 "* ]] && break
      sleep 0.2
    done
    [[ "$status" == *" 200 "* ]] || { echo "live: not published ($status)" >&2; return 1; }
    sleep 2 # a few blocks in the ring
  fi
  taskset -c 1 "$build/load/predrop-load" "$root/configs/load/capacity-1000.toml" \
    --url "rtsp://127.0.0.1:$port/$kind" --metrics "127.0.0.1:$mport" --server-pid "$server_pid" \
    --clients "$n" --threads 1 --hold "$hold" --label "$kind-$n" --csv "load-$kind-$n.csv" \
    --summary-csv "$out/summary.csv" -q | tee "load-$kind-$n.txt"
  [[ -n "$publisher_pid" ]] && kill "$publisher_pid" 2>/dev/null || true
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}

rm -f summary.csv
for n in "${counts[@]}"; do
  run live "$n"
  run file "$n"
done
echo "load: summaries in $out/load-*.txt, $out/summary.csv"
