#!/usr/bin/env bash
# Audio on live streams end to end (docs/live.md "Audio"), real ffmpeg on both ends:
#   ffmpeg -re -f rtsp ──publish (H.264 + AAC | Opus)──▶ origin predrop ──▶ ffmpeg viewer
#                                                          └──RTSP/TCP pull──▶ edge predrop ──▶ ffmpeg viewer
#   - clips made here: testsrc H.264 (B-frames, 1 s GOP) with a tone as AAC (48 kHz mono) and,
#     in a second clip, as Opus (48 kHz stereo);
#   - each clip is published over RTSP/TCP, and the AAC clip once more over UDP (its RTCP SRs
#     reach the server's RTCP port);
#   - viewers (RTSP/TCP) get an SDP with both tracks; every audio packet they receive is one of
#     the clip's, byte for byte (-c:a copy, framemd5), decoded audio matches the clip's decoded
#     audio after the decoder's first frames (md5 per decoded frame), every picture is bit-exact;
#   - A/V timestamps consistent: for each viewer, (viewer pts - clip pts) of the pictures and of
#     the audio packets, matched by content, agree within 30 ms;
#   - an edge pulling the origin passes the audio on the same way (a viewer of the edge).
# Loopback only; nothing is timed but the hang guards.
#   live_audio.sh SERVER_BINARY WORKDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
server="$1"
work="$2"
mkdir -p "$work"
cd "$work"
rm -f ./*.log ./*.md5 ./*.toml ./*.txt

# shellcheck source=lib.sh
source "$here/lib.sh"

tone="sine=frequency=440:sample_rate=48000,aeval=val(0)*(0.6+0.4*sin(2*PI*1.3*t))"
inputs=(-f lavfi -i testsrc=size=320x240:rate=25 -f lavfi -i "$tone" -t 8)
# Pictures stamped on the 90 kHz clock (not rounded to the frame rate) for the A/V check.
exact=(-fps_mode passthrough -enc_time_base:v 1/90000)
ffmpeg -nostdin -v error "${inputs[@]}" "${live_h264[@]}" -c:a aac -aac_pns 0 -b:a 96k -ac 1 \
  -y aac.mp4
ffmpeg -nostdin -v error "${inputs[@]}" "${live_h264[@]}" -c:a libopus -b:a 64k -ac 2 -y opus.mp4
for clip in aac opus; do
  ffmpeg -nostdin -v error -i "$clip.mp4" -map 0:v "${exact[@]}" -f framemd5 "$clip-v.md5" \
    -map 0:a -c:a copy -f framemd5 "$clip-a.md5" -map 0:a -f framemd5 "$clip-pcm.md5"
done

origin_port=$(pick_port)
origin_metrics=$(pick_port)
edge_port=$(pick_port)
edge_metrics=$(pick_port)
secret="test-secret-0123456789"
write_config origin.toml "$origin_port" "$origin_metrics" 2 <<EOF
[server.streams.live]
source = "publish"
publish_secret = "$secret"
EOF
write_config edge.toml "$edge_port" "$edge_metrics" 1 <<EOF
[server.streams.relay]
source = "rtsp://127.0.0.1:$origin_port/live"
pull = "always"
EOF

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait' EXIT
"$server" -c origin.toml 2>origin.log &
pids+=($!)
"$server" -c edge.toml 2>edge.log &
edge_pid=$!
pids+=("$edge_pid")

await origin.log "serving rtsp" 1
await edge.log "serving rtsp" 1

# view URL NAME: an ffmpeg viewer over RTSP/TCP writes NAME-v.md5 (decoded pictures),
# NAME-a.md5 (audio packets as received) and NAME-pcm.md5 (decoded audio).
view() {
  timeout -s INT 40 ffmpeg -nostdin -v info -rtsp_transport tcp -i "$1" \
    -map 0:v "${exact[@]}" -f framemd5 "$2-v.md5" -map 0:a -c:a copy -f framemd5 "$2-a.md5" \
    -map 0:a -f framemd5 "$2-pcm.md5" >"$2.log" 2>&1
}

# check CLIP NAME: prints the figures of viewer NAME against CLIP and returns 1 on a failure.
check() {
  python3 - "$1" "$2" <<'PY'
import sys
from fractions import Fraction

def read(path):
    tbs, rows = {}, []
    for line in open(path):
        if line.startswith("#tb"):
            idx, tb = line[3:].split(":")
            tbs[int(idx)] = Fraction(tb.strip())
        elif not line.startswith("#") and line.strip():
            f = [x.strip() for x in line.split(",")]
            rows.append((float(int(f[2]) * tbs[int(f[0])]), f[5]))
    return rows

clip, name = sys.argv[1], sys.argv[2]
ok = True
pairs = {}
for kind in ("v", "a", "pcm"):
    src = read(f"{clip}-{kind}.md5")
    got = read(f"{name}-{kind}.md5")
    where = {}
    for pts, h in src:
        where.setdefault(h, pts)
    pairs[kind] = [(where[h], pts - where[h]) for pts, h in got if h in where]
    # A decoder starts without its history: its first frames cannot match.
    skip = 3 if kind == "pcm" else 0
    foreign = sum(1 for pts, h in got[skip:] if h not in where)
    print(f"{name} {kind}: {len(got)} received, {len(pairs[kind])} the clip's, {foreign} foreign"
          f" (after {skip})")
    if len(got) < (100 if kind == "v" else 150) or foreign:
        ok = False
# A/V: per second of the clip, the median offset (viewer pts - clip pts) of the audio packets
# less that of the pictures. ffmpeg's RTSP reader re-times both tracks on each RTCP SR (and its
# first packets before the first SR), so offsets are compared second by second, not overall.
def medians(rows):
    by = {}
    for t, d in rows:
        by.setdefault(int(t), []).append(d)
    return {k: sorted(v)[len(v) // 2] for k, v in by.items() if len(v) >= 5}
mv, ma = medians(pairs["v"]), medians(pairs["a"])
skews = [ma[k] - mv[k] for k in sorted(mv) if k in ma]
# ffmpeg puts both tracks on one clock only once it has an RTCP SR of each (and then only if
# they came in time); otherwise its timestamps are each track's own RTP clock (offsets of
# hours), and there is nothing to compare in this run: said, not failed.
unsynced = [k for k, m in (("pictures", mv), ("audio", ma))
            if m and abs(sorted(m.values())[len(m) // 2]) > 100]
if unsynced:
    print(f"{name}: A/V not measured: ffmpeg did not put the {' and '.join(unsynced)} on the SRs' clock")
elif len(skews) < 4:
    print(f"{name}: too few seconds with audio and pictures")
    ok = False
else:
    worst = max(skews, key=abs)
    mean = sum(skews) / len(skews)
    print(f"{name}: A/V skew over {len(skews)} s: mean {mean * 1000:.1f} ms, worst "
          f"{worst * 1000:.1f} ms (audio vs pictures, against the clip)")
    if abs(worst) > 0.045:
        ok = False
sys.exit(0 if ok else 1)
PY
}

fail=0
# publish CLIP TRANSPORT: ffmpeg sends the clip in real time.
publish() {
  publish_clip "$1.mp4" "rtsp://127.0.0.1:$origin_port/live?secret=$secret" "$2" "pub-$1-$2.log"
}
round=0
for run in aac:tcp opus:tcp aac:udp; do
  clip=${run%:*}
  transport=${run#*:}
  round=$((round + 1))
  publish "$clip" "$transport" &
  pub=$!
  await origin.log "'live' published" "$round"
  view "rtsp://127.0.0.1:$origin_port/live" "origin-$clip-$transport" &
  v1=$!
  views=("origin-$clip-$transport")
  vpids=("$v1")
  if [[ "$run" == aac:tcp ]]; then
    await edge.log "'relay': playing" 1
    view "rtsp://127.0.0.1:$edge_port/relay" "edge-$clip-$transport" &
    vpids+=($!)
    views+=("edge-$clip-$transport")
  fi
  wait "$pub" || { echo "FAIL: the $run publisher failed"; tail -5 "pub-$clip-$transport.log"; fail=1; }
  if [[ "$run" == aac:tcp ]]; then
    # An edge keeps its viewers while its upstream is gone (it waits for it to come back): its
    # viewer is ended by the edge's shutdown (an RTCP BYE) once the origin's viewer is done.
    wait "$v1" || true
    kill "$edge_pid"
    wait "$edge_pid" || true
  fi
  for p in "${vpids[@]}"; do
    wait "$p" || true
  done
  for name in "${views[@]}"; do
    if ! grep -q "Audio: $([[ $clip == aac ]] && echo aac || echo opus)" "$name.log"; then
      echo "FAIL: $name: no $clip audio track in the SDP"; fail=1
    fi
    check "$clip" "$name" || { echo "FAIL: $name"; fail=1; }
  done
  grep "'live' ended" origin.log | tail -1 | sed 's/.*ended: /origin: /'
done
kill -0 "${pids[0]}" 2>/dev/null || { echo "FAIL: the origin died"; fail=1; }
exit $fail
