#!/usr/bin/env bash
# The status page in a real browser (issue 25 item 4): predrop-server streams the sample in a
# loop to the measuring client, and Debian's headless Chromium loads http://.../status, driven
# over the DevTools pipe by status_page.mjs (bench/testbed/webrtc-peer/chromium.mjs, no npm).
# The page must load without console errors or exceptions, list the playing session, and its
# plot must grow by blocks while we watch; a screenshot goes to WORKDIR/status_page.png.
# Exits 77 (ctest SKIP_RETURN_CODE) when chromium or node is absent.
#   status_page.sh SERVER_BINARY CLIENT_BINARY SAMPLE WORKDIR
set -euo pipefail
# shellcheck disable=SC2034  # read by lib.sh start_server
server="$1"
client="$2"
sample="$3"
work="$4"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  echo "SKIP: no chromium at $chromium (Debian: apt-get install chromium)"
  exit 77
fi
if ! command -v node >/dev/null; then
  echo "SKIP: no node to drive chromium (Debian: apt-get install nodejs)"
  exit 77
fi
mkdir -p "$work"
cd "$work"
rm -f server.log client.log browser.log status_page.png status.toml

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rtsp_port=$(pick_port)
metrics_port=$(pick_port)
# Quarter-second blocks: the plot gains four points a second.
cat >status.toml <<EOF
[server]
metrics_listen = "127.0.0.1:$metrics_port"
[server.streams]
sample = "$sample"
[blocks]
duration_ms = 250
EOF

client_pid=""
cleanup() {
  if [[ -n "$client_pid" ]]; then
    kill "$client_pid" 2>/dev/null || true
    wait "$client_pid" 2>/dev/null || true
  fi
  stop_server
}
trap cleanup EXIT
start_server server.log -c status.toml --listen 127.0.0.1:"$rtsp_port" --loop --log-level info
# Long enough for any page check below; stopped by cleanup.
"$client" "rtsp://127.0.0.1:$rtsp_port/sample" --reference "$sample" -n 100000 \
  --log-level warn >client.log 2>&1 &
client_pid=$!

CHROMIUM="$chromium" node "$here/status_page.mjs" "http://127.0.0.1:$metrics_port" "$work"
