#!/usr/bin/env bash
# How many Chromium calls this machine carries at once without losing frames to CPU: N calls on
# the open bed (no bottleneck, no added delay) for SECONDS each, N from the list, one run after
# another, then a table per N (capacity.py). A call passes when its sender encodes and its
# receiver decodes at >= 29 fps on the mean, the sender never reports qualityLimitationReason
# "cpu", and the receiver drops no frames.
#
#   capacity.sh --out DIR --clip FILE [--calls "1 2 3 4"] [--seconds 45] [--mode ext|call]
#
# --mode ext (default): as the RFC 8867 cases run them — run-case.sh with ext-media.sh, one
#   sender and one receiver browser per call, each receiver in its own namespace.
# --mode call: call.mjs, one sender browser with all calls in one page (one capture shared) and
#   one receiver browser: cheaper per call, but not how the cases run.
# The machine is shared: the load average before each run is recorded beside it (load.txt).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="" clip="" calls="1 2 3 4" seconds=45 mode=ext
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --clip) clip="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    *) echo "capacity: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" && -n "$clip" && ("$mode" == ext || "$mode" == call) ]] ||
  { echo "usage: $0 --out DIR --clip FILE [--calls LIST] [--seconds S] [--mode ext|call]" >&2; exit 2; }
mkdir -p "$out"
out="$(readlink -f "$out")"
clip="$(readlink -f "$clip")"
"$here/fake-media.sh" "$clip" >/dev/null || exit 1
for n in $calls; do
  dir="$out/$mode-calls-$n"
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  if [[ "$mode" == call ]]; then
    "$here/run-call.sh" --out "$dir" --clip "$clip" --duration "$seconds" --flows "$n" -- --quiet
  else
    case_file="$(mktemp "/tmp/capacity-case.XXXXXX.sh")"
    flows=""
    for ((i = 0; i < n; i++)); do flows+="\"media 0 $seconds\" "; done
    cat >"$case_file" <<EOF
CASE_TITLE="capacity: $n Chromium calls on the open bed"
CASE_SCALE=1 CASE_DURATION=$seconds CASE_RATE=open CASE_QUEUE_MS=100 CASE_BURST=4000b CASE_OWD=0
CASE_EVENTS=()
CASE_FLOWS=($flows)
EOF
    # run-case.sh wants PREDROP_BIN even for external media (no delay line is used at 0 ms).
    PREDROP_BIN="${PREDROP_BIN:-/nonexistent}" "$here/../run-case.sh" --case "$case_file" --out "$dir" \
      --clip "$clip" --media "ext:$here/ext-media.sh" >"$dir.log" 2>&1
    rm -f "$case_file"
  fi
  echo "$load" >"$dir/load.txt"
done
# ext runs count from the case's t0, ~3-8 s before the calls connect; skip GCC's start-up too.
from=5
[[ "$mode" == ext ]] && from=15
python3 "$here/capacity.py" "$out"/"$mode"-calls-* --from "$from"
