#!/usr/bin/env bash
# WebRTC egress per core (bench/perf/README.md "WebRTC egress"): predrop-server with one worker
# on CPU 0 serves N scripted WHEP viewers (`predrop-load whep`: WHEP POST, STUN with
# USE-CANDIDATE, DTLS, SRTP verified on every 16th packet, transport-cc feedback every 50 ms) on
# CPU 1; in the same run, for each N, the peers of the same clip: N RTSP light clients (RTSP +
# SRTP + PDFB, `predrop-load` with configs/load/capacity-1000.toml) against a fresh server, and
# the machine's packet limit (protect + sendmmsg, `predrop_egress_bench`, when built).
#
#   bench/perf/webrtc.sh [N ...]          # default: 10 50 100 200 500 1000
#   BUILD=build/release HOLD=20 bench/perf/webrtc.sh 100
#   PEERS=0 FEEDBACK_MS=100 bench/perf/webrtc.sh 500   # WHEP rows only, feedback every 100 ms
#   CLIP=thumb.mp4 PEERS=0 bench/perf/webrtc.sh 300    # another clip (the join cost: a small one)
#   RAMP=2 PEERS=0 bench/perf/webrtc.sh 600           # all joins within 2 s (default: N/50 s, >= 2)
#   FLOOD=1 PEERS=0 bench/perf/webrtc.sh 300          # a hostile neighbour during the window
#                                                     # (bench/perf/webrtc_flood.py; FLOOD_RATE=)
#
# Results: $BUILD/bench-results/webrtc-<time>/ (console logs and whep.csv, load-summary.csv).
# Loopback only; every process it starts is stopped on exit.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD:-$root/build/release}"
[[ "$build" = /* ]] || build="$root/$build"
out="$build/bench-results/webrtc-$(date +%Y%m%d-%H%M%S)"
hold="${HOLD:-20}"
feedback_ms="${FEEDBACK_MS:-50}"
peers="${PEERS:-1}"
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10 50 100 200 500 1000)
mkdir -p "$out"
# shellcheck source=../../tests/integration/lib.sh
source "$root/tests/integration/lib.sh"
# As run.sh: the CPU first, and every background process stopped on exit.
ask_cpu_first
stop_pids_on_exit

server_bin="$build/server/predrop-server"
load="$build/load/predrop-load"
egress="$build/bench/predrop_egress_bench"
for b in "$server_bin" "$load"; do
  [[ -x "$b" ]] || { echo "build $b first (cmake --build --preset release --target predrop-server predrop-load)"; exit 2; }
done

# 1 Mbit/s of video only (what a browser is sent from an AAC file anyway): H.264 constrained
# baseline, GOP 30, no B-frames (browsers render no B-frames, docs/webrtc.md "In Chromium"),
# 10 s, looped by the server.
clip="$out/clip-1mbit-video.mp4"
# CLIP=FILE serves that file instead (e.g. a 5 fps thumbnail clip, so that the media's CPU is
# small beside the joins' and "server CPU per join" rests on little subtraction).
if [[ -n "${CLIP:-}" ]]; then
  cp "$CLIP" "$clip"
else
  ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi -i "testsrc2=size=640x360:rate=30:duration=10" \
    -c:v libx264 -preset veryfast -profile:v baseline -pix_fmt yuv420p -b:v 1000k -maxrate 1100k \
    -bufsize 1000k -x264-params "keyint=30:min-keyint=30:scenecut=0" "$clip"
fi

port=$((20000 + RANDOM % 20000))
mport=$((port + 1))
run_server() {
  cat > "$out/server.toml" <<EOF
[server]
mode = "stream"
rtsp_listen = "127.0.0.1:$port"
max_sessions = 3000
max_sessions_per_address = 3000  # every client comes from 127.0.0.1
max_rtsp_connections = 4000
metrics_listen = "127.0.0.1:$mport"
srtp = "AES_CM_128_HMAC_SHA1_80"  # what DTLS-SRTP negotiates with a browser too
log_level = "warn"
[server.streams]
clip = "$clip"
[blocks]
duration_ms = 1000
pacing = "paced"
rtp_payload_bytes = 1200
[control]
policy = "basic"
EOF
  taskset -c 0 "$server_bin" -c "$out/server.toml" --loop --workers 1 >> "$out/server.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server did not start" >&2
  return 1
}

cd "$out"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/run.txt"
for n in "${sizes[@]}"; do
  ramp=${RAMP:-$(( n / 50 > 2 ? n / 50 : 2 ))}
  echo "== $n sessions (ramp $ramp s, hold $hold s), load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run.txt"
  if [[ "$peers" == 1 && -x "$egress" ]]; then
    # The machine's limit for N contexts (the "series" column) beside the sink-socket egress row.
    taskset -c 0 "$egress" --media "$clip" --suite AES_CM_128_HMAC_SHA1_80 --pacing paced --gso \
      --sessions "$n" --ramp 2 --warmup 3 --seconds 5 --machine-seconds 1 --skip-ffmpeg \
      --csv "$out/egress.csv" 2>&1 | tee -a "$out/run.txt"
  fi
  run_server
  label="whep-$n-fb$feedback_ms"
  if [[ "${FLOOD:-0}" == 1 ]]; then
    label="$label-flood"
    taskset -c 1 python3 "$root/bench/perf/webrtc_flood.py" "$mport" clip "$((ramp + 3))" "$hold" \
      "${FLOOD_RATE:-20000}" >> "$out/flood.txt" 2>&1 &
    pids+=("$!")
  fi
  taskset -c 1 "$load" -q whep --http "127.0.0.1:$mport" --stream clip --clients "$n" \
    --ramp "$ramp" --settle 3 --hold "$hold" --server-pid "$server_pid" --csv "$out/whep.csv" \
    --feedback-ms "$feedback_ms" --label "$label" | tee -a "$out/run.txt" || true
  if [[ "${FLOOD:-0}" == 1 ]]; then
    wait "${pids[-1]}" 2>/dev/null || true
    tee -a "$out/run.txt" < "$out/flood.txt"
    rm -f "$out/flood.txt"
  fi
  stop_server
  [[ "$peers" == 1 ]] || continue
  run_server
  taskset -c 1 "$load" "$root/configs/load/capacity-1000.toml" -q --url "rtsp://127.0.0.1:$port/clip" \
    --metrics "127.0.0.1:$mport" --server-pid "$server_pid" --clients "$n" --threads 1 \
    --ramp "$ramp" --hold "$hold" --label "rtsp-$n" --summary-csv "$out/load-summary.csv" \
    | tee -a "$out/run.txt" || true
  stop_server
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run.txt"
echo "results in $out"
