#!/usr/bin/env bash
# The codecs of issue 24 (H.265 per RFC 7798, VP8 per RFC 7741, VP9 per RFC 9628), bit-exact at
# R = 0 through three independent players. Clips generated here with the ffmpeg CLI (x265 with
# B-frames and a scene cut; x265 with two temporal sub-layers at 640x360 in Matroska with Opus, so
# that FUs and APs both occur; libvpx VP8 with a two-layer pattern and Opus in WebM; libvpx-vp9
# with the same pattern in WebM) are each streamed by
# predrop-server over RTSP/UDP with SRTP to:
#   1. the measuring client (predrop-client; the server's fixed policy at rate 0): every block
#      must score the PSNR cap (pictures identical to the reference decoder's) and every picture
#      must be decoded; what it saves (--save: the H.265 Annex B stream; VP8 and VP9 in IVF) must
#      also decode, picture for picture, to what ffmpeg decodes from the file (framemd5 hashes);
#   2. the real ffmpeg CLI (--player-adaptation fixed, R = 0): the first N - 6 pictures it decodes
#      must hash like the file's (as interop_ffmpeg_corpus.sh; a run whose ffmpeg reports "RTP:
#      missed" lost packets in its own socket buffer and is repeated, at most three times);
#   1b. for the clips with Opus audio beside the video, the client scores the audio too: every
#      block's audio_psnr_db (the CSV's last column) at the cap at R = 0; and with 20 % of block
#      1's packets dropped on receipt (--impair 1:drop=0.2) the VP8 clip's block 1 scores its
#      audio below the cap while the other blocks' audio stays at it;
#   3. GStreamer (rtspsrc ! rtph265depay ! h265parse ! avdec_h265, resp. rtpvp8depay ! avdec_vp8, rtpvp9depay ! avdec_vp9,
#      to raw I420): at least N - 6 pictures, each hashing like the file's, in order.
# Usage: interop_codecs.sh SERVER_BINARY CLIENT_BINARY WORKDIR
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_client_interop "$@"

# name|file|size|ffmpeg encoding arguments|GStreamer decoding chain
clips=(
  "h265_bframes_cut|h265.mp4|320x240|-f lavfi -i testsrc2=s=320x240:r=30:d=1 -f lavfi -i life=s=320x240:r=30:mold=10:ratio=0.3:seed=7,trim=duration=1,format=yuv420p -filter_complex [0][1]concat=n=2:v=1:a=0,format=yuv420p -c:v libx265 -x265-params log-level=error:bframes=3:keyint=30|rtph265depay ! h265parse ! avdec_h265"
  "h265_temporal_layers|h265.mkv|640x360|-f lavfi -i smptehdbars=s=640x360:r=25:d=2 -f lavfi -i sine=frequency=440:sample_rate=48000:duration=2 -map 0:v -map 1:a -c:v libx265 -pix_fmt yuv420p -x265-params log-level=error:temporal-layers=1:crf=12 -c:a libopus -b:a 64k|rtph265depay ! h265parse ! avdec_h265"
  "vp8_layers|vp8.webm|320x240|-f lavfi -i testsrc2=s=320x240:r=30:d=2 -f lavfi -i sine=frequency=440:sample_rate=48000:duration=2 -map 0:v -map 1:a -c:v libvpx -b:v 500k -g 30 -error-resilient 1 -ts-parameters ts_layering_mode=2:ts_target_bitrate=300,500 -c:a libopus -b:a 64k|rtpvp8depay ! avdec_vp8"
  "vp9_layers|vp9.webm|320x240|-f lavfi -i testsrc2=s=320x240:r=30:d=2 -c:v libvpx-vp9 -b:v 500k -g 30 -error-resilient 1 -deadline realtime -cpu-used 8 -ts-parameters ts_layering_mode=2:ts_target_bitrate=300,500|rtpvp9depay ! avdec_vp9"
)

check_client() {
  local name="$1" file="$2" total="$3"
  serve_clip "$name.client-server.log" "$file" --policy fixed --fixed-rate 0 || return 1
  local saved="$name.client.es" format=(-f hevc)
  [[ "$file" == *.webm ]] && saved="$name.client.ivf" format=()
  timeout 60 "$client" "$clip_url" -r "$file" --csv "$name.client.csv" \
    --save "$saved" >"$name.client.log" 2>&1 || true
  stop_server
  local blocks below decoded
  read -r blocks below < <(below_cap "$name.client.csv")
  decoded=$(sed -n 's/.*frames decoded \([0-9]*\).*/\1/p' "$name.client.log")
  echo "$name: measuring client: $blocks blocks, $below below the PSNR cap, ${decoded:-0} of $total pictures decoded"
  if ((blocks == 0 || below != 0)) || [[ "${decoded:-0}" != "$total" ]]; then
    echo "FAIL: $name: measuring client"
    tail -5 "$name.client.log"
    return 1
  fi
  if [[ -n "$(ffprobe -v error -select_streams a -show_entries stream=index -of csv=p=0 "$file")" ]]; then
    local audio_blocks audio_capped
    audio_blocks=$(tail -n +2 "$name.client.csv" | awk -F, '$14 != ""' | wc -l)
    audio_capped=$(tail -n +2 "$name.client.csv" | awk -F, '$14 == "60.000"' | wc -l)
    echo "$name: measuring client: audio scored beside the video in $audio_blocks of $blocks" \
      "blocks, $audio_capped at the cap"
    if ((audio_blocks != blocks || audio_capped != blocks)); then
      echo "FAIL: $name: audio beside the video"
      return 1
    fi
  fi
  if [[ "$file" == *h265* || "$file" == *.webm ]]; then
    ffmpeg -nostdin -v error "${format[@]}" -i "$saved" -fps_mode passthrough -f framemd5 \
      "$name.saved.md5" || true
    md5_hashes "$name.saved.md5" >"$name.saved.hashes"
    local same
    same=$(same_prefix "$name.ref.hashes" "$name.saved.hashes")
    echo "$name: measuring client's saved stream: $same of $total pictures identical"
    ((same == total)) || { echo "FAIL: $name: saved stream differs"; return 1; }
  fi
  return 0
}

# shellcheck disable=SC2317 # run through retry_lossy
ffmpeg_once() {  # 0 identical, 1 failed, 2 ffmpeg lost packets (inconclusive)
  local name="$1" file="$2" want="$3"
  serve_clip "$name.ffmpeg-server.log" "$file" --player-adaptation fixed || return 1
  timeout -s INT 30 ffmpeg -nostdin -v info -rtsp_transport udp -i "$clip_url" \
    -map 0:v -fps_mode passthrough -frames:v "$want" -f framemd5 "$name.ffmpeg.md5" \
    >"$name.ffmpeg.log" 2>&1 || true
  stop_server
  md5_hashes "$name.ffmpeg.md5" >"$name.ffmpeg.hashes"
  local got same
  got=$(wc -l <"$name.ffmpeg.hashes")
  same=$(same_prefix "$name.ref.hashes" "$name.ffmpeg.hashes")
  echo "$name: ffmpeg: $got pictures received, first $same identical to the file's"
  ((got >= want && same == got)) && return 0
  grep -q "RTP: missed" "$name.ffmpeg.log" && return 2
  tail -10 "$name.ffmpeg.log"
  return 1
}

check_gstreamer() {
  local name="$1" file="$2" size="$3" chain="$4" total="$5"
  serve_clip "$name.gst-server.log" "$file" --player-adaptation fixed || return 1
  rm -f "$name.gst.yuv"
  # shellcheck disable=SC2086 # the decoding chain is several gst-launch arguments
  timeout -s INT 20 gst-launch-1.0 -q rtspsrc location="$clip_url" protocols=udp \
    latency=200 ! $chain ! video/x-raw,format=I420 ! filesink location="$name.gst.yuv" \
    >"$name.gst.log" 2>&1 || true
  stop_server
  ffmpeg -nostdin -v error -f rawvideo -pix_fmt yuv420p -s "$size" -i "$name.gst.yuv" \
    -f framemd5 "$name.gst.md5" 2>/dev/null || true
  md5_hashes "$name.gst.md5" >"$name.gst.hashes"
  local got same
  got=$(wc -l <"$name.gst.hashes")
  same=$(same_prefix "$name.ref.hashes" "$name.gst.hashes")
  echo "$name: GStreamer: $got pictures received, first $same identical to the file's"
  if ((got < total - 6 || same != got)); then
    echo "FAIL: $name: GStreamer"
    grep -iE "error|warn" "$name.gst.log" | head -5 || true
    return 1
  fi
}

command -v gst-launch-1.0 >/dev/null || { echo "gst-launch-1.0 missing"; exit 1; }
fail=0
for entry in "${clips[@]}"; do
  IFS='|' read -r name file size args chain <<<"$entry"
  generate_clip "$name" "$file" "$args" || { fail=1; continue; }
  ffmpeg -nostdin -v error -i "$file" -map 0:v -fps_mode passthrough -f framemd5 "$name.ref.md5"
  md5_hashes "$name.ref.md5" >"$name.ref.hashes"
  total=$(wc -l <"$name.ref.hashes")

  check_client "$name" "$file" "$total" || fail=1
  retry_lossy "$name" ffmpeg_once "$name" "$file" $((total - 6)) ||
    { echo "FAIL: $name: ffmpeg"; fail=1; }
  check_gstreamer "$name" "$file" "$size" "$chain" "$total" || fail=1
done

# The audio beside the video under loss: block 1 loses 20 % of its packets (video and audio).
if [[ -f vp8.webm ]]; then
  serve_clip impair.server.log vp8.webm --policy fixed --fixed-rate 0 || fail=1
  timeout 60 "$client" "$clip_url" -r vp8.webm --csv impair.csv --impair 1:drop=0.2 \
    >impair.log 2>&1 || true
  stop_server
  echo "vp8_layers: block 1 impaired: audio PSNR per block" \
    "$(tail -n +2 impair.csv | cut -d, -f1,14 | tr '\n' ' ')"
  if ! tail -n +2 impair.csv | awk -F, '$1 == 1 {hit = ($14 != "" && $14 + 0 < 60)}
      $1 != 1 && $14 != "60.000" {bad = 1} END {exit !(hit && !bad && NR > 1)}'; then
    echo "FAIL: vp8_layers: the audio's score beside the video under loss"
    tail -5 impair.log
    fail=1
  fi
fi
exit $fail
