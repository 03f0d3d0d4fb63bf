#!/usr/bin/env bash
# The fake camera and microphone files of the Chromium sender, made from the clip predrop streams:
# the clip decoded to raw Y4M (Chromium's --use-file-for-fake-video-capture loops it at its own
# frame rate and size) and its audio to a mono 48 kHz WAV (--use-file-for-fake-audio-capture).
# Raw video is large (~0.9 GB for the 90 s bed clip), so it is made at run time under /tmp and
# never committed. Idempotent: files newer than the clip are kept.
#
#   fake-media.sh CLIP [DIR]      prints "Y4M WAV" (DIR default /tmp/predrop-webrtc-peer)
set -euo pipefail
clip="${1:?usage: $0 CLIP [DIR]}"
dir="${2:-/tmp/predrop-webrtc-peer}"
[[ -r "$clip" ]] || { echo "fake-media: no clip $clip" >&2; exit 2; }
mkdir -p "$dir"
base="$dir/$(basename "${clip%.*}")"
y4m="$base.y4m"
wav="$base.wav"
# Several flows' senders start at once: one makes the files, the others wait for it.
exec 8>"$base.lock"
flock 8
if [[ ! -s "$y4m" || "$y4m" -ot "$clip" ]]; then
  ffmpeg -nostdin -hide_banner -loglevel error -y -i "$clip" -an -pix_fmt yuv420p \
    -f yuv4mpegpipe "$y4m.tmp"
  mv -f "$y4m.tmp" "$y4m"
fi
if [[ ! -s "$wav" || "$wav" -ot "$clip" ]]; then
  ffmpeg -nostdin -hide_banner -loglevel error -y -i "$clip" -vn -ac 1 -ar 48000 -c:a pcm_s16le \
    "$wav.tmp.wav"
  mv -f "$wav.tmp.wav" "$wav"
fi
echo "$y4m $wav"
