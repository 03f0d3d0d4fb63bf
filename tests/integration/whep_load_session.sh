#!/usr/bin/env bash
# The scripted WHEP viewer of predrop-load (load/include/predrop/load/whep_client.hpp) completes
# sessions against the real server: 3 viewers POST, pass ICE, DTLS, receive SRTP that
# authenticates, send transport-cc feedback that the server turns into block reports, and
# DELETE their sessions (the server's session count goes back to 0). A few seconds; no browser.
# Exits 77 (ctest SKIP_RETURN_CODE) without ffmpeg or python3.
#   whep_load_session.sh SERVER_BINARY LOAD_BINARY WORKDIR
set -euo pipefail
# shellcheck disable=SC2034  # read by lib.sh start_server
server="$1"
load="$2"
work="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
require_tools ffmpeg python3 curl
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.toml ./*.csv
make_vp8_clip clip.webm
trap stop_server EXIT
rtsp_port=$(pick_port)
metrics_port=$(pick_port)
cat >whep.toml <<TOML
[server]
metrics_listen = "127.0.0.1:$metrics_port"
[server.streams]
clip = "$work/clip.webm"
TOML
start_server server.log -c whep.toml --listen 127.0.0.1:"$rtsp_port" --loop --log-level info
if ! "$load" -q whep --http 127.0.0.1:"$metrics_port" --stream clip --clients 3 --ramp 0.3 \
  --settle 1 --hold 3 --verify-every 1 --csv whep.csv | tee load.log; then
  echo "FAIL: not every viewer played to the end"
  tail -30 server.log
  exit 1
fi
fail() {
  echo "FAIL: $1"
  tail -30 server.log
  exit 1
}
grep -q "SRTP verified [1-9][0-9]*, failed 0;" load.log || fail "SRTP not verified or failed"
grep -q "transport-cc messages sent [1-9]" load.log || fail "no transport-cc feedback sent"
metric() {
  curl -s "http://127.0.0.1:$metrics_port/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}
connected=$(metric predrop_webrtc_dtls_connected_total)
reports=$(metric predrop_webrtc_twcc_reports_total)
echo "server: dtls connected ${connected:-?}, transport-cc block reports ${reports:-?}"
[[ "${connected:-0}" == 3 ]] || fail "expected 3 DTLS associations"
[[ "${reports:-0}" -ge 3 ]] || fail "transport-cc feedback made no block reports"
# DELETE ended every session (the worker that owns one ends it a moment later: awaited).
for _ in $(seq 20); do
  sessions=$(metric predrop_sessions)
  [[ "${sessions:-0}" == 0 ]] && break
  sleep 0.1
done
[[ "${sessions:-0}" == 0 ]] || fail "sessions left after DELETE: $sessions"
kill -0 "${server_pid:?}" || fail "the server died"
echo "PASS"
