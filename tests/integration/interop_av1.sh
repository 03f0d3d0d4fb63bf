#!/usr/bin/env bash
# AV1 (AOMedia "RTP Payload Format For AV1" v1.0) end to end: predrop-server streams clips made
# here over RTSP/UDP with SRTP to the measuring client, the only player that can check it here
# (FFmpeg 5.1 has no AV1 RTP depacketizer and GStreamer 1.22 no rtpav1depay: docs/media.md "AV1").
# Clips: libaom-av1 realtime 320x240@30, 4 s, with Opus audio in Matroska (one frame per temporal
# unit); SVT-AV1 with its random-access hierarchy (4 levels, mini-GOPs of 8) in IVF (hidden
# frames, show_existing_frame units, a top level that refreshes no reference slot).
#   1. R = 0 (fixed policy at rate 0): every block at the PSNR cap (pictures identical to the
#      reference decoder's, libdav1d on both sides), every picture decoded, and the temporal units
#      the client saves (--save: IVF) decode with ffmpeg to the file's pictures, framemd5 for
#      framemd5.
#   2. R = 0.2 on the SVT-AV1 clip with the priority planner (the default) and with the uniform
#      one: priority drops only disposable pictures, whole, so the rest decode undamaged (a
#      dropped picture is scored as the last one shown: the drop costs only its own freeze); its
#      mean PSNR must beat uniform's by more than 1 dB and no block may fall below 20 dB.
# Usage: interop_av1.sh SERVER_BINARY CLIENT_BINARY WORKDIR
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_client_interop "$@"

# name|file|ffmpeg encoding arguments
clips=(
  "aom|aom.mkv|-f lavfi -i testsrc2=s=320x240:r=30:d=4 -f lavfi -i sine=frequency=440:sample_rate=48000:duration=4 -map 0:v -map 1:a -c:v libaom-av1 -usage realtime -cpu-used 8 -g 30 -b:v 400k -c:a libopus -b:a 64k"
  "svt|svt.ivf|-f lavfi -i testsrc2=s=320x240:r=30:d=4 -c:v libsvtav1 -g 32 -svtav1-params hierarchical-levels=3:preset=12"
)

# run_client NAME FILE RATE [SERVER OPTIONS...]: streams FILE at the fixed rate RATE to the
# measuring client; leaves NAME.csv, NAME.log and NAME.ivf (the temporal units received).
run_client() {
  local name="$1" file="$2" rate="$3"
  shift 3
  serve_clip "$name.server.log" "$file" --policy fixed --fixed-rate "$rate" "$@" || return 1
  timeout 60 "$client" "$clip_url" -r "$file" --csv "$name.csv" --save "$name.ivf" \
    >"$name.log" 2>&1 || true
  stop_server
}

decoded_of() { sed -n 's/.*frames decoded \([0-9]*\).*/\1/p' "$1"; }
mean_of() { sed -n 's/.*mean PSNR \([0-9.]*\) dB.*/\1/p' "$1"; }
worst_of() { tail -n +2 "$1" | awk -F, 'NR == 1 || $4 < m {m = $4} END {print m + 0}'; }

fail=0
for entry in "${clips[@]}"; do
  IFS='|' read -r name file args <<<"$entry"
  generate_clip "$name" "$file" "$args" || { fail=1; continue; }
  ffmpeg -nostdin -v error -i "$file" -map 0:v -fps_mode passthrough -f framemd5 "$name.ref.md5"
  md5_hashes "$name.ref.md5" >"$name.ref.hashes"
  total=$(wc -l <"$name.ref.hashes")

  run_client "$name.r0" "$file" 0 || { fail=1; continue; }
  read -r blocks below < <(below_cap "$name.r0.csv")
  decoded=$(decoded_of "$name.r0.log")
  ffmpeg -nostdin -v error -i "$name.r0.ivf" -fps_mode passthrough -f framemd5 \
    "$name.saved.md5" || true
  md5_hashes "$name.saved.md5" >"$name.saved.hashes"
  same=$(same_prefix "$name.ref.hashes" "$name.saved.hashes")
  echo "$name: R = 0: $blocks blocks, $below below the PSNR cap, ${decoded:-0} of $total" \
    "pictures decoded, saved stream: $same of $total pictures identical"
  if ((blocks == 0 || below != 0 || same != total)) || [[ "${decoded:-0}" != "$total" ]]; then
    echo "FAIL: $name: not bit-exact at R = 0"
    tail -5 "$name.r0.log"
    fail=1
  fi
done

# Layer-aware discard at R = 0.2 on the hierarchical clip, against the uniform planner (a config
# that names the same stream, for its [discard] policy).
if [[ -f svt.ivf ]]; then
  printf '[server.streams]\nc = "svt.ivf"\n\n[discard]\npolicy = "uniform"\n' >uniform.toml
  run_client svt.priority svt.ivf 0.2 || fail=1
  run_client svt.uniform svt.ivf 0.2 -c uniform.toml || fail=1
  total=$(wc -l <svt.ref.hashes)
  for run in priority uniform; do
    discarded=$(tail -n +2 "svt.$run.csv" | awk -F, '{d += $7; s += $5} END {print d "/" s}')
    echo "svt: R = 0.2 $run: $(below_cap "svt.$run.csv" | cut -d' ' -f1) blocks, $discarded" \
      "packets discarded, mean PSNR $(mean_of "svt.$run.log") dB, worst block" \
      "$(worst_of "svt.$run.csv") dB, $(decoded_of "svt.$run.log") of $total pictures decoded"
  done
  read -r p_blocks _ < <(below_cap svt.priority.csv)
  if ((p_blocks == 0)) || ! awk -v p="$(mean_of svt.priority.log)" -v u="$(mean_of svt.uniform.log)" \
    -v w="$(worst_of svt.priority.csv)" 'BEGIN {exit !(p > u + 1 && w >= 20)}'; then
    echo "FAIL: svt: layer-aware discard at R = 0.2"
    tail -5 svt.priority.log
    fail=1
  fi
fi
exit $fail
