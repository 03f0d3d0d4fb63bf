#!/usr/bin/env bash
# Origin -> edge on the bed (docs/edge.md, issue 23 item 5): a live stream published into an
# origin predrop, relayed by an edge predrop that pulls it over RTSP/TCP, and two measuring
# viewers in their own namespaces that ask the ORIGIN and are redirected (RTSP 302) to the edge:
#
#   <tag>-org 198.18.2.2   origin predrop + ffmpeg -re publishing the bed clip (loop)
#        | e0 198.18.2.1
#   <tag>-snd 198.18.0.1   edge predrop (stream "relay" pulls rtsp://198.18.2.2:8554/live)
#        | s0 ── router (tbf on r1: THE bottleneck) ── switch ── <tag>-rcv 198.18.1.2  constrained viewer
#        | e1 198.18.3.1
#   <tag>-vw  198.18.3.2   unconstrained viewer (no tbf on its path)
#
# Each viewer is a predrop-client with PDFB reports: its own session on the edge, its own
# controller. The bottleneck is open for the first 5 s, then RATE. Writes DIR/
# {origin,edge}.{toml,log}, trace.csv (the edge's per-block trace) and edge-{constrained,open}.csv
# (its sessions: stage, R, reported PSNR, loss), client-*.{csv,log}, summary.txt and edge.png
# (R and PSNR per block of both viewers), and prints the summary.
#
#   PREDROP_BIN=build/release bench/testbed/run-edge.sh [--out DIR] [--blocks N] [--rate RATE]
#
# Holds /tmp/predrop-testbed.lock; every namespace, veth and process it makes is removed on exit.
# Exit 0 with "SKIP: ..." where namespaces are not permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bed.sh
source "$here/bed.sh"

out="${PWD}/build/edge" blocks=40 rate=820kbit open_s=5
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --blocks) blocks="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    *) echo "run-edge: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin="${PREDROP_BIN:?set PREDROP_BIN to the build directory (holding server/ and client/)}"
server_exe="$bin/server/predrop-server"
client_exe="$bin/client/predrop-client"
[[ -x "$server_exe" && -x "$client_exe" ]] || { echo "run-edge: no predrop-server/-client under $bin" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "SKIP: ffmpeg is not installed"; exit 0; }
mkdir -p "$out"
out="$(readlink -f "$out")"
rm -f "$out"/*.log "$out"/*.csv "$out"/*.toml "$out"/summary.txt "$out"/edge.png
clip="$out/clip.mp4"
[[ -s "$clip" ]] || "$here/make-clip.sh" "$clip" 60 || exit 1

exec 9>/tmp/predrop-testbed.lock
flock 9

org_ns="${BED_TAG}-org"
vw_ns="${BED_TAG}-vw"
org_ip=198.18.2.2
vw_ip=198.18.3.2
secret="edge-demo-secret-0123"

# Starts a command in namespace NS as its own process group; bed_down ends it.
spawn_in() {
  local ns="$1"
  shift
  setsid bash -c 'exec "$@"' _ ip netns exec "$ns" "$@" &
  BED_PIDS+=("$!")
  BED_LAST_PID=$!
}

BED_FLOWS=1 bed_up "$BED_OPEN_RATE" 1 || exit 1
# The origin and the unconstrained viewer hang off the edge (the bed's sender namespace).
bed_add_ns "$org_ns" || exit 1
bed_add_ns "$vw_ns" || exit 1
ip link add e0 netns "$BED_SND" type veth peer name o0 netns "$org_ns" || exit 1
ip link add e1 netns "$BED_SND" type veth peer name v0 netns "$vw_ns" || exit 1
ip -n "$BED_SND" addr add 198.18.2.1/24 dev e0
ip -n "$BED_SND" addr add 198.18.3.1/24 dev e1
ip -n "$org_ns" addr add "$org_ip/24" dev o0
ip -n "$vw_ns" addr add "$vw_ip/24" dev v0
for l in e0 e1; do ip -n "$BED_SND" link set "$l" up; bed_no_offload "$BED_SND" "$l"; done
ip -n "$org_ns" link set o0 up
ip -n "$vw_ns" link set v0 up
ip -n "$org_ns" route add default via 198.18.2.1
ip -n "$vw_ns" route add default via 198.18.3.1
ip netns exec "$BED_SND" sysctl -qw net.ipv4.ip_forward=1
# The constrained viewer reaches the origin through the router and the edge's namespace.
ip -n "$BED_RTR" route add 198.18.2.0/24 via "$BED_SND_IP"
ip -n "$BED_RTR" route add 198.18.3.0/24 via "$BED_SND_IP"

cat >"$out/origin.toml" <<TOML
# Written by bench/testbed/run-edge.sh
[server]
mode = "stream"
rtsp_listen = "$org_ip:8554"
metrics_listen = "$org_ip:9465"
log_level = "info"
rtsp_idle_timeout_s = 3600

[server.streams.live]
source = "publish"
publish_secret = "$secret"
edges = ["rtsp://$BED_SND_IP:8554/relay"]

[blocks]
duration_ms = 1000
TOML
cat >"$out/edge.toml" <<TOML
# Written by bench/testbed/run-edge.sh
[server]
mode = "stream"
rtsp_listen = "0.0.0.0:8554"
metrics_listen = "$BED_SND_IP:9464"
trace_csv = "$out/trace.csv"
log_level = "info"
session_timeout_s = 20

[server.streams.relay]
source = "rtsp://$org_ip:8554/live"
pull = "always"

[blocks]
duration_ms = 1000
TOML
# The edge's viewers are steered by the bed's capacity policy (its [control] and [discard]).
cat "$here/policies/capacity.toml" >>"$out/edge.toml"

await() {  # await FILE PATTERN: up to 20 s
  for _ in $(seq 200); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "run-edge: no '$2' in $1" >&2; tail -5 "$1" >&2; return 1
}

spawn_in "$org_ns" "$server_exe" -c "$out/origin.toml" 2>"$out/origin.log"
await "$out/origin.log" "serving rtsp" || exit 1
spawn_in "$org_ns" ffmpeg -nostdin -v warning -re -stream_loop -1 -i "$clip" -c copy -f rtsp \
  -rtsp_transport tcp "rtsp://$org_ip:8554/live?secret=$secret" 2>"$out/publisher.log"
await "$out/origin.log" "'live' published" || exit 1
bed_spawn snd "$server_exe" -c "$out/edge.toml" 2>"$out/edge.log"
await "$out/edge.log" "'relay': playing" || exit 1

# Both viewers ask the origin; the origin sends them to the edge.
bed_spawn rcv "$client_exe" "rtsp://$org_ip:8554/live" --reference "$clip" -n "$blocks" \
  --csv "$out/client-constrained.csv" --log-level info >"$out/client-constrained.log" 2>&1
c1=$BED_LAST_PID
sleep 1
spawn_in "$vw_ns" "$client_exe" "rtsp://$org_ip:8554/live" --reference "$clip" -n "$blocks" \
  --csv "$out/client-open.csv" --log-level info >"$out/client-open.log" 2>&1
c2=$BED_LAST_PID
sleep "$open_s"
bed_rate "$rate"
wait "$c1" "$c2"

redirects=$(ip netns exec "$org_ns" curl -sf --max-time 5 "http://$org_ip:9465/metrics" |
  awk '$1 == "predrop_redirects_total" { print $2 }')
# The edge's trace, one file per session in the order they started (the constrained viewer
# first): stage, R, P (the PSNR the viewer reported), network loss. (The measuring client's own
# "rate" column compares with its reference file's blocks, which for a live stream are not the
# edge's blocks: R comes from the server's trace.)
awk -F, 'NR > 1 { if (!($1 in n)) { n[$1] = ++k }
  print $2 "," $4 "," $10 "," $13 > (dir "/session-" n[$1] ".csv") }' dir="$out" "$out/trace.csv"
# The constrained viewer is the one whose session discarded or lost more (the sessions' start order in
# the trace is not the viewers').
loss_of() { awk -F, '{ l += $2 + $4 } END { print l + 0 }' "$1"; }  # R + loss
if [[ -s "$out/session-1.csv" && -s "$out/session-2.csv" ]]; then
  if awk -v a="$(loss_of "$out/session-1.csv")" -v b="$(loss_of "$out/session-2.csv")" 'BEGIN { exit !(a >= b) }'; then
    mv "$out/session-1.csv" "$out/edge-constrained.csv"; mv "$out/session-2.csv" "$out/edge-open.csv"
  else
    mv "$out/session-2.csv" "$out/edge-constrained.csv"; mv "$out/session-1.csv" "$out/edge-open.csv"
  fi
fi
summary() {  # summary NAME CSV: means over the stages after the bottleneck came (+2 s)
  awk -F, -v name="$1" -v skip="$open_s" '$1 >= skip + 2 && $3 > 0 {
      n++; r += $2; p += $3; l += $4; if ($3 < pmin || n == 1) pmin = $3 }
    END { if (n == 0) { print name ": no reported blocks"; exit }
          printf "%-12s blocks %3d  R mean %.3f  PSNR mean %.2f dB  min %.2f dB  network loss %.1f %%\n",
                 name, n, r / n, p / n, pmin, 100 * l / n }' "$2"
}
{
  echo "origin -> edge on the bed: bottleneck $rate between the edge and the constrained viewer" \
    "from t = ${open_s} s (blocks from ${open_s} + 2 s on), both viewers redirected by the origin"
  summary constrained "$out/edge-constrained.csv"
  summary open "$out/edge-open.csv"
  echo "origin: ${redirects:-?} viewer(s) redirected (predrop_redirects_total);" \
    "edge: $(grep -c "'relay': playing" "$out/edge.log") pull(s) playing"
} | tee "$out/summary.txt"

if command -v gnuplot >/dev/null; then
  gnuplot <<GP 2>/dev/null
set terminal pngcairo size 900,600 font 'sans,9'
set output '$out/edge.png'
set termoption noenhanced
set datafile separator ','
set multiplot layout 2,1 title 'origin -> edge: two viewers of one edge, $rate bottleneck to one of them from ${open_s} s'
set grid
set key top right
set ylabel 'R'
set yrange [0:0.6]
plot '$out/edge-constrained.csv' using 1:2 with steps lw 2 title 'constrained viewer', \
     '$out/edge-open.csv' using 1:2 with steps lw 2 title 'unconstrained viewer'
set ylabel 'PSNR dB'
set yrange [10:62]
set xlabel 'stage (block of the session)'
plot '$out/edge-constrained.csv' using 1:(\$3 > 0 ? \$3 : 1/0) with linespoints pt 7 ps 0.4 title 'constrained viewer', \
     '$out/edge-open.csv' using 1:(\$3 > 0 ? \$3 : 1/0) with linespoints pt 7 ps 0.4 title 'unconstrained viewer'
unset multiplot
GP
fi
