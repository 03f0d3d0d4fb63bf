#!/usr/bin/env bash
# Smoke check of the Chromium harness, by hand (not in CI: Chromium is heavy): one short call
# through the open bed. Passes when the call connects, the receiver decodes frames, and the
# media crossed the bottleneck (the tbf forwarded at least 200 packets during the call).
#
#   bench/testbed/webrtc-peer/smoke.sh [SECONDS]      (root; default 8 s of call, ~30 s in all)
#
# Uses a 10 s bed clip made under /tmp (make-clip.sh, then fake-media.sh). Prints "SKIP: ..." and
# exits 0 where namespaces, node or chromium are missing; exit 1 on a failure.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
seconds="${1:-8}"
work="${TMPDIR:-/tmp}/predrop-webrtc-peer"
mkdir -p "$work"
command -v ffmpeg >/dev/null || { echo "SKIP: ffmpeg is not installed"; exit 0; }
"$here/../make-clip.sh" "$work/smoke-clip.mp4" 10 >/dev/null || exit 1
out="$(mktemp -d "$work/smoke.XXXXXX")"
start=$EPOCHSECONDS
"$here/run-call.sh" --out "$out" --clip "$work/smoke-clip.mp4" --duration "$seconds" -- --quiet \
  | tee "$out/run-call.out"
rc=${PIPESTATUS[0]}
if grep -q '^SKIP' "$out/run-call.out"; then
  exit 0
fi
[[ -f "$out/qdisc.txt" ]] || { echo "smoke: FAIL (no bed run; exit $rc)"; exit 1; }
forwarded="$(awk '/^# at the end/ {e = 1} e && /Sent/ {print $4; exit}' "$out/qdisc.txt")"
decoded="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(min(v.get("frames_decoded") or 0 for v in m["flows"].values()))' "$out/meta.json" 2>/dev/null || echo 0)"
codec="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["flows"]["0"].get("codec"))' "$out/meta.json" 2>/dev/null)"
echo "smoke: call exit $rc, frames decoded $decoded ($codec), packets through the bottleneck ${forwarded:-0}, $((EPOCHSECONDS - start)) s"
if ((rc == 0 && decoded > 0 && ${forwarded:-0} >= 200)); then
  echo "smoke: ok ($out)"
  exit 0
fi
echo "smoke: FAIL ($out: chromium-*.log, meta.json)"
exit 1
