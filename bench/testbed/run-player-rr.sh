#!/usr/bin/env bash
# An unmodified ffmpeg player behind the bed's bottleneck, served twice: with adaptation from its
# RTCP Receiver Reports (control.player_adaptation = "rr", the default) and at the fixed
# player_rate 0 (player_adaptation = "fixed", i.e. R = 0). Per run: ffmpeg saves what it received
# (decoded, FFV1 lossless), the file is re-timed onto the reference's frame grid offline (the last
# shown picture repeated for a frame that never came) and scored per 1 s block with ffmpeg's psnr
# filter; a UDP probe through the bottleneck every 100 ms measures the queueing delay; the tbf
# counters give the network loss.
#
#   PREDROP_BIN=build/release/server bench/testbed/run-player-rr.sh [--out DIR] [--blocks N]
#       [--rate RATE] [--congest-at SECONDS]
#
# Defaults: 60 blocks of the bed clip (~1.23 Mbit/s on the wire), bottleneck open for the first
# 5 s, then 820 kbit/s (the stream is 1.5x it), as the bed's `steady` after a clean start (the
# clean start lets ffmpeg see the first key frame, so the received file aligns with the
# reference). Writes DIR/<mode>/{received.mkv,align.txt,psnr.log,probe.txt,metrics.txt,
# qdisc.txt,trace.csv,server.log,ffmpeg.log,score.json} and prints one table row per mode. Exit 0 with "SKIP: ..."
# where namespaces are not permitted. Tears down everything it creates (never `bed.sh cleanup`).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bed.sh
source "$here/bed.sh"

out="${PWD}/build/player-rr" blocks=60 rate=820kbit congest_at=5
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --blocks) blocks="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --congest-at) congest_at="$2"; shift 2 ;;
    *) echo "run-player-rr: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin="${PREDROP_BIN:?set PREDROP_BIN to the directory holding predrop-server}"
server_exe="$bin/predrop-server"
[[ -x "$server_exe" ]] || { echo "run-player-rr: no predrop-server in $bin" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "SKIP: ffmpeg is not installed"; exit 0; }
mkdir -p "$out"
out="$(readlink -f "$out")"
clip="$out/clip.mp4"
"$here/make-clip.sh" "$clip" 90 || exit 1
fps=30

exec 9>/tmp/predrop-testbed.lock
flock 9

run_mode() {
  local mode="$1" dir="$out/$1" port=8554
  mkdir -p "$dir"
  rm -f "$dir"/*
  cat >"$dir/server.toml" <<TOML
# Written by bench/testbed/run-player-rr.sh
[server]
mode = "stream"
metrics_listen = "$BED_SND_IP:9464"
log_level = "warn"
session_timeout_s = 20
rtsp_idle_timeout_s = 3600

[server.streams]
clip = "$clip"

[blocks]
duration_ms = 1000
pacing = "paced"

[control]
player_adaptation = "$mode"
player_rate = 0.0
rmax = 0.9
TOML
  bed_up "$BED_OPEN_RATE" || return 1
  bed_spawn snd "$server_exe" -c "$dir/server.toml" --listen "$BED_SND_IP:$port" \
    --trace-csv "$dir/trace.csv" --max-stages "$blocks" >"$dir/server.log" 2>&1
  local server_pid=$BED_LAST_PID
  for _ in $(seq 1 300); do
    bed_in snd bash -c "exec 3<>/dev/tcp/$BED_SND_IP/$port" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { echo "server exited; see $dir/server.log" >&2; return 1; }
    sleep 0.1
  done
  bed_spawn rcv python3 "$here/player_rr_probe.py" echo "$BED_RCV_IP" 9999
  sleep 0.3
  # The unmodified player: RTSP over UDP with SRTP (a=crypto), everything it gets copied to a file.
  # Decoded as it arrives and kept losslessly (FFV1): ffmpeg 5.1 cannot -c copy RTP H.264 with
  # B-frames into a file (its first packets have no timestamp). Concealed and missing pictures
  # are exactly what ffmpeg made of what it received.
  bed_spawn rcv timeout $((blocks + 40)) ffmpeg -nostdin -hide_banner -loglevel warning \
    -rtsp_transport udp -i "rtsp://$BED_SND_IP:$port/clip" -map 0:v -fps_mode passthrough \
    -c:v ffv1 -y "$dir/received.mkv" >"$dir/ffmpeg.log" 2>&1
  local ffmpeg_pid=$BED_LAST_PID
  bed_wait_stream_start 20 30 || true
  bed_spawn snd python3 "$here/player_rr_probe.py" send "$BED_RCV_IP" 9999 "$blocks" \
    >"$dir/probe.txt"
  local probe_pid=$BED_LAST_PID
  ( bed_sleep_until "$congest_at" && bed_rate "$rate" ) &
  local sched=$!
  # What the server reads from ffmpeg's RRs (RTT from LSR/DLSR, refused blocks, R), every 1 s.
  bed_spawn snd bash -c "while sleep 1; do echo \"# t \$EPOCHREALTIME\"; curl -s --max-time 1 \
      http://$BED_SND_IP:9464/metrics | grep -E '^predrop_session_(rate|rr_|receiver_reports)'; done" \
    >"$dir/metrics.txt"
  local metrics_pid=$BED_LAST_PID
  wait "$ffmpeg_pid"
  wait "$sched" 2>/dev/null
  kill -TERM -- "-$probe_pid" 2>/dev/null
  kill -TERM -- "-$metrics_pid" 2>/dev/null
  tc -s -n "$BED_RTR" qdisc show dev r1 >"$dir/qdisc.txt" 2>&1
  bed_down
  # Offline: re-time the received frames onto the reference's grid (fps duplicates the last
  # shown picture into gaps), then PSNR per frame against the reference. ffmpeg's first picture
  # carries no RTP-derived time, so the frame offset between the two timelines is found by
  # content on the first (uncongested) second: the shift with the most identical pictures.
  local best=0 best_n=-1 shift n
  for shift in 0 1 2 3; do
    ffmpeg -nostdin -hide_banner -loglevel error -i "$dir/received.mkv" -i "$clip" -lavfi \
      "[0:v]setpts=PTS-STARTPTS-$shift/$fps/TB,fps=$fps:round=near:start_time=0,trim=end_frame=$fps[r];[1:v]trim=end_frame=$fps,setpts=PTS-STARTPTS[ref];[r][ref]psnr=stats_file=$dir/align.log" \
      -f null - >/dev/null 2>&1
    n=$(grep -c 'mse_avg:0.00 ' "$dir/align.log" 2>/dev/null)
    n=${n:-0}
    if ((n > best_n)); then best=$shift best_n=$n; fi
  done
  echo "alignment: shift $best frames, $best_n of $fps pictures of block 0 identical" >"$dir/align.txt"
  ffmpeg -nostdin -hide_banner -loglevel error -i "$dir/received.mkv" -i "$clip" -lavfi \
    "[0:v]setpts=PTS-STARTPTS-$best/$fps/TB,fps=$fps:round=near:start_time=0[r];[1:v]trim=end_frame=$((blocks * fps)),setpts=PTS-STARTPTS[ref];[r][ref]psnr=stats_file=$dir/psnr.log" \
    -f null - >"$dir/score.log" 2>&1
  python3 "$here/player_rr_score.py" "$dir" "$fps" "$((congest_at + 2))" >"$dir/score.json"
}

for mode in rr fixed; do
  run_mode "$mode" || { echo "run-player-rr: run $mode failed" >&2; exit 1; }
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| player adaptation | mean R (congested) | network loss % | probe RTT median / p95 ms | probe RTT p95 ms, 10 s into congestion on | RTT from ffmpeg's RRs, median ms | ffmpeg RRs (refused) | PSNR dB whole run | PSNR dB congested |")
print("|---|---|---|---|---|---|---|---|---|")
for mode in ("rr", "fixed"):
    s = json.load(open(f"{out}/{mode}/score.json"))
    r = s["rate_mean_congested"] if mode == "rr" else 0.0
    print(f"| {mode} | {r} | {s['loss_pct']} | {s['probe_rtt_ms_median']} / {s['probe_rtt_ms_p95']} | {s['probe_rtt_ms_p95_late']} | {s['rr_rtt_ms_median']} | {s['ffmpeg_rrs']} ({s['ffmpeg_rrs_refused']}) | {s['psnr_mean']} | {s['psnr_congested_mean']} |")
PY
