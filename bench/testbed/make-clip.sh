#!/usr/bin/env bash
# The test-bed clip: like scripts/make-sample.sh (testsrc2 640x360 at 30 fps, H.264 High, closed
# GOP of 30 frames = one 1 s block, 2 non-reference B-frames, 440 Hz AAC-LC 96 kbit/s) but encoded
# the way a real-time sender encodes: a VBV buffer of two frames (100 kbit at 1.5 Mbit/s), which
# caps each I-frame at about 11 kB.
#
# Why: the server paces per frame (all packets of a frame leave together). With the sample's
# unconstrained VBV an I-frame is ~16.5 kB, i.e. ~115 ms of a bottleneck at 2/3 of the stream
# rate, more than the 100 ms tbf queue of docs/design.md §6 holds: every block then loses the tail of
# its I-frame whatever R is, and no discard policy can help. RTC encoders cap frame sizes with a
# small VBV for exactly this reason; with it the I-frame fits the queue when the queue is empty.
#
# KIND "scenes" (issue 12's second clip) concatenates six lavfi sources of SECONDS/6 each, whose
# bitrate differs strongly under the same encoder settings: SMPTE bars (static, ~nothing after
# the I-frame), a Mandelbrot zoom (detail everywhere: at the 1.5 Mbit/s cap), testsrc2, Conway's
# life, testsrc2 with strong temporal noise (at the cap), and a flat grey (static).
#
# KIND "vbr" (issue 21's VBR clip) cuts hard every 7 s between scenes whose rate differs 2-3x under
# the same settings, cycling testsrc2 (~1000 kbit/s of video), cellular automaton (~310),
# testsrc2 rotating (~1000) and Conway's life (~550): at each cut (a block boundary, the GOP is
# one block) the stream's rate jumps by 1.8-3.2x. 7 s does not divide the cases' event times, so
# cuts fall both on and between capacity changes.
#
# For browsers (issue 22, webrtc-peer/whep-viewer.sh): CLIP_BFRAMES=0 encodes no B-frames (Chromium's
# WebRTC receiver renders in RTP-timestamp order without a reorder buffer and stalls on them,
# docs/webrtc.md "In Chromium"); CLIP_AUDIO=opus puts the sine in Opus at the same 96 kbit/s
# (browsers decode no AAC). Everything else (source, VBV, GOP, rate cap) stays the same.
# CLIP_CODEC=vp8 (OUT should end in .webm) encodes the video with libvpx in three temporal layers
# (-ts-parameters ts_layering_mode=3, the 0-2-1-2 pattern bench/codecs/run.sh uses; layer 2, half
# the frames, refreshes no reference: disposable, so pre-discard removes frames evenly over the
# block instead of cutting its tail, which a browser counts as a freeze per block). Same source and
# GOP (30 = one block), CBR at 1200 kbit/s (the H.264 browser clip's measured video rate; layers at
# 600/900/1200 kbit/s cumulative), a 200 kbit buffer and key frames capped at 3 frame budgets
# (-max-intra-rate 300: ~9-11 kB, as the H.264 clip's I-frames).
#
#   bench/testbed/make-clip.sh OUT [SECONDS] [testsrc2|scenes|vbr]   (idempotent: an existing OUT is kept)
set -euo pipefail
out="${1:?usage: $0 OUT [SECONDS] [testsrc2|scenes|vbr]}"
seconds="${2:-90}"
kind="${3:-testsrc2}"
[[ -s "$out" ]] && exit 0
mkdir -p "$(dirname "$out")"
tmp="$(dirname "$out")/.tmp.$$.$(basename "$out")"
trap 'rm -f "$tmp"' EXIT
case "$kind" in
  testsrc2) video=(-f lavfi -i "testsrc2=size=640x360:rate=30:duration=${seconds}") ;;
  scenes)
    d=$((seconds / 6))
    norm="fps=30,format=yuv420p,setsar=1"
    g="smptebars=size=640x360:rate=30:duration=$d,${norm}[s0];"
    g+="mandelbrot=size=640x360:rate=30,trim=duration=$d,${norm}[s1];"
    g+="testsrc2=size=640x360:rate=30:duration=$d,${norm}[s2];"
    g+="life=size=640x360:rate=30:mold=10:ratio=0.1:death_color=#C83232:life_color=#00ff00,trim=duration=$d,${norm}[s3];"
    g+="testsrc2=size=640x360:rate=30:duration=$d,noise=alls=40:allf=t,${norm}[s4];"
    g+="color=c=gray:size=640x360:rate=30:duration=$d,${norm}[s5];"
    g+="[s0][s1][s2][s3][s4][s5]concat=n=6:v=1:a=0"
    video=(-f lavfi -i "$g")
    ;;
  vbr)
    norm="fps=30,format=yuv420p,setsar=1"
    scene=(
      "testsrc2=size=640x360:rate=30:duration=7"
      "cellauto=size=640x360:rate=30,trim=duration=7"
      "testsrc2=size=640x360:rate=30:duration=7,rotate=a=t/2"
      "life=size=640x360:rate=30:mold=10:ratio=0.1:death_color=#C83232:life_color=#00ff00,trim=duration=7"
    )
    n=$(((seconds + 6) / 7))
    g="" inputs=""
    for ((i = 0; i < n; i++)); do
      g+="${scene[$((i % 4))]},${norm}[s$i];"
      inputs+="[s$i]"
    done
    g+="${inputs}concat=n=$n:v=1:a=0,trim=duration=$seconds"
    video=(-f lavfi -i "$g")
    ;;
  *) echo "make-clip: unknown kind $kind" >&2; exit 2 ;;
esac
video_codec=(-c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p
  -b:v 1500k -maxrate 1500k -bufsize 100k
  -x264-params "keyint=30:min-keyint=30:scenecut=0:bframes=${CLIP_BFRAMES:-2}:b-pyramid=none:b-adapt=0")
container=mp4
case "${CLIP_CODEC:-h264}" in
  h264) ;;
  vp8)
    video_codec=(-c:v libvpx -pix_fmt yuv420p -deadline realtime -cpu-used 4 -error-resilient 1
      -g 30 -keyint_min 30 -b:v 1200k -minrate 1200k -maxrate 1200k -bufsize 200k
      -max-intra-rate 300 -ts-parameters "ts_layering_mode=3:ts_target_bitrate=600,900,1200")
    container=webm
    ;;
  *) echo "make-clip: CLIP_CODEC is h264 or vp8" >&2; exit 2 ;;
esac
audio=(-c:a aac)
[[ "${CLIP_AUDIO:-aac}" == opus ]] && audio=(-c:a libopus)
ffmpeg -nostdin -hide_banner -loglevel error -y \
  "${video[@]}" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=${seconds}" \
  -map 0:v -map 1:a \
  "${video_codec[@]}" \
  "${audio[@]}" -b:a 96k -ac 2 -ar 48000 -f "$container" \
  "$tmp"
mv -f "$tmp" "$out"
