#!/usr/bin/env bash
# WHEP under a flood of offers and hostile ones (docs/webrtc.md "Limits"): predrop-server serves
# a VP8 clip generated here with max_sessions_per_address = 4, and webrtc_offers.py floods it,
# sends malformed and oversized offers, stalls 40 request heads, deletes and offers again. No
# browser needed. Exits 77 (ctest SKIP_RETURN_CODE) without ffmpeg or python3.
#   webrtc_offers.sh SERVER_BINARY WORKDIR
set -euo pipefail
# shellcheck disable=SC2034  # read by lib.sh start_server
server="$1"
work="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
require_tools ffmpeg python3
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.toml
make_vp8_clip clip.webm
trap stop_server EXIT
rtsp_port=$(pick_port)
metrics_port=$(pick_port)
cat >offers.toml <<TOML
[server]
metrics_listen = "127.0.0.1:$metrics_port"
max_sessions_per_address = 4
[server.streams]
clip = "$work/clip.webm"
TOML
start_server server.log -c offers.toml --listen 127.0.0.1:"$rtsp_port" --loop --log-level info
if ! python3 "$here/webrtc_offers.py" "$metrics_port" clip 4; then
  tail -30 server.log
  exit 1
fi
kill -0 "${server_pid:?}" || { echo "the server died"; exit 1; }
