#!/usr/bin/env bash
# The audio codecs of issue 24 (L16 per RFC 3551, L24 per RFC 3190, MP3 per RFC 2250), bit-exact
# at R = 0 through three independent players. Audio-only clips generated here with the ffmpeg CLI
# (48 kHz stereo pcm_s16le and pcm_s24le in WAV, 16 kHz mono pcm_s16be in AIFF, libmp3lame at
# 44.1 kHz 128 kbit/s and at 32 kHz 320 kbit/s, whose 1440-byte frames are fragmented) are each
# streamed by predrop-server over RTSP/UDP with SRTP (the players: plain RTP) to:
#   1. the measuring client (predrop-client; the server's fixed policy at rate 0): every block
#      must score the audio PSNR cap (the decoded PCM identical to the file's, docs/media.md);
#   2. the real ffmpeg CLI (--player-adaptation fixed, R = 0), writing what it receives without
#      decoding (PCM: the raw big-endian samples; MP3: the frames, -c copy, no tags): at least
#      90 % of the file's bytes, identical to the file's from the first;
#   3. GStreamer (rtspsrc ! rtpL16depay / rtpL24depay / rtpmpadepay ! filesink): the same.
# A run whose ffmpeg reports "RTP: missed" lost packets in its own socket buffer and is repeated,
# at most three times.
# Usage: interop_audio.sh SERVER_BINARY CLIENT_BINARY WORKDIR
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_client_interop "$@"

# name|file|ffmpeg encoding arguments|ffmpeg output arguments for the received (and reference)
# bytes|GStreamer depayloader
mp3_out="-c:a copy -write_xing 0 -id3v2_version 0 -f mp3"
clips=(
  "l16_stereo|l16.wav|-f lavfi -i sine=frequency=440:sample_rate=48000:duration=4 -f lavfi -i sine=frequency=660:sample_rate=48000:duration=4 -filter_complex amerge=inputs=2 -c:a pcm_s16le|-c:a pcm_s16be -f s16be|rtpL16depay"
  "l24_stereo|l24.wav|-f lavfi -i sine=frequency=1000:sample_rate=48000:duration=4 -ac 2 -c:a pcm_s24le|-c:a pcm_s24be -f s24be|rtpL24depay"
  "l16_mono_be|l16.aiff|-f lavfi -i anoisesrc=sample_rate=16000:duration=4:seed=3 -c:a pcm_s16be|-c:a pcm_s16be -f s16be|rtpL16depay"
  "mp3|lame.mp3|-f lavfi -i sine=frequency=440:sample_rate=44100:duration=4 -ac 2 -c:a libmp3lame -b:a 128k|$mp3_out|rtpmpadepay"
  "mp3_fragments|lame32k.mp3|-f lavfi -i anoisesrc=sample_rate=32000:duration=4:seed=5 -ac 2 -c:a libmp3lame -b:a 320k|$mp3_out|rtpmpadepay"
)

check_client() {
  local name="$1" file="$2"
  serve_clip "$name.client-server.log" "$file" --policy fixed --fixed-rate 0 || return 1
  timeout 60 "$client" "$clip_url" -r "$file" --csv "$name.client.csv" \
    >"$name.client.log" 2>&1 || true
  stop_server
  local blocks below
  read -r blocks below < <(below_cap "$name.client.csv")
  echo "$name: measuring client: $blocks blocks, $below below the audio PSNR cap"
  if ((blocks == 0 || below != 0)); then
    echo "FAIL: $name: measuring client"
    tail -5 "$name.client.log"
    return 1
  fi
}

# compare NAME PLAYER GOT: GOT must be a prefix of NAME.ref.raw holding at least 90 % of it.
compare() {
  local name="$1" player="$2" got="$3" want have
  want=$(stat -c %s "$name.ref.raw")
  have=$(stat -c %s "$got" 2>/dev/null || echo 0)
  if ((have * 10 >= want * 9)) && cmp -s -n "$have" "$got" "$name.ref.raw"; then
    echo "$name: $player: $have of $want bytes received, identical to the file's"
    return 0
  fi
  echo "$name: $player: $have of $want bytes received, $(cmp -n "$have" "$got" "$name.ref.raw" 2>&1 | head -1)"
  return 1
}

# shellcheck disable=SC2317 # run through retry_lossy
ffmpeg_once() {  # 0 identical, 1 failed, 2 ffmpeg lost packets (inconclusive)
  local name="$1" file="$2" out="$3"
  serve_clip "$name.ffmpeg-server.log" "$file" --player-adaptation fixed || return 1
  rm -f "$name.ffmpeg.raw"
  # shellcheck disable=SC2086 # the output arguments are several words
  timeout -s INT 20 ffmpeg -nostdin -v info -rtsp_transport udp -i "$clip_url" \
    -map 0:a $out "$name.ffmpeg.raw" >"$name.ffmpeg.log" 2>&1 || true
  stop_server
  compare "$name" ffmpeg "$name.ffmpeg.raw" && return 0
  grep -q "RTP: missed" "$name.ffmpeg.log" && return 2
  tail -5 "$name.ffmpeg.log"
  return 1
}

check_gstreamer() {
  local name="$1" file="$2" depay="$3"
  serve_clip "$name.gst-server.log" "$file" --player-adaptation fixed || return 1
  rm -f "$name.gst.raw"
  timeout -s INT 20 gst-launch-1.0 -q rtspsrc location="$clip_url" protocols=udp \
    latency=200 ! "$depay" ! filesink location="$name.gst.raw" >"$name.gst.log" 2>&1 || true
  stop_server
  compare "$name" GStreamer "$name.gst.raw" && return 0
  echo "FAIL: $name: GStreamer"
  grep -iE "error|warn" "$name.gst.log" | head -5 || true
  return 1
}

command -v gst-launch-1.0 >/dev/null || { echo "gst-launch-1.0 missing"; exit 1; }
fail=0
for entry in "${clips[@]}"; do
  IFS='|' read -r name file args out depay <<<"$entry"
  generate_clip "$name" "$file" "$args" || { fail=1; continue; }
  # shellcheck disable=SC2086 # the output arguments are several words
  ffmpeg -nostdin -v error -i "$file" -map 0:a $out "$name.ref.raw"

  check_client "$name" "$file" || fail=1
  retry_lossy "$name" ffmpeg_once "$name" "$file" "$out" || { echo "FAIL: $name: ffmpeg"; fail=1; }
  check_gstreamer "$name" "$file" "$depay" || fail=1
done
exit $fail
