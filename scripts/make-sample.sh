#!/usr/bin/env bash
# Generates a synthetic test clip offline with the ffmpeg CLI (no network, no downloads).
#
#   scripts/make-sample.sh OUT [SECONDS] [aac|opus]
#
# Video: testsrc2 640x360 at 30 fps, H.264 (libx264, High profile) at ~1.5 Mbit/s with a closed
# GOP of 30 frames and 2 B-frames that are never references (b-pyramid=none), so every B-frame is
# disposable (nal_ref_idc 0) and the priority discard policy has frames it can drop cheaply.
# Audio: a 440 Hz sine, stereo 48 kHz, AAC-LC 96 kbit/s (default) or Opus 64 kbit/s.
# The container follows OUT's extension (.mp4, .mkv, .ts). Idempotent: an existing OUT is kept.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
  echo "usage: $0 OUT [SECONDS] [aac|opus]" >&2
  exit 2
fi
out="$1"
seconds="${2:-6}"
audio="${3:-aac}"

if [[ -s "$out" ]]; then
  exit 0
fi
case "$audio" in
  aac) acodec=(-c:a aac -b:a 96k) ;;
  opus) acodec=(-c:a libopus -b:a 64k) ;;
  *)
    echo "unknown audio codec '$audio' (aac or opus)" >&2
    exit 2
    ;;
esac

mkdir -p "$(dirname "$out")"
# Write to a temporary name in the same directory and rename, so that a concurrent or interrupted
# run never leaves a half-written OUT behind that a later run would mistake for a finished one.
tmp="$(dirname "$out")/.tmp.$$.$(basename "$out")"
trap 'rm -f "$tmp"' EXIT

ffmpeg -nostdin -hide_banner -loglevel error -y \
  -f lavfi -i "testsrc2=size=640x360:rate=30:duration=${seconds}" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=${seconds}" \
  -map 0:v -map 1:a \
  -c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p \
  -b:v 1500k -maxrate 2000k -bufsize 3000k \
  -x264-params "keyint=30:min-keyint=30:scenecut=0:bframes=2:b-pyramid=none:b-adapt=0" \
  "${acodec[@]}" -ac 2 -ar 48000 \
  "$tmp"
mv -f "$tmp" "$out"
