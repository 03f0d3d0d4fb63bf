#!/usr/bin/env bash
# How many Chromium calls this machine carries at once without losing frames to CPU: N calls on
# the open bed (no bottleneck) for SECONDS each, N from the list, one run after another, then a
# table per N (capacity.py). A call passes when its sender encodes and its receiver decodes at
# >= 29 fps on the mean, the sender never reports qualityLimitationReason "cpu", and the receiver
# drops no frames.
#
#   capacity.sh --out DIR --clip FILE [--calls "1 2 3 4 6"] [--seconds 30] [--pages per-call|one]
#
# The machine is shared: the load average before each run is recorded beside it (load.txt).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="" clip="" calls="1 2 3 4 6" seconds=30 pages=one
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --clip) clip="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --pages) pages="$2"; shift 2 ;;
    *) echo "capacity: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" && -n "$clip" ]] || { echo "usage: $0 --out DIR --clip FILE [--calls LIST] [--seconds S] [--pages per-call|one]" >&2; exit 2; }
mkdir -p "$out"
for n in $calls; do
  p=1
  [[ "$pages" == per-call ]] && p="$n"
  dir="$out/calls-$n-pages-$p"
  cut -d' ' -f1-3 /proc/loadavg >"$dir.load.txt" 2>/dev/null || true
  "$here/run-call.sh" --out "$dir" --clip "$clip" --duration "$seconds" --flows "$n" -- --pages "$p" --quiet
  mv -f "$dir.load.txt" "$dir/load.txt"
done
python3 "$here/capacity.py" "$out"/calls-*
