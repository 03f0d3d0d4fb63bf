#!/usr/bin/env bash
# NACK/RTX in a real browser on a lossy path (docs/webrtc.md "NACK and RTX"): Debian's headless
# Chromium plays a VP8 clip from predrop-server over loopback while LOSS of the server's UDP
# datagrams are dropped at random before the browser reads them (iptables `statistic` in the
# INPUT chain). Everything runs in a private network namespace made here (unshare -n), so no rule
# or address outside it is touched, and it goes away with the processes. Prints the browser's
# figures (frames decoded, freezes, NACKs it sent, retransmissions it received) and the server's
# counters. Fails unless the browser decoded MIN_FRAMES (200 of the 300 of 10 s; without NACK
# about 110-130 at 3 % loss) and the server resent something (or LOSS is 0).
# Exits 77 (ctest SKIP_RETURN_CODE) without unshare/iptables/chromium/node/ffmpeg.
#   webrtc_nack_lossy.sh SERVER_BINARY WORKDIR [LOSS (0.03)] [PLAY_S (10)] [MIN_FRAMES (200)]
set -euo pipefail
# shellcheck disable=SC2034  # read by lib.sh start_server
server="$1"
work="$2"
loss="${3:-0.03}"
play_s="${4:-10}"
min_frames="${5:-200}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
if [[ "${PREDROP_LOSSY_INNER:-}" != 1 ]]; then
  require_tools unshare iptables ss /usr/bin/chromium node ffmpeg curl
  if ! unshare -n true 2>/dev/null; then
    echo "SKIP: no network namespace (unshare -n)"
    exit 77
  fi
  exec unshare -n env PREDROP_LOSSY_INNER=1 "$0" "$@"
fi
ip link set lo up
mkdir -p "$work"
cd "$work"
trap stop_server EXIT
[[ -f vp8.webm ]] || ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=s=640x360:r=30:d=10 \
  -c:v libvpx -b:v 800k -g 30 -deadline realtime -cpu-used 8 vp8.webm
rtsp_port=$(pick_port)
metrics_port=$(pick_port)
cat >lossy.toml <<TOML
[server]
metrics_listen = "127.0.0.1:$metrics_port"
[server.streams]
vp8 = "$work/vp8.webm"
TOML
start_server lossy.server.log -c lossy.toml --listen 127.0.0.1:"$rtsp_port" --loop
# Every UDP port of the server: what it sends leaves from one of them.
# shellcheck disable=SC2154  # server_pid: set by lib.sh start_server
while read -r port; do
  iptables -A INPUT -p udp --sport "$port" -m statistic --mode random --probability "$loss" -j DROP
done < <(ss -Hulnp | awk -v p="pid=$server_pid," 'index($0, p) { n = split($4, a, ":"); print a[n] }')
status=0
node "$here/webrtc_chromium.mjs" "http://127.0.0.1:$metrics_port/vp8/" "$work" "$min_frames" "$play_s" \
  >lossy.browser.out 2>&1 || status=$?
echo "browser: $(head -1 lossy.browser.out)"
dropped=$(iptables -L INPUT -v -x -n | awk '/statistic/ { n += $1 } END { print n + 0 }')
echo "dropped by the path: $dropped datagrams (loss $loss)"
curl -fsS "http://127.0.0.1:$metrics_port/metrics" >lossy.metrics
grep -E '^predrop_webrtc_(nack|rtx|key_frame|twcc_reports)' lossy.metrics || true
rtx=$(awk '$1 == "predrop_webrtc_rtx_packets_total" { print $2 + 0 }' lossy.metrics)
if [[ "$loss" != 0 ]] && ((dropped > 0 && ${rtx:-0} == 0)); then
  echo "FAILED: packets were lost and none was resent"
  status=1
fi
exit $status
