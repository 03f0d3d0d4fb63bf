#!/usr/bin/env bash
# The bed's external media pair for Chromium (run-case.sh / run-suite.sh --media ext:THIS): each
# media flow becomes a WebRTC call from a Chromium in the sender namespace to a Chromium in the
# flow's receiver namespace, Google Congestion Control as shipped (side.mjs, README.md here).
#
#   ext-media.sh sender|receiver --flow I --listen IP --peer IP --out DIR --seconds N
#   (run-case.sh starts it in the right namespace and ends it with SIGTERM to its process group)
#
# The fake camera plays the clip predrop would stream in the same run: WEBRTC_CLIP if set, else
# PREDROP_CLIP (run-case.sh exports its --clip), else the clip named in the run's case.env, looked
# for in the run folder and the folders above it (where run-suite.sh keeps its clips); its raw copy is made under /tmp once (fake-media.sh; make it
# before the runs, or the first flow waits for it).
# Settings (environment): WEBRTC_CODEC (h264), WEBRTC_MAX_BITRATE (1160000 bit/s, the bed clip's
# rate on the wire, README.md), WEBRTC_DEGRADATION (maintain-resolution), WEBRTC_AUDIO (1: the
# clip's audio through Opus; 0: video only), WEBRTC_FIELD_TRIALS (none), WEBRTC_VIDEO_ELEMENT (1: the
# receiver plays the video in a muted <video>; 0: decode only, ~0.05 core less per call).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
role="${1:?usage: $0 sender|receiver --flow I --listen IP --peer IP --out DIR --seconds N}"
shift
opts=(--codec "${WEBRTC_CODEC:-h264}" --max-bitrate "${WEBRTC_MAX_BITRATE:-1160000}"
  --degradation "${WEBRTC_DEGRADATION:-maintain-resolution}")
[[ -n "${WEBRTC_FIELD_TRIALS:-}" ]] && opts+=(--field-trials "$WEBRTC_FIELD_TRIALS")
[[ "${WEBRTC_VIDEO_ELEMENT:-1}" == 0 && "$role" == receiver ]] && opts+=(--no-video-element)
# The clip run-case.sh was given: its name is in OUT/case.env, the file in OUT or a folder above.
case_clip() {
  local out="" name dir
  while (($#)); do [[ "$1" == --out ]] && out="$2"; shift; done
  [[ -r "$out/case.env" ]] || return 1
  name="$(awk -F'\t' '$1 == "clip" {print $2}' "$out/case.env")"
  [[ -n "$name" && "$name" != none ]] || return 1
  dir="$(readlink -f "$out")"
  while [[ "$dir" != / ]]; do
    [[ -r "$dir/$name" ]] && { echo "$dir/$name"; return 0; }
    dir="$(dirname "$dir")"
  done
  return 1
}
if [[ "$role" == sender ]]; then
  clip="${WEBRTC_CLIP:-${PREDROP_CLIP:-$(case_clip "$@" || true)}}"
  [[ -r "$clip" ]] || { echo "ext-media: no clip (set WEBRTC_CLIP, or give run-case.sh --clip)" >&2; exit 2; }
  read -r y4m wav < <("$here/fake-media.sh" "$clip")
  opts+=(--video "$y4m")
  [[ "${WEBRTC_AUDIO:-1}" == 1 ]] && opts+=(--audio "$wav")
fi
# exec: the bed's SIGTERM to the process group reaches node, which closes its browser.
exec node "$here/side.mjs" "$role" "$@" "${opts[@]}"
