#!/usr/bin/env bash
# predrop-load with two client threads against a real predrop-server on loopback: every client
# plays through the hold, the summary counts both threads' clients, SRTP verifies with no failure,
# the first thread's sessions are found in /metrics (feedback round trip), and the exit status
# is 0. Usage: load_threads.sh SERVER_BINARY LOAD_BINARY SCENARIO SAMPLE WORKDIR
set -euo pipefail
server="$1"
load="$2"
scenario="$3"
sample="$4"
work="$5"
mkdir -p "$work"
cd "$work"
rm -f server.log load.out load-summary.csv
# shellcheck source=../integration/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
trap stop_server EXIT
rtsp_port=$(pick_port)
metrics_port=$(pick_port)
start_server server.log --stream sample="$sample" --listen 127.0.0.1:"$rtsp_port" --loop \
  --metrics 127.0.0.1:"$metrics_port" --log-level info
# 12 clients (the server admits 16 per host by default), 6 per thread.
"$load" "$scenario" --url "rtsp://127.0.0.1:$rtsp_port/sample" --metrics 127.0.0.1:"$metrics_port" \
  --clients 12 --ramp 1 --hold 3 --threads 2 --summary-csv load-summary.csv -q >load.out
cat load.out
fail=0
grep -qE "sessions held +12 after ramp" load.out || { echo "FAIL: not all 12 clients played"; fail=1; }
grep -qE "SRTP +0 failed of [1-9]" load.out || { echo "FAIL: SRTP failures or nothing verified"; fail=1; }
# The first thread matches its sessions in /metrics by the number the server's SRs name.
grep -qE "feedback round trip +p50 [0-9]" load.out || { echo "FAIL: no feedback round trip"; fail=1; }
grep -qE "errors +none" load.out || { echo "FAIL: errors"; fail=1; }
[[ $(wc -l <load-summary.csv) -eq 2 ]] || { echo "FAIL: one merged summary row expected"; fail=1; }
exit $fail
