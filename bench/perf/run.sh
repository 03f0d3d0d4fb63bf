#!/usr/bin/env bash
# Reproduces every table of bench/perf/README.md: builds the release preset, makes the test
# clips, runs the per-packet microbenchmarks, the whole-server egress runs (machine limits and
# ffmpeg side by side) and the load tests against a real predrop-server process.
#
#   bench/perf/run.sh [quick]
#   SECTIONS="egress load" bench/perf/run.sh      # a subset of: micro egress workers load
#   SECTIONS="workers" bench/perf/run.sh quick    # 1 vs 2 worker loops only (README section 9)
#
# Results go to build/perf-release/bench-results/<time>/ (console logs, CSV, JSON). "quick" shortens
# every run (for a smoke check; the README's figures come from a full run). Loopback only; every
# process it starts is stopped on exit, also when interrupted.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build/perf-release"
out="$build/bench-results/$(date +%Y%m%d-%H%M%S)"
quick="${1:-}"
sections=" ${SECTIONS:-micro egress workers load} "
mkdir -p "$out"

# shellcheck source=../../tests/integration/lib.sh
source "$root/tests/integration/lib.sh"
# The runs below ask for the CPU first (lib.sh ask_cpu_first), and every process they start in
# the background goes into pids, stopped on exit.
ask_cpu_first
echo "autogroup: $(cat /proc/self/autogroup 2>/dev/null || echo none), load $(cut -d' ' -f1-3 /proc/loadavg)"
stop_pids_on_exit

echo "== build (release preset) =="
cmake --preset release -S "$root" -B "$build" > "$out/configure.log"
cmake --build "$build" -j2 --target predrop-server predrop-load predrop_packet_path_bench \
  predrop_egress_bench > "$out/build.log"

echo "== clips =="
clip="$build/bench/clip-1mbit.mp4"
sample="$build/media/sample.mp4"
"$root/scripts/make-sample.sh" "$sample" 6 aac
if [[ ! -s "$clip" ]]; then
  # ~1 Mbit/s in all: H.264 900 kbit/s (GOP 30, 2 disposable B-frames) + AAC 96 kbit/s, 10 s.
  ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i "testsrc2=size=640x360:rate=30:duration=10" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=10" \
    -map 0:v -map 1:a -c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p \
    -b:v 900k -maxrate 1000k -bufsize 1000k \
    -x264-params "keyint=30:min-keyint=30:scenecut=0:bframes=2:b-pyramid=none:b-adapt=0" \
    -c:a aac -b:a 96k -ac 2 -ar 48000 "$clip"
fi

min_time=1.0
egress_s=10
machine_s=1
load_hold=30
if [[ "$quick" == "quick" ]]; then
  min_time=0.2
  egress_s=3
  machine_s=0.3
  load_hold=8
fi

if [[ "$sections" == *" micro "* ]]; then
echo "== per-packet microbenchmarks =="
"$build/bench/predrop_packet_path_bench" --benchmark_min_time="$min_time" \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/packet_path.json" --benchmark_out_format=json | tee "$out/packet_path.txt"
fi

if [[ "$sections" == *" egress "* ]]; then
echo "== whole-server egress =="
egress="$build/bench/predrop_egress_bench"
# One core for the whole process (server, the bench's RTSP client, the kernel's delivery into the
# sinks), so that "per core" is what it says.
core="${EGRESS_CORE:-0}"
for suite in AES_CM_128_HMAC_SHA1_80 AEAD_AES_128_GCM; do
  # As shipped (OpenSSL crypto, 5 ms pacing quantum, GSO), then one change at a time: each
  # packet at its own time (quantum 0), and libsrtp's own crypto (NSS on Debian).
  for variant in "openssl 5" "openssl 0" "libsrtp 5"; do
    read -r crypto q <<<"$variant"
    peer="--skip-ffmpeg"
    [[ "$variant" == "openssl 5" ]] && peer=""
    echo "-- $suite paced, SRTP crypto $crypto, pacing quantum $q ms, taskset -c $core, load $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c "$core" "$egress" --media "$clip" --suite "$suite" --pacing paced --gso --sessions 100 \
      --sessions 300 --sessions 1000 --ramp 2 --warmup 3 --seconds "$egress_s" \
      --machine-seconds "$machine_s" --srtp-crypto "$crypto" --pacing-quantum-ms "$q" $peer \
      --csv "$out/egress.csv" | tee -a "$out/egress.txt"
  done
  echo "-- $suite burst (saturation)"
  "$egress" --media "$clip" --suite "$suite" --pacing burst --sessions 300 --ramp 1 --warmup 3 \
    --seconds "$egress_s" --machine-seconds "$machine_s" --skip-ffmpeg --csv "$out/egress.csv" \
    | tee -a "$out/egress.txt"
done
echo "-- plain RTP (no SRTP) vs ffmpeg plain"
"$egress" --media "$clip" --suite none --pacing burst --sessions 300 --ramp 1 --warmup 3 \
  --seconds "$egress_s" --machine-seconds "$machine_s" --csv "$out/egress.csv" \
  | tee -a "$out/egress.txt"
fi

if [[ "$sections" == *" workers "* ]]; then
echo "== worker loops: 1 vs 2 (StreamWorkers, as predrop-server runs) =="
# The bench process is pinned to both cores (taskset -c 0,1): the worker threads, the bench's own
# thread (RTSP set-up client, then idle) and the sinks' kernel delivery (inside the senders'
# sendmmsg calls: the sinks are never read) all share them, with whatever else runs on the
# machine. Each row is preceded by its machine limits (protect + sendmmsg on one core).
egress="$build/bench/predrop_egress_bench"
cores="${WORKER_CORES:-0,1}"
# Saturation: 3000 sessions of the 4 Mbit/s clip want 1.4 M pkt/s, more than two workers send,
# so the packets sent per wall-second show the scaling (and per CPU-second what each costs).
clip4="$build/bench/clip-4mbit.mp4"
if [[ ! -s "$clip4" ]]; then
  ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=10" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=10" \
    -map 0:v -map 1:a -c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p \
    -b:v 3900k -maxrate 4000k -bufsize 4000k \
    -x264-params "keyint=30:min-keyint=30:scenecut=0:bframes=2:b-pyramid=none:b-adapt=0" \
    -c:a aac -b:a 96k -ac 2 -ar 48000 "$clip4"
fi
for suite in AES_CM_128_HMAC_SHA1_80 AEAD_AES_128_GCM; do
  for w in 1 2; do
    echo "-- $suite paced, 3000 sessions of 4 Mbit/s, $w worker(s), taskset -c $cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c "$cores" "$egress" --media "$clip4" --suite "$suite" --pacing paced --gso \
      --sessions 3000 --workers "$w" --ramp 4 --warmup 3 --seconds "$egress_s" \
      --machine-seconds "$machine_s" --skip-ffmpeg --csv "$out/workers.csv" \
      | tee -a "$out/workers.txt"
  done
done
echo "load average after: $(cat /proc/loadavg)" | tee -a "$out/workers.txt"
fi

if [[ -s "$out/egress.csv" ]]; then
  python3 "$root/bench/perf/plot.py" "$out/plots" "$out/egress.csv" \
    $([[ -s "$out/workers.csv" ]] && echo "$out/workers.csv") || true
fi

[[ "$sections" == *" load "* ]] || { echo "results in $out"; exit 0; }
echo "== load tests (predrop-server + predrop-load) =="
port=$((20000 + RANDOM % 20000))
mport=$((port + 1))
run_server() {  # $1 = extra config lines
  cat > "$out/server.toml" <<EOF
[server]
mode = "stream"
rtsp_listen = "127.0.0.1:$port"
max_sessions = ${MAX_SESSIONS:-3000}
max_sessions_per_address = ${MAX_SESSIONS:-3000}  # every load client comes from 127.0.0.1
max_rtsp_connections = 4000
metrics_listen = "127.0.0.1:$mport"
srtp = "${SUITE:-AES_CM_128_HMAC_SHA1_80}"
log_level = "warn"
[server.streams]
sample = "$sample"
clip = "$clip"
[blocks]
duration_ms = 1000
pacing = "paced"
rtp_payload_bytes = 1200
[control]
policy = "basic"
EOF
  ${SERVER_PREFIX:-} "$build/server/predrop-server" -c "$out/server.toml" --loop ${SERVER_ARGS:-} \
    > "$out/server.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server did not start" >&2
  return 1
}
load="$build/load/predrop-load"
common=(--metrics "127.0.0.1:$mport" --summary-csv "$out/load-summary.csv" --hold "$load_hold")
cd "$out"

run_server
"$load" "$root/configs/load/smoke.toml" --url "rtsp://127.0.0.1:$port/sample" "${common[@]}" \
  --csv "$out/load-smoke.csv" | tee "$out/load-smoke.txt"
sed "s#build/perf/media/sample.mp4#$sample#" "$root/configs/load/churn.toml" > "$out/churn.toml"
"$load" "$out/churn.toml" --url "rtsp://127.0.0.1:$port/sample" "${common[@]}" \
  --csv "$out/load-churn.csv" | tee "$out/load-churn.txt"
stop_server

# Capacity with real clients: the server with one worker on CPU 0, the load tester (one thread,
# every client a full RTSP + SRTP + PDFB session) on CPU 1, so that each has a core of its own.
for suite in AES_CM_128_HMAC_SHA1_80 AEAD_AES_128_GCM; do
  for n in 300 1000 1500; do
    SUITE=$suite SERVER_PREFIX="taskset -c 0" SERVER_ARGS="--workers 1" run_server
    taskset -c 1 "$load" "$root/configs/load/capacity-1000.toml" \
      --url "rtsp://127.0.0.1:$port/clip" "${common[@]}" --clients "$n" --threads 1 \
      --label "capacity-$n-$suite" --csv "$out/load-capacity-$n-$suite.csv" \
      | tee "$out/load-capacity-$n-$suite.txt"
    stop_server
  done
done

MAX_SESSIONS=64 run_server
"$load" "$root/configs/load/limits.toml" --url "rtsp://127.0.0.1:$port/sample" \
  --metrics none --summary-csv "$out/load-summary.csv" | tee "$out/load-limits.txt"
stop_server

echo
echo "results in $out"
