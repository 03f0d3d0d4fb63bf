#!/usr/bin/env bash
# The measuring client on a live stream (docs/live.md "The measuring client on a live stream"):
#   - a clip made here (testsrc H.264, 25 fps, a key frame every 25 pictures, 12 s) is published
#     with ffmpeg -re from 2 s into it (-ss 2: the stream starts at the clip's picture 50, the
#     shifted start), and predrop-client --live --reference clip.mp4 watches: it must find its
#     first picture at the reference's picture 50 by content, and then every block must start at
#     a key picture of the clip (a multiple of 25) with a high PSNR (R = 0: no feedback, so the
#     server discards nothing; every picture bit-exact: the cap, 60 dB);
#   - a second viewer loses 20 % of one block's packets (--impair STAGE:drop=0.2): that block's
#     PSNR falls, and the blocks after it are matched as before (pictures found by timestamp,
#     not by counting: a lost picture shifts nothing);
#   - both report each block's glass-to-glass latency (the publisher's capture, by the server's
#     PDCT, to the decode): present, positive and under 3 s.
# Loopback only; nothing is timed but the hang guards.
#   live_client.sh SERVER_BINARY CLIENT_BINARY WORKDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
server="$1"
client="$2"
work="$3"
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.csv ./*.toml

# shellcheck source=lib.sh
source "$here/lib.sh"

make_live_clip clip.mp4 12

rtsp_port=$(pick_port)
metrics_port=$(pick_port)
secret="test-secret-0123456789"
write_config live.toml "$rtsp_port" "$metrics_port" 1 <<EOF
[server.streams.live]
source = "publish"
publish_secret = "$secret"
EOF

trap 'stop_server; kill "${pub_pid:-}" "${c1:-}" "${c2:-}" 2>/dev/null || true' EXIT
start_server server.log -c live.toml
base="rtsp://127.0.0.1:$rtsp_port/live"

fail=0
publish_clip clip.mp4 "$base?secret=$secret" tcp publisher.log -ss 2 &
pub_pid=$!
await server.log "'live' published" || fail=1

timeout -s INT 40 "$client" "$base" --reference clip.mp4 --live --no-feedback \
  --csv shifted.csv --log-level info >shifted.log 2>&1 &
c1=$!
timeout -s INT 40 "$client" "$base" --reference clip.mp4 --live --no-feedback \
  --impair 3:drop=0.2 --csv dropped.csv --log-level info >dropped.log 2>&1 &
c2=$!
wait "$pub_pid" || { echo "FAIL: the publisher failed"; tail -5 publisher.log; fail=1; }
wait "$c1" || { echo "FAIL: the first client failed"; tail -5 shifted.log; fail=1; }
wait "$c2" || { echo "FAIL: the second client failed"; tail -5 dropped.log; fail=1; }
pub_pid=""
c1=""
c2=""

grep -h "live: the first picture" shifted.log dropped.log || true
python3 - <<'PY' || fail=1
import csv, sys

ok = True
for name in ("shifted", "dropped"):
    rows = list(csv.DictReader(open(f"{name}.csv")))
    blocks = [(int(r["block"]), float(r["psnr_db"]), int(r["first_reference_picture"]))
              for r in rows]
    print(name, " ".join(f"{b}:{p:.1f}dB@{f}" for b, p, f in blocks))
    # R as for a file: nothing discarded (no feedback), every block's planned count known.
    for r in rows:
        if int(r["planned"]) == 0 or float(r["rate"]) != 0:
            print(f"FAIL: {name}: block {r['block']} R {r['rate']}, planned {r['planned']}")
            ok = False
    if len(blocks) < 8:
        print(f"FAIL: {name}: {len(blocks)} blocks"); ok = False
        continue
    first = blocks[0][2]
    if first != 50:
        print(f"FAIL: {name}: the first block is at reference picture {first}, not 50"); ok = False
    for b, p, f in blocks:
        # Block n of the stream is the clip's GOP n + 2: its first picture 25 (n + 2).
        if f != 25 * (b + 2):
            print(f"FAIL: {name}: block {b} at reference picture {f}, not {25 * (b + 2)}")
            ok = False
        impaired = name == "dropped" and b == 3
        # The last block's end is estimated from the pictures shown.
        if not impaired and b != blocks[-1][0] and p < 55:
            print(f"FAIL: {name}: block {b} PSNR {p:.2f} dB"); ok = False
    # Glass-to-glass latency (docs/live.md): ffmpeg's capture clock (its SRs, dated by the server's
    # PDCT) to the decode here, same host: present from the block after the first SR was dated
    # (the first one, before ffmpeg's first packet, waits for the timeline's origin), positive,
    # and under 3 s (one block held, the session's anchoring, the decoder).
    lat = [(int(r["block"]), float(r["latency_ms"]), float(r["latency_max_ms"])) for r in rows]
    print(name, "latency ms:", " ".join(f"{b}:{m:.0f}/{x:.0f}" for b, m, x in lat))
    dated = [(b, m, x) for b, m, x in lat if m == m]
    if len(dated) < len(lat) - 1:
        print(f"FAIL: {name}: {len(lat) - len(dated)} blocks without a latency"); ok = False
    for b, m, x in dated:
        if not 0 < m <= x < 3000:
            print(f"FAIL: {name}: block {b} latency mean {m} ms max {x} ms"); ok = False
    if name == "dropped":
        p3 = [p for b, p, f in blocks if b == 3]
        if not p3 or p3[0] >= 55:
            print(f"FAIL: dropped: block 3 (20 % of its packets lost) at {p3} dB"); ok = False
sys.exit(0 if ok else 1)
PY
if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "FAIL: the server died"; fail=1
fi

# R under a discard: the server at a fixed R = 0.3 for a viewer that sends PDFB (without, it is a
# player: player_rate 0); the client reports what was discarded of each block (planned: the
# reference's packets of the block's pictures; sent: the stage extension's count).
stop_server
write_config fixed.toml "$rtsp_port" "$metrics_port" 1 <<EOF
[server.streams.live]
source = "publish"
publish_secret = "$secret"

[control]
policy = "fixed"
fixed_rate = 0.3
EOF
start_server server-fixed.log -c fixed.toml
publish_clip clip.mp4 "$base?secret=$secret" tcp publisher-fixed.log -ss 2 -t 6 &
pub_pid=$!
await server-fixed.log "'live' published" || fail=1
timeout -s INT 40 "$client" "$base" --reference clip.mp4 --live \
  --csv fixed.csv --log-level info >fixed.log 2>&1 || { echo "FAIL: the client failed"; fail=1; }
wait "$pub_pid" || { echo "FAIL: the publisher failed"; tail -5 publisher-fixed.log; fail=1; }
pub_pid=""
python3 - <<'PY' || fail=1
import csv, sys

rows = list(csv.DictReader(open("fixed.csv")))
print("fixed R = 0.3:", " ".join(f"{r['block']}:R={r['rate']}({r['sent']}/{r['planned']})"
                                  for r in rows))
# The last block's pictures end where the client stopped seeing them: left out.
bad = [r for r in rows[:-1] if not 0.15 <= float(r["rate"]) <= 0.45]
if len(rows) < 4 or bad:
    print(f"FAIL: R not reported near 0.3: {len(rows)} blocks, {len(bad)} off")
    sys.exit(1)
PY
exit $fail
