#!/usr/bin/env bash
# Interop with GStreamer, an independent player: gst-launch-1.0 rtspsrc plays predrop-server's
# default stream (RTSP over UDP, SRTP keyed by MIKEY in a=key-mgmt, as rtspsrc requires) and
# decodes H.264 frames, with the default suite (AES_CM_128_HMAC_SHA1_80) and with AES-GCM.
# Asserts a minimum number of decoded frames and no SRTP/SRTCP unprotect errors in GStreamer's
# srtpdec log. AES_CM_128_HMAC_SHA1_32 is left out on purpose: GStreamer applies the 32-bit tag
# to SRTCP as well (MIKEY's security policy has one tag length for both), while predrop, libsrtp
# and ffmpeg use 80-bit SRTCP tags with that suite (RFC 4568 §6.2.2 / libsrtp's policy note), so
# GStreamer decodes the media but rejects the server's RTCP sender reports.
#   interop_gstreamer.sh SERVER_BINARY SAMPLE WORKDIR
set -euo pipefail
server="$1"
sample="$2"
work="$3"
mkdir -p "$work"
cd "$work"
command -v gst-launch-1.0 >/dev/null || { echo "gst-launch-1.0 missing (scripts/setup-deps.sh installs it)"; exit 1; }

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap stop_server EXIT

fail=0
for suite in AES_CM_128_HMAC_SHA1_80 AEAD_AES_128_GCM; do
  rtsp_port=$(pick_port)
  rm -f server.log gst.log
  start_server server.log --stream sample="$sample" --listen 127.0.0.1:"$rtsp_port" \
    --srtp "$suite" --loop --metrics 127.0.0.1:0 --log-level info || { fail=1; continue; }
  # fakesink prints one "chain" line per decoded frame with -v and silent=false.
  GST_DEBUG_NO_COLOR=1 GST_DEBUG=srtpdec:4 timeout -s INT 10 gst-launch-1.0 -v rtspsrc \
    location="rtsp://127.0.0.1:$rtsp_port/sample" protocols=udp latency=200 \
    ! rtph264depay ! h264parse ! avdec_h264 ! fakesink silent=false >gst.log 2>&1 || true
  stop_server
  frames=$(grep -c "fakesink0:sink) (" gst.log || true)
  # srtpdec logs every packet it cannot unprotect (auth failure, replay, wrong key) as WARN.
  errors=$(grep -E " srtpdec " gst.log | grep -cE " (WARN|ERROR) " || true)
  echo "GStreamer rtspsrc, $suite: $frames frames decoded, $errors SRTP errors"
  if [[ "$frames" -lt 60 || "$errors" -ne 0 ]]; then
    echo "FAIL ($suite)"
    grep -iE "error|warn" gst.log | head -20 || true
    fail=1
  fi
done
exit $fail
