#!/usr/bin/env bash
# The main job on its built-in default: installs what is missing, builds the release preset,
# generates a sample clip (testsrc2 + sine, offline), starts predrop-server on loopback and plays
# the stream with the measuring client, which prints one line per block (R, L, PSNR, packets).
#
#   scripts/demo.sh [--policy basic|history|adaptive|capacity|fixed] [--seconds N] [--serve]
#
# --serve keeps the server running afterwards (looping the clip) so that a standard player can
# play it too:  ffplay -rtsp_transport udp rtsp://127.0.0.1:8554/sample
set -euo pipefail
cd "$(dirname "$0")/.."
policy=basic
seconds=10
serve=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --policy) policy="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --serve) serve=1; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

scripts/setup-deps.sh
scripts/build.sh release
bin=build/release
work=build/demo
mkdir -p "$work"
sample="$work/sample-${seconds}s.mp4"
scripts/make-sample.sh "$sample" "$seconds"

loop_flag=()
[[ $serve -eq 1 ]] && loop_flag=(--loop)
"$bin/server/predrop-server" -c configs/stream.toml --stream sample="$sample" \
  --listen 127.0.0.1:8554 --metrics 127.0.0.1:9464 --policy "$policy" \
  --trace-csv "$work/server-trace.csv" "${loop_flag[@]}" 2>"$work/server.log" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q "serving rtsp" "$work/server.log" 2>/dev/null && break
  kill -0 $server_pid 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
echo "predrop-server: rtsp://127.0.0.1:8554/sample, policy $policy (log: $work/server.log)"
echo
"$bin/client/predrop-client" rtsp://127.0.0.1:8554/sample --reference "$sample" \
  -n "$seconds" --csv "$work/client-blocks.csv" --log-level warn
echo
echo "Per-block traces: $work/client-blocks.csv (client), $work/server-trace.csv (server decisions)"
if [[ $serve -eq 1 ]]; then
  echo "Serving until Ctrl-C: ffplay -rtsp_transport udp rtsp://127.0.0.1:8554/sample"
  wait $server_pid
fi
