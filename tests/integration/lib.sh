# shellcheck shell=bash
# Shared by the integration scripts (source it, then set $server to the predrop-server binary and
# `cd` into the work dir, or call begin_client_interop): a free loopback port, the server started,
# awaited and stopped, and the pieces the interop and live tests share (below).

# Prints a TCP port free on 127.0.0.1 now (the kernel picks it).
pick_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_server LOG ARGS...: runs "$server" ARGS in the background with its log in LOG, sets
# server_pid, and returns once it serves RTSP. Returns 1 with the log printed if it exits first or
# is not serving within 5 s (the log line is awaited, never a fixed sleep).
start_server() {
  local log="$1"
  shift
  "${server:?set server to the predrop-server binary}" "$@" 2>"$log" &
  server_pid=$!
  for _ in $(seq 50); do
    grep -q "serving rtsp" "$log" 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start"
  cat "$log"
  stop_server
  return 1
}

# require_tools TOOL...: exits 77 (ctest's SKIP_RETURN_CODE) saying "SKIP: no TOOL" for the first
# TOOL that is not on the PATH.
require_tools() {
  local tool
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "SKIP: no $tool"
      exit 77
    fi
  done
}

# Stops the server start_server started (no-op when there is none).
stop_server() {
  [[ -n "${server_pid:-}" ]] || return 0
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# ---- Files served to players (interop_*.sh) --------------------------------------------------

# begin_client_interop SERVER CLIENT WORKDIR: the start of the scripts that play generated clips
# through the measuring client and other players (interop_codecs.sh, interop_audio.sh,
# interop_av1.sh): sets server and client to the binaries, makes WORKDIR and works in it, and
# stops the server on exit.
begin_client_interop() {
  server="$1"
  # shellcheck disable=SC2034 # for the caller
  client="$2"
  mkdir -p "$3"
  cd "$3" || return 1
  trap stop_server EXIT
}

# serve_clip LOG FILE [SERVER OPTIONS...]: start_server with FILE as stream "c" on a free loopback
# port (log level info); sets clip_url to its rtsp:// URL.
serve_clip() {
  local log="$1" file="$2" port
  shift 2
  port=$(pick_port)
  # shellcheck disable=SC2034 # for the caller
  clip_url="rtsp://127.0.0.1:$port/c"
  start_server "$log" --stream "c=$file" --listen 127.0.0.1:"$port" "$@" --log-level info
}

# generate_clip NAME FILE ARGS: ffmpeg encodes FILE from ARGS (one string, split into words),
# after removing FILE and NAME.*; on failure prints FAIL with ffmpeg's log and returns 1.
generate_clip() {
  rm -f "$2" "$1".*
  # shellcheck disable=SC2086 # the encoding arguments are many words
  ffmpeg -nostdin -v error -y $3 "$2" 2>"$1.gen.log" && return 0
  echo "FAIL: $1: could not generate the clip"
  cat "$1.gen.log"
  return 1
}

# retry_lossy NAME COMMAND...: runs COMMAND up to three times while it returns 2 (the receiver
# lost packets in its own socket buffer, inconclusive: ffmpeg's "RTP: missed", GStreamer's jitter
# buffer's "Packet #n lost"); returns COMMAND's last status.
retry_lossy() {
  local name="$1" attempt result=0
  shift
  for attempt in 1 2 3; do
    "$@" && result=0 || result=$?
    ((result == 2)) || break
    echo "$name: attempt $attempt: the receiver lost packets in its socket buffer; again"
  done
  return "$result"
}

# md5_hashes FRAMEMD5: the hash column of an ffmpeg framemd5 file, a line a frame (time stamps
# differ between a file and an RTP stream, the frames must not); nothing if the file is missing.
md5_hashes() {
  awk -F, '!/^#/ { gsub(/ /, "", $6); print $6 }' "$1" 2>/dev/null || true
}

# count_foreign_pictures HASHES HASHER ARGS...: waits for the caller's publisher (pub_pid) and
# viewer (view_pid), sets pub_rc and view_rc to their exit codes if they failed and clears both
# pids (the trap has nothing left to stop); then writes the hashes of the viewer's pictures
# (`HASHER ARGS...`, e.g. md5_hashes viewer.md5) to HASHES and sets frames (pictures) and
# foreign (pictures that are not the clip's, by clip.hashes). The caller declares pub_rc=0,
# view_rc=0, frames and foreign local: bash's dynamic scope sets those.
# shellcheck disable=SC2034  # pub_rc, view_rc, frames, foreign: the caller's
count_foreign_pictures() {
  local hashes="$1"
  shift
  wait "$pub_pid" || pub_rc=$?
  wait "$view_pid" || view_rc=$?
  pub_pid=""
  view_pid=""
  "$@" >"$hashes"
  frames=$(wc -l <"$hashes")
  foreign=$(sort "$hashes" | comm -23 - clip.hashes | wc -l)
}

# same_prefix REF GOT: how many leading lines of the two files are identical.
same_prefix() {
  paste -d' ' "$1" "$2" | awk 'NF==2 && $1==$2 {n++} NF==2 && $1!=$2 {exit} END {print n+0}'
}

# below_cap CSV: "BLOCKS BELOW" of a predrop-client --csv file: the blocks it reported and how
# many of them scored under the 60 dB PSNR cap.
below_cap() {
  local blocks below
  blocks=$(tail -n +2 "$1" 2>/dev/null | wc -l)
  below=$(tail -n +2 "$1" 2>/dev/null | awk -F, '$4 != "60.000"' | wc -l)
  echo "$blocks $below"
}

# ---- WHEP (webrtc_offers.sh, whep_load_session.sh) ---------------------------------------------

# make_vp8_clip FILE: the clip the WHEP tests serve: 2 s of testsrc2, 320x180 at 30 fps, VP8 at
# 300 kbit/s with a key frame a second.
make_vp8_clip() {
  ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=s=320x180:r=30:d=2 -c:v libvpx -b:v 300k \
    -g 30 -deadline realtime -cpu-used 8 "$1"
}

# ---- Live streams (live_*.sh, pull_relay.sh) ---------------------------------------------------

# The H.264 the live tests publish: B-frames, a key frame every 25 pictures (1 s at 25 fps).
live_h264=(-c:v libx264 -g 25 -keyint_min 25 -sc_threshold 0 -bf 2 -pix_fmt yuv420p)

# make_live_clip FILE SECONDS: testsrc 320x240 at 25 fps, SECONDS long, as live_h264.
make_live_clip() {
  ffmpeg -nostdin -v error -f lavfi -i testsrc=size=320x240:rate=25 -t "$2" "${live_h264[@]}" \
    -y "$1"
}

# write_config FILE RTSP_PORT METRICS_PORT WORKERS: a stream-mode server config on loopback (log
# level info, 1 s blocks) with the stream tables read from stdin.
write_config() {
  {
    printf '[server]\nmode = "stream"\nrtsp_listen = "127.0.0.1:%s"\n' "$2"
    printf 'metrics_listen = "127.0.0.1:%s"\nworkers = %s\nlog_level = "info"\n\n' "$3" "$4"
    cat
    printf '\n[blocks]\nduration_ms = 1000\n'
  } >"$1"
}

# await LOG PATTERN [COUNT]: returns once LOG has COUNT (default 1) lines matching PATTERN; after
# 20 s prints FAIL with the log's tail and returns 1.
await() {
  local count="${3:-1}"
  for _ in $(seq 200); do
    [[ "$(grep -c -- "$2" "$1" 2>/dev/null || true)" -ge "$count" ]] && return 0
    sleep 0.1
  done
  echo "FAIL: no '$2' (x$count) in $1"
  tail -20 "$1"
  return 1
}

# start_publish_server WORKERS: a server (log server.log, config live.toml, WORKERS workers) on
# free loopback ports with one published stream 'live' whose publish secret is $secret; sets
# rtsp_port, metrics_port, secret and base (the stream's rtsp:// URL, no secret), and an EXIT
# trap that stops the server and the caller's pub_pid, view_pid and client_pid if set.
start_publish_server() {
  rtsp_port=$(pick_port)
  metrics_port=$(pick_port)
  secret="test-secret-0123456789"
  write_config live.toml "$rtsp_port" "$metrics_port" "$1" <<EOF
[server.streams.live]
source = "publish"
publish_secret = "$secret"
EOF
  # shellcheck disable=SC2154 # the caller's
  trap 'stop_server; kill "${pub_pid:-}" "${view_pid:-}" "${client_pid:-}" 2>/dev/null || true' EXIT
  start_server server.log -c live.toml || return 1
  # shellcheck disable=SC2034 # for the caller
  base="rtsp://127.0.0.1:$rtsp_port/live"
}

# publish_clip CLIP URL TRANSPORT LOG [INPUT OPTIONS...]: ffmpeg publishes CLIP in real time
# (-re, -c copy) to URL over RTSP (TRANSPORT tcp or udp), its output in LOG; 40 s at most.
publish_clip() {
  local clip="$1" url="$2" transport="$3" log="$4"
  shift 4
  timeout -s INT 40 ffmpeg -nostdin -v info "$@" -re -i "$clip" -c copy -f rtsp \
    -rtsp_transport "$transport" "$url" >"$log" 2>&1
}

# fetch_metrics PORT FILE: the server's /metrics on loopback PORT into FILE (empty if it fails).
fetch_metrics() {
  curl -sf --max-time 5 "http://127.0.0.1:$1/metrics" >"$2" || true
}

# metric FILE NAME: the value of metric NAME (labels included) in a /metrics dump.
metric() {
  awk -v n="$2" '$1 == n { print $2 }' "$1"
}

# ---- Benchmarks (bench/perf) -------------------------------------------------------------------

# ask_cpu_first: with autogroup scheduling (Debian's default) a process's nice value counts only
# inside its own session, so a build in another terminal gets an equal share however nice it
# is; a benchmark asks for the CPU first (its autogroup at -20) when it may, so that other work
# on the machine disturbs its figures less. The setting ends with the caller's session.
ask_cpu_first() {
  if [[ -w /proc/self/autogroup ]]; then
    echo -20 >/proc/self/autogroup 2>/dev/null || true
  fi
}

# stop_pids_on_exit: empties pids, to which the caller appends each process it starts in the
# background, and kills them all on exit or interrupt (stop_pids).
stop_pids_on_exit() {
  pids=()
  trap stop_pids EXIT INT TERM
}
stop_pids() {
  local p
  for p in "${pids[@]:-}"; do
    if [[ -n "$p" ]]; then kill "$p" 2>/dev/null || true; fi
  done
}
