#!/usr/bin/env bash
# GStreamer publishes (docs/live.md "GStreamer's rtspclientsink"): gst-launch-1.0 sends a clip made
# here (H.264 with B-frames, 1 s GOP, and Opus audio in an MP4: filesrc ! qtdemux, h264parse and
# opusparse) into rtspclientsink with the stream's secret in its URL, over interleaved TCP
# (protocols=tcp) and then over UDP (protocols=udp). Each time an ffmpeg viewer (the same
# transport) decodes pictures bit-exact with the clip's (framemd5, R = 0), the audio is served (the
# server's count, at least 250 of the ~300, those before rtspclientsink's first sender reports
# too; ffmpeg's own audio timestamps are not always on the SRs' clock, docs/live.md),
# the publisher ends cleanly (its PAUSE and TEARDOWN answered 200), the viewer ends by itself, and
# the server logs the publication's end; the measuring client watches the TCP run (per-block PSNR
# against the clip). A third run publishes the same video with AAC through aacparse, which
# rtspclientsink payloads as MP4A-LATM (RFC 6416): the server repacks it into AAC-hbr, and every
# AAC frame the ffmpeg viewer gets must be one of the clip's byte for byte (framemd5). A run in which gst-launch hangs at its end of stream in GStreamer's own
# BYE/EOS race (gst_bye_race below, diagnosed from its rtpsession log) is inconclusive and tried
# again (stopped 2 s after the race shows), at most eight times; any other hang or error fails. Loopback only; nothing is timed but
# the hang guards.
#   live_gstreamer.sh SERVER_BINARY CLIENT_BINARY WORKDIR
set -euo pipefail
server="$1"
client="$2"
work="$3"
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.debug ./*.md5 ./*.hashes live.toml

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v gst-launch-1.0 >/dev/null || { echo "FAIL: gst-launch-1.0 missing (scripts/setup-deps.sh)"; exit 1; }
if ! gst-inspect-1.0 rtspclientsink >/dev/null 2>&1; then
  echo "FAIL: GStreamer's rtspclientsink missing (gstreamer1.0-rtsp: scripts/setup-deps.sh)"
  exit 1
fi

ffmpeg -nostdin -v error -f lavfi -i testsrc=size=320x240:rate=25 \
  -f lavfi -i sine=frequency=440:sample_rate=48000 -t 6 "${live_h264[@]}" -c:a libopus -b:a 48k \
  -y clip.mp4
ffmpeg -nostdin -v error -i clip.mp4 -map 0:v -f framemd5 clip.md5
md5_hashes clip.md5 | sort -u >clip.hashes
# The same pictures with AAC (no PNS, as live_audio.sh), and the clip's AAC frames' hashes.
ffmpeg -nostdin -v error -i clip.mp4 -f lavfi -i sine=frequency=440:sample_rate=48000 -t 6 \
  -map 0:v -map 1:a -c:v copy -c:a aac -b:a 96k -aac_pns 0 -y clip-aac.mp4
ffmpeg -nostdin -v error -i clip-aac.mp4 -map 0:a -c copy -f framemd5 clip-aac.md5
md5_hashes clip-aac.md5 | sort -u >clip-aac.hashes

start_publish_server 1

# Queues without limits (the clip is small): with the default 1 s limit, a demuxer that
# interleaves the file's tracks in chunks can fill one queue while the syncing sink waits for the
# other track, and the pipeline stalls (seen once on a loaded machine).
# gst_publish PROTOCOLS LOG [CLIP PARSER]: rtspclientsink publishes CLIP (clip.mp4, its audio
# through PARSER, opusparse) in real time (the sink syncs on the pipeline clock) over PROTOCOLS;
# 15 s at most (the clip is 6 s). GStreamer's RTP session
# log (rtpsession:6) goes to LOG.debug, for gst_bye_race. Run it in the background: the
# subshell becomes the timeout process (exec), so that its pid can be signalled.
gst_publish() {
  GST_DEBUG_NO_COLOR=1 GST_DEBUG=rtpsession:6 GST_DEBUG_FILE="$2.debug" \
    exec timeout -s INT -k 5 15 gst-launch-1.0 -e rtspclientsink name=s protocols="$1" \
    location="$base?secret=$secret" \
    filesrc location="${3:-clip.mp4}" ! qtdemux name=d \
    d.video_0 ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! h264parse ! s.sink_0 \
    d.audio_0 ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! "${4:-opusparse}" ! \
    s.sink_1 >"$2" 2>&1
}

# gst_bye_race DEBUG_LOG: true if one of rtspclientsink's RTP sessions sent its BYE at the end
# of stream without forwarding the EOS after it ("scheduling BYE message", no "sending EOS").
# That is a race in GStreamer 1.22's rtpsession, not the server's doing: the EOS on its RTP sink
# pad schedules the BYE and wakes its RTCP thread from inside the pad's event handler, and the
# RTCP thread forwards the EOS after the BYE only if that pad is already flagged EOS, which
# happens once the handler returns. When the RTCP thread wins (a loaded machine), the RTCP sink
# never gets EOS, the bin never posts it and gst-launch waits for ever ("Waiting for EOS" once
# interrupted). Reproduced with six publishers pinned to one core: 7 of 18 hung, each with this
# signature, while the server still had their connections open.
gst_bye_race() {
  local session
  for session in $(grep -o "<rtpsession[0-9]*> scheduling BYE message" "$1" 2>/dev/null |
    grep -o "rtpsession[0-9]*" | sort -u); do
    grep -q "<$session> sending EOS" "$1" || return 0
  done
  return 1
}

fail=0
run=0
# one_run PROTOCOLS FFMPEG_TRANSPORT [aac]: a publication, an ffmpeg viewer; checks and prints.
# With aac: clip-aac.mp4 through aacparse (MP4A-LATM), and the viewer's AAC frames checked too.
# Returns 0 when every check passed, 2 when gst-launch hung in GStreamer's BYE/EOS race
# (gst_bye_race: inconclusive, the caller tries again), 1 otherwise.
one_run() {
  local protocols="$1" transport="$2" codec="${3:-opus}" pub_rc=0 view_rc=0 frames foreign audio ok=0
  local clip=clip.mp4 parser=opusparse audio_out=() aac_frames=0 aac_foreign=0
  if [[ "$codec" == aac ]]; then
    clip="clip-aac.mp4"
    parser=aacparse
    audio_out=(-map 0:a -c:a copy -f framemd5 "viewer-$protocols-aac.md5")
  fi
  run=$((run + 1))
  if [[ -n "${client_pid:-}" ]]; then
    wait "$client_pid" || true  # the measuring client of an attempt tried again
    client_pid=""
  fi
  rm -f "gst-$protocols.log" "gst-$protocols.log.debug" "viewer-$protocols".* "viewer-$protocols"-aac.*
  gst_publish "$protocols" "gst-$protocols.log" "$clip" "$parser" &
  pub_pid=$!
  await server.log "'live' published" "$run" || ok=1
  timeout -s INT 40 ffmpeg -nostdin -v info -rtsp_transport "$transport" -i "$base" \
    -map 0:v -f framemd5 "viewer-$protocols.md5" "${audio_out[@]}" >"viewer-$protocols.log" 2>&1 &
  view_pid=$!
  if [[ "$protocols" == tcp && "$codec" == opus ]]; then
    timeout -s INT 40 "$client" "$base" --reference clip.mp4 --log-level info >client.log 2>&1 &
    client_pid=$!
  fi
  # A BYE without its EOS for 2 s is the race (the two are microseconds apart otherwise): stop
  # gst-launch then rather than at its hang guard (timeout passes SIGTERM on to it).
  local raced=0
  while kill -0 "$pub_pid" 2>/dev/null; do
    if gst_bye_race "gst-$protocols.log.debug"; then
      raced=$((raced + 1))
      ((raced < 4)) || kill -TERM "$pub_pid" 2>/dev/null || true
    else
      raced=0
    fi
    sleep 0.5
  done
  count_foreign_pictures "viewer-$protocols.hashes" md5_hashes "viewer-$protocols.md5"
  if [[ "$codec" == aac ]]; then
    md5_hashes "viewer-$protocols-aac.md5" >"viewer-$protocols-aac.hashes" 2>/dev/null || true
    aac_frames=$(wc -l <"viewer-$protocols-aac.hashes")
    aac_foreign=$(sort "viewer-$protocols-aac.hashes" | comm -23 - clip-aac.hashes | wc -l)
  fi
  await server.log "'live' ended" "$run" || ok=1
  # Audio served: what came minus what could not be placed (before the first key frame). The
  # audio before both tracks' first sender reports, which rtspclientsink sends only after a
  # second or two, is placed by its arrival (docs/live.md "Audio"): the line says how far the
  # reports then put it.
  audio=$(grep "'live' ended" server.log | tail -1 |
    sed -n 's/.*audio \([0-9]*\) packets (\([0-9]*\) not used.*/\1 \2/p' | awk '{ print $1 - $2 }')
  echo "GStreamer over $protocols ($codec): publisher rc=$pub_rc; ffmpeg viewer ($transport)" \
    "rc=$view_rc: $frames pictures, $foreign not the clip's; audio packets served ${audio:-?};" \
    "$([[ "$codec" == aac ]] && echo "AAC frames received $aac_frames, $aac_foreign not the clip's;")" \
    "$(grep "'live' ended" server.log | tail -1 | sed 's/.*ended: //')"
  if [[ "$pub_rc" -ne 0 ]] && gst_bye_race "gst-$protocols.log.debug"; then
    echo "gst-launch over $protocols hung at its end of stream in GStreamer's BYE/EOS race" \
      "(an RTP session sent its BYE but never its EOS: gst-$protocols.log.debug); inconclusive"
    return 2
  fi
  # Seen in 2 of 38 runs under a heavy parallel build, over TCP, not reproduced with debug logs:
  # after its end of stream, rtspclientsink's next request found the connection closed. Not
  # diagnosed (docs/live.md "Known problems"); tried again like the race above.
  if [[ "$pub_rc" -ne 0 ]] && grep -q "EOS received" "gst-$protocols.log" &&
    grep -q "Could not send message. (Received end-of-file)" "gst-$protocols.log"; then
    echo "gst-launch over $protocols: its request after the end of stream found the connection" \
      "closed (Received end-of-file; undiagnosed, docs/live.md); inconclusive"
    grep "'live' ended" server.log | tail -1
    return 2
  fi
  if [[ "$pub_rc" -ne 0 ]]; then
    echo "FAIL: gst-launch over $protocols failed (rc $pub_rc)"; tail -8 "gst-$protocols.log"; ok=1
  fi
  if grep -q "ERROR" "gst-$protocols.log"; then
    echo "FAIL: rtspclientsink reported an error"; grep -A3 ERROR "gst-$protocols.log" | head -12; ok=1
  fi
  [[ "$view_rc" -eq 0 ]] || { echo "FAIL: the viewer did not end cleanly"; tail -5 "viewer-$protocols.log"; ok=1; }
  if [[ "$frames" -lt 75 || "$foreign" -ne 0 ]]; then
    echo "FAIL: over $protocols fewer than 75 pictures or pictures not bit-exact"; ok=1
  fi
  # All but those before the first key frame (1-3 in 20 runs; 164 of 300 when the audio before
  # the sender reports was dropped).
  if [[ "${audio:-0}" -lt 250 ]]; then
    echo "FAIL: over $protocols fewer than 250 of the ~300 $codec packets were served"; ok=1
  fi
  if [[ "$codec" == aac ]] && ((aac_frames < 100 || aac_foreign != 0)); then
    echo "FAIL: the viewer got fewer than 100 AAC frames or frames not the clip's (MP4A-LATM)"
    grep -i "audio\|aac\|latm" server.log | tail -5; ok=1
  fi
  return "$ok"
}

# retry_gst_race NAME COMMAND...: COMMAND up to eight times while it returns 2 (gst_bye_race: on
# a loaded machine one run in two can hang so; such a run is stopped 2 s after the race shows).
retry_gst_race() {
  local name="$1" attempt result=0
  shift
  for attempt in 1 2 3 4 5 6 7 8; do
    "$@" && result=0 || result=$?
    ((result == 2)) || break
    echo "$name: attempt $attempt inconclusive (GStreamer's BYE/EOS race or the end-of-file above); again"
  done
  return "$result"
}

retry_gst_race "GStreamer over tcp" one_run tcp tcp || fail=1
client_rc=0
wait "$client_pid" || client_rc=$?
client_pid=""
blocks=$(awk '/^blocks / { print $2 }' client.log | tr -d ',')
psnr=$(sed -n 's/.*mean PSNR \([0-9.]*\) dB.*/\1/p' client.log)
echo "measuring client rc=$client_rc: ${blocks:-?} blocks, mean PSNR ${psnr:-?} dB"
[[ "$client_rc" -eq 0 ]] || { echo "FAIL: the measuring client did not end cleanly"; tail -5 client.log; fail=1; }
if [[ "${blocks:-0}" -lt 2 ]] || ! awk -v p="${psnr:-0}" 'BEGIN { exit !(p >= 35) }'; then
  echo "FAIL: the measuring client got fewer than 2 blocks or a mean PSNR under 35 dB"
  tail -15 client.log; fail=1
fi

retry_gst_race "GStreamer over udp" one_run udp udp || fail=1
retry_gst_race "GStreamer over tcp, AAC as MP4A-LATM" one_run tcp tcp aac || fail=1

if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "FAIL: the server died"; tail -20 server.log; fail=1
fi
exit $fail
