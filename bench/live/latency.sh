#!/usr/bin/env bash
# Glass-to-glass latency of a published live stream on loopback (issue 23 item 6, docs/live.md
# "Latency"): publisher -> predrop -> player, per picture and per block.
#
#   ffmpeg -re -c copy -f rtsp ──▶ predrop-server (stream "live", blocks.duration_ms) ──▶ ffmpeg viewer
#   (a 25 fps testsrc clip, 1 s GOP, 2 B-frames)                                         (RTSP/TCP, framemd5)
#
# The viewer writes one framemd5 line per decoded picture (flushed per picture) into a reader
# that stamps each line with the wall clock on arrival. testsrc pictures all differ, so a line's
# hash names its picture index n in the clip. The publisher's -re sends picture n at
# t0 + n / 25 s, t0 being when the server accepted its ANNOUNCE (the server log's timestamp;
# SETUP and RECORD follow within a few ms on loopback, so the figures are that much too high).
# Latency(n) = arrival(n) - (t0 + n / 25): the source's hold (a block, docs/live.md "Blocks"),
# the session's pacing of the block, the network (loopback: ~0) and the decoder's reorder delay.
#
#   bench/live/latency.sh SERVER_BINARY [OUT_DIR] [BLOCK_MS/GOP ...]     (default 1000/25 480/12 240/6)
# With EDGE=1 the viewer watches a second predrop-server, an edge pulling the stream from the
# first over RTSP/TCP (docs/edge.md; source = "rtsp://origin/live", on demand, the same
# blocks.duration_ms): publisher -> origin -> edge -> player; t0 stays the origin's ANNOUNCE.
# Each run: blocks.duration_ms = BLOCK_MS, the clip's key frames every GOP pictures (blocks are
# cut at key frames, so a block is never shorter than the GOP). Writes
# OUT_DIR/<block_ms>-g<gop>/{server.log,publisher.log,viewer.log,stamped.txt,blocks.tsv},
# OUT_DIR/latency.tsv (one row per run), OUT_DIR/latency.png (gnuplot, if installed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
server="$(readlink -f "$1")"
out="${2:-$PWD/build/live-latency}"
shift $(($# >= 2 ? 2 : 1))
sizes=("$@")
((${#sizes[@]})) || sizes=(1000/25 480/12 240/6)
mkdir -p "$out"
out="$(readlink -f "$out")"
cd "$out"
# shellcheck source=../../tests/integration/lib.sh
source "$here/../../tests/integration/lib.sh"

echo -e "run\tpictures\tmean_ms\tp50_ms\tp95_ms\tmax_ms" >latency.tsv
for run in "${sizes[@]}"; do
  block_ms="${run%/*}"
  gop="${run#*/}"
  clip="clip-g$gop.mp4"
  [[ -s "$clip" ]] || ffmpeg -nostdin -v error -f lavfi -i testsrc=size=640x360:rate=25 -t 20 \
    -c:v libx264 -g "$gop" -keyint_min "$gop" -sc_threshold 0 -bf 2 -pix_fmt yuv420p -y "$clip"
  [[ -s "$clip.md5" ]] || ffmpeg -nostdin -v error -i "$clip" -f framemd5 "$clip.md5"
  ms="$block_ms-g$gop"
  mkdir -p "$ms"
  rtsp_port=$(pick_port)
  secret="latency-secret-0123456"
  cat >"$ms/live.toml" <<EOF
[server]
mode = "stream"
rtsp_listen = "127.0.0.1:$rtsp_port"
workers = 1
log_level = "info"

[server.streams.live]
source = "publish"
publish_secret = "$secret"

[blocks]
duration_ms = $block_ms
EOF
  start_server "$ms/server.log" -c "$ms/live.toml"
  url="rtsp://127.0.0.1:$rtsp_port/live"
  origin_url="$url"
  timeout -s INT 60 ffmpeg -nostdin -v info -re -i "$clip" -c copy -f rtsp -rtsp_transport tcp \
    "$url?secret=$secret" >"$ms/publisher.log" 2>&1 &
  pub=$!
  for _ in $(seq 100); do
    grep -q "'live' published" "$ms/server.log" && break
    sleep 0.02
  done
  edge_pid=""
  if [[ "${EDGE:-0}" == 1 ]]; then
    edge_port=$(pick_port)
    cat >"$ms/edge.toml" <<EOF
[server]
mode = "stream"
rtsp_listen = "127.0.0.1:$edge_port"
workers = 1
log_level = "info"

[server.streams.live]
source = "$origin_url"

[blocks]
duration_ms = $block_ms
EOF
    "$server" -c "$ms/edge.toml" 2>"$ms/edge.log" &
    edge_pid=$!
    for _ in $(seq 250); do
      grep -q "'live': described" "$ms/edge.log" && break
      sleep 0.02
    done
    url="rtsp://127.0.0.1:$edge_port/live"
  fi
  timeout -s INT 60 ffmpeg -nostdin -v info -rtsp_transport tcp -i "$url" -map 0:v \
    -flush_packets 1 -f framemd5 - 2>"$ms/viewer.log" |
    python3 -u -c 'import sys, time
for line in sys.stdin:
    sys.stdout.write("%.6f %s" % (time.time(), line)); sys.stdout.flush()' >"$ms/stamped.txt" &
  view=$!
  wait "$pub" || true
  wait "$view" || true
  if [[ -n "$edge_pid" ]]; then
    kill "$edge_pid" 2>/dev/null || true
    wait "$edge_pid" 2>/dev/null || true
  fi
  stop_server
  t0=$(grep -m1 "'live' published" "$ms/server.log" | cut -d' ' -f1)
  python3 - "$t0" "$ms" "$clip.md5" <<'PY' >>latency.tsv
import datetime, statistics, sys
t0 = datetime.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00")).timestamp()
d = sys.argv[2]
index = {}
for line in open(sys.argv[3]):
    if line.startswith("#"): continue
    f = [x.strip() for x in line.split(",")]
    index.setdefault(f[5], int(f[1]))
lat = {}
for line in open(f"{d}/stamped.txt"):
    stamp, rest = line.split(" ", 1)
    if rest.startswith("#"): continue
    f = [x.strip() for x in rest.split(",")]
    n = index.get(f[5])
    if n is None or n in lat: continue
    lat[n] = (float(stamp) - (t0 + n / 25.0)) * 1000.0
with open(f"{d}/blocks.tsv", "w") as out:
    out.write("second\tpictures\tmean_ms\tmin_ms\tmax_ms\n")
    for b in sorted({n // 25 for n in lat}):
        v = [lat[n] for n in lat if n // 25 == b]
        out.write(f"{b}\t{len(v)}\t{statistics.mean(v):.0f}\t{min(v):.0f}\t{max(v):.0f}\n")
v = sorted(lat.values())
q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
print(f"{d}\t{len(v)}\t{statistics.mean(v):.0f}\t{q(0.5):.0f}\t{q(0.95):.0f}\t{v[-1]:.0f}")
PY
done
column -t latency.tsv
if command -v gnuplot >/dev/null; then
  plots=()
  for ms in "${sizes[@]}"; do
    plots+=("'${ms/\//-g}/blocks.tsv' every ::1 using 1:3:4:5 with yerrorlines title 'blocks.duration_ms = ${ms%/*}, GOP ${ms#*/} pictures'")
  done
  gnuplot <<GP
set terminal pngcairo size 800,420 font 'sans,9'
set output 'latency.png'
set termoption noenhanced
set title 'glass-to-glass latency of a published stream, ffmpeg -re -> predrop -> ffmpeg (loopback)'
set xlabel 'second of the clip'
set ylabel 'latency ms (mean, min-max per second)'
set grid
set key top right
set yrange [0:*]
plot $(IFS=,; echo "${plots[*]}")
GP
fi
