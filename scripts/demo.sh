#!/usr/bin/env bash
# The main job: what predrop is for, in one command. Installs only the Debian packages it needs
# (scripts/setup-deps.sh --demo), builds only predrop-server and predrop-client (build/demo, no
# tests), generates the test-bed clip offline, then:
#
#   where network namespaces are allowed (root): streams the clip three times through a real
#   bottleneck (the test bed's tbf at --rate, 2/3 of the clip's rate by default; bench/testbed/)
#   to the measuring client, with R = 0 (policy fixed 0), the seed's exact rule (basic) and the
#   capacity policy, and prints per block R, PSNR and queueing delay of the three side by side
#   with a one-line verdict;
#
#   elsewhere (or with --loopback): one run on loopback with --policy (default: configs/
#   stream.toml's), one line per block, and says why there is no bottleneck.
#
#   scripts/demo.sh [--loopback] [--seconds N] [--rate RATE] [--policy P] [--serve]
#
# --serve (loopback) keeps the server running afterwards, looping the clip, so that a standard
# player can play it too:  ffplay -rtsp_transport udp rtsp://127.0.0.1:8554/sample
# Output and traces: build/demo/run/ (per run: client-0.csv, trace.csv, server.log).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s.%N)
elapsed() { awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }'; }
policy=""
seconds=15
rate=820kbit
serve=0
loopback=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --policy) policy="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --serve) serve=1; loopback=1; shift ;;
    --loopback) loopback=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# Why not the bottleneck, if not (empty: the bed is usable).
why_loopback=""
if ((loopback)); then
  why_loopback="--loopback or --serve asked for it"
elif [[ $(id -u) -ne 0 ]]; then
  why_loopback="not root: network namespaces and tc need root (CAP_NET_ADMIN)"
fi

scripts/setup-deps.sh --demo
work=build/demo
mkdir -p "$work"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPREDROP_BUILD_TESTS=OFF \
  -DPREDROP_BUILD_BENCH=OFF "${launcher[@]}" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log" >&2; exit 1; }
echo "demo: building predrop-server and predrop-client ($(nproc) jobs; log $work/build.log)"
cmake --build "$work/build" --target predrop-server predrop-client -j "$(nproc)" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; exit 1; }
bin="$(readlink -f "$work/build")"
# The test bed's clip: testsrc2 at ~1.2 Mbit/s with a small VBV (I-frames fit the bed's queue).
clip="$work/clip-${seconds}s.mp4"
bench/testbed/make-clip.sh "$clip" "$((seconds + 1))" testsrc2

if [[ -z "$why_loopback" ]]; then
  # Namespaces allowed? bed.sh check prints "SKIP: why" and exits 0 where they are not.
  check="$(bench/testbed/bed.sh check 2>&1 || true)"
  if [[ "$check" == *SKIP* ]]; then
    why_loopback="${check#*SKIP: }"
  fi
fi

if [[ -n "$why_loopback" ]]; then
  echo "demo: on loopback, not through a bottleneck: $why_loopback."
  echo "      On loopback nothing congests: what moves R is the rule reacting to its own discards."
  loop_flag=()
  [[ $serve -eq 1 ]] && loop_flag=(--loop)
  policy_flag=()
  [[ -n "$policy" ]] && policy_flag=(--policy "$policy")
  "$bin/server/predrop-server" -c configs/stream.toml --stream sample="$clip" \
    --listen 127.0.0.1:8554 --metrics 127.0.0.1:9464 "${policy_flag[@]}" \
    --trace-csv "$work/server-trace.csv" "${loop_flag[@]}" 2>"$work/server.log" &
  server_pid=$!
  trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true' EXIT
  for _ in $(seq 100); do
    grep -q "serving rtsp" "$work/server.log" 2>/dev/null && break
    kill -0 $server_pid 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "predrop-server: rtsp://127.0.0.1:8554/sample, policy ${policy:-of configs/stream.toml} (log: $work/server.log)"
  echo
  "$bin/client/predrop-client" rtsp://127.0.0.1:8554/sample --reference "$clip" \
    -n "$seconds" --csv "$work/client-blocks.csv" --log-level warn
  echo
  echo "demo: $(elapsed) s from start to the end of the table"
  echo "Per-block traces: $work/client-blocks.csv (client), $work/server-trace.csv (server decisions)"
  if [[ $serve -eq 1 ]]; then
    echo "Serving until Ctrl-C: ffplay -rtsp_transport udp rtsp://127.0.0.1:8554/sample"
    echo "Sessions as JSON: curl -s http://127.0.0.1:9464/api/v1/sessions"
    wait $server_pid
  fi
  exit 0
fi

# Through the bottleneck: one run per policy (run-scenario.sh takes the bed's lock, builds the
# bed, runs server and client in their namespaces, and removes everything again).
export PREDROP_BIN="$work/bin"
mkdir -p "$PREDROP_BIN"
ln -sf "$bin/server/predrop-server" "$PREDROP_BIN/predrop-server"
ln -sf "$bin/client/predrop-client" "$PREDROP_BIN/predrop-client"
names=(none basic capacity)
labels=("R = 0" "exact rule (basic)" "capacity")
echo "demo: the clip through a ${rate} bottleneck (tbf, 100 ms queue), three runs of ${seconds} blocks"
for i in 0 1 2; do
  out="$work/run/${names[$i]}"
  echo "  run $((i + 1))/3: ${labels[$i]} ..."
  bench/testbed/run-scenario.sh --out "$out" --policy "bench/testbed/policies/${names[$i]}.toml" \
    --clip "$clip" --blocks "$seconds" --rate "$rate" >"$work/run-${names[$i]}.log" 2>&1 ||
    { echo "demo: run ${names[$i]} failed:" >&2; tail -20 "$work/run-${names[$i]}.log" >&2; exit 1; }
done
echo
# client-0.csv: block,rate,reception_period_ms,psnr_db,planned,sent,discarded,received,
#               network_loss,queue_delay_ms,queue_max_ms,dispersion_kbps
awk -F, -v labels="${labels[0]}|${labels[1]}|${labels[2]}" '
  FNR == 1 { f++; next }
  { r[f, $1] = $2; p[f, $1] = $4; q[f, $1] = $10; l[f, $1] = $9; n[f]++; if ($1 + 1 > nb) nb = $1 + 1
    sp[f] += $4; sq[f] += $10; sl[f] += $9 }
  END {
    split(labels, lab, "|")
    printf "%6s", ""
    for (k = 1; k <= 3; k++) printf " | %-26s", lab[k]
    printf "\n%6s", "block"
    for (k = 1; k <= 3; k++) printf " | %6s %8s %10s", "R", "PSNR dB", "queue ms"
    printf "\n"
    for (b = 0; b < nb; b++) {
      printf "%6d", b
      for (k = 1; k <= 3; k++) {
        if ((k, b) in p) printf " | %6.3f %8.2f %10.1f", r[k, b], p[k, b], q[k, b]
        else printf " | %6s %8s %10s", "-", "-", "-"
      }
      printf "\n"
    }
    printf "%6s", "mean"
    for (k = 1; k <= 3; k++) {
      m[k] = n[k] ? sp[k] / n[k] : 0; mq[k] = n[k] ? sq[k] / n[k] : 0
      printf " | %6s %8.2f %10.1f", "", m[k], mq[k]
    }
    printf "\n%6s", "loss"
    for (k = 1; k <= 3; k++) printf " | %6s %7.1f%% %10s", "", n[k] ? 100 * sl[k] / n[k] : 0, ""
    printf "\n\n"
    best = 1
    for (k = 2; k <= 3; k++) if (m[k] > m[best]) best = k
    printf "Verdict: %s gives the best picture behind this bottleneck: mean PSNR %.2f dB", lab[best], m[best]
    sep = " against "
    for (k = 1; k <= 3; k++) if (k != best) { printf "%s%.2f dB (%s)", sep, m[k], lab[k]; sep = " and " }
    printf ", mean queueing delay %.0f ms (R = 0: %.0f ms).\n", mq[best], mq[1]
  }' "$work/run/none/client-0.csv" "$work/run/basic/client-0.csv" "$work/run/capacity/client-0.csv"
echo
echo "demo: $(elapsed) s from start to the table"
echo "Per-run traces: $work/run/{none,basic,capacity}/ (client-0.csv, trace.csv, server.log)"
