#!/usr/bin/env bash
# Runs every test-bed scenario with every policy, then the analysis: the one command behind
# bench/README.md.
#
#   bench/testbed/run-all.sh [--publish]
#
# Installs what it needs when missing (apt-get: iperf3 gnuplot-nox iproute2 python3), builds the
# release preset (predrop-server, predrop-client, predrop-ddl-worker), makes the bed clip, runs the
# scenarios one after another (about 55 minutes), writes bench/results/{summary.md,summary.csv,blocks.csv,
# plots/*.png} and prints the tables. --publish copies the summary and plots to bench/reports/.
# The ddl scenario needs the Fashion-MNIST files (/usr/share/datasets/fashion-mnist) and is
# skipped with a message without them.
#
# Environment:
#   SCENARIOS="open steady onoff cross shared staircase ddl"   subset of scenarios to run
#   POLICIES="none adaptive"                      subset of policies (default: each scenario's set)
#   PREDROP_BIN=DIR                               use these binaries instead of building
#   RESULTS=DIR                                   results folder (default bench/results)
#   CLIP_KIND=scenes                              the second clip (make-clip.sh: six scenes of very
#                                                 different bitrate) instead of testsrc2
#   ANALYZE_ONLY=1                                only rerun the analysis on existing results
# Exit 0 with "SKIP: ..." where network namespaces are not permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
results="${RESULTS:-$root/bench/results}"
publish=0
[[ "${1:-}" == "--publish" ]] && publish=1

log() { printf '[run-all %(%H:%M:%S)T] %s\n' -1 "$*"; }

# --- what the bed needs -------------------------------------------------------------------------
need=()
command -v ip >/dev/null || need+=(iproute2)
command -v tc >/dev/null || need+=(iproute2)
command -v iperf3 >/dev/null || need+=(iperf3)
command -v gnuplot >/dev/null || need+=(gnuplot-nox)
command -v python3 >/dev/null || need+=(python3)
command -v ffmpeg >/dev/null || need+=(ffmpeg)
if ((${#need[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    log "installing: ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null ||
      { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null; } ||
      { echo "run-all: could not install ${need[*]}" >&2; exit 1; }
  else
    echo "run-all: missing ${need[*]} (install them as root: apt-get install -y ${need[*]})" >&2
    exit 1
  fi
fi
"$here/bed.sh" check | grep -q '^SKIP' && { "$here/bed.sh" check; exit 0; }

# --- scenarios ----------------------------------------------------------------------------------
# The clip is ~1.23 Mbit/s on the wire (video, audio, RTP/SRTP/UDP/IP headers, measured at the
# bottleneck); 820 kbit/s makes the stream 1.5x the bottleneck.
BN=820kbit
FULL="none fixed-20 fixed-30 fixed-40 fixed-50 basic basic-t1-3db history-k3 history-k3-t1-3db-t2-2 history-k8-t1-3db-t2-2 adaptive adaptive-uniform fixed-30-uniform capacity"
SHORT="none fixed-30 basic history-k3-t1-3db-t2-2 adaptive capacity"
PLOT='["none", "fixed-30", "basic", "history-k3-t1-3db-t2-2", "adaptive", "capacity"]'

# DDL: 3 workers x 398 chunks of ~1.1 kB per stage on the relay's downlink.
DDL_BN=50mbit
DDL_STAGES=200

scenario_args() {
  # Prints: blocks clients rate events... for scenario $1
  case "$1" in
    open) echo "30 1 open" ;;
    steady) echo "45 1 $BN" ;;
    onoff) echo "60 1 open|10 rate $BN|40 rate open" ;;
    cross) echo "55 1 1640kbit|10 cross 800k 10|30 cross 800k 10" ;;
    shared) echo "60 3 open|10 rate 2460kbit|40 rate open" ;;
    # Issue 12's time-varying bottleneck: above the stream, 1/2 of it, 1/1.2 of it, 1/3 of it,
    # above it again (the stream is ~1.23 Mbit/s on the wire).
    staircase) echo "70 1 1600kbit|10 rate 615kbit|25 rate 1025kbit|40 rate 410kbit|55 rate 1600kbit" ;;
  esac
}
scenario_policies() {
  case "$1" in
    open) echo "none basic history-k3 adaptive capacity" ;;
    steady | onoff | staircase) echo "$FULL" ;;
    cross | shared) echo "$SHORT" ;;
    ddl) echo "ddl-none ddl-fixed-30 ddl-fixed-50 ddl-basic ddl-history-k3 ddl-adaptive ddl-capacity" ;;
  esac
}
scenario_meta() {
  local list
  list="$(printf '"%s", ' $(scenario_policies "$1") | sed 's/, $//')"
  case "$1" in
    open) cat <<EOF
{"rate_kbps": 200000, "order": 1, "baseline": true, "title": "no bottleneck (uncongested reference)", "blocks": 30,
 "description": "The bed with the tbf at 200 Mbit/s: the uncongested L and what each policy costs when nothing is wrong.",
 "policies": [$list], "plot": [$list]}
EOF
      ;;
    steady) cat <<EOF
{"rate_kbps": 820, "order": 2, "title": "steady bottleneck at 1/1.5 of the stream ($BN) from the start", "blocks": 45, "onset": 0, "targets": true,
 "description": "The stream (~1.23 Mbit/s on the wire) into a tbf of $BN, burst 32 kbit, latency 100 ms, for the whole run.",
 "policies": [$list], "plot": $PLOT}
EOF
      ;;
    onoff) cat <<EOF
{"rate_kbps": 200000, "order": 3, "title": "bottleneck ($BN, stream 1.5x) appears at block 10 and goes away at block 40", "blocks": 60, "onset": 10, "end": 40, "targets": true,
 "description": "tbf at 200 Mbit/s, changed in place to $BN at block 10 and back at block 40 (tc qdisc change).",
 "policies": [$list], "plot": $PLOT}
EOF
      ;;
    cross) cat <<EOF
{"rate_kbps": 1640, "order": 4, "title": "cross-traffic bursts: 800 kbit/s UDP (iperf3) into a 1640 kbit/s bottleneck, blocks 10-19 and 30-39", "blocks": 55, "episodes": [[10, 20], [30, 40]], "targets": true,
 "description": "Alone the stream fits; with the unresponsive UDP burst it must give up a third (1.5x its share).",
 "policies": [$list], "plot": [$list]}
EOF
      ;;
    shared) cat <<EOF
{"rate_kbps": 200000, "order": 5, "title": "three clients share one bottleneck (2460 kbit/s = 3 x $BN) from block 10 to 40", "blocks": 60, "onset": 10, "end": 40, "targets": true,
 "description": "Three sessions of the same policy; per-session figures are pooled (percentiles over all blocks, PSNR means averaged, worst case over sessions). Jain = fairness of delivered packets.",
 "policies": [$list], "plot": [$list]}
EOF
      ;;
    staircase) cat <<EOF
{"rate_kbps": 1600, "order": 6, "title": "time-varying bottleneck: 1600k (above the stream), 615k (stream 2x), 1025k (1.2x), 410k (3x), 1600k", "blocks": 70, "episodes": [[10, 55]], "marks": [25, 40], "targets": true,
 "description": "tbf changed in place at blocks 10, 25, 40 and 55 (issue 12's staircase with a step to a rate above the stream's and one to 1.2x below it). Congested: blocks 10-54.",
 "policies": [$list], "plot": $PLOT}
EOF
      ;;
    ddl) cat <<EOF
{"order": 7, "kind": "ddl", "title": "DDL: 3 workers, relay downlink through a $DDL_BN bottleneck, $DDL_STAGES stages", "target_accuracy": 0.75,
 "description": "Fashion-MNIST MLP (784-128-10), batch 32 per worker, test accuracy on 2000 test images every 10 stages. The relay sends each worker the averaged gradient (398 chunks of 256 floats) with R pre-discarded (priority: smallest chunks first); adaptive stage deadline; missing chunks count as zero.",
 "policies": [$list]}
EOF
      ;;
  esac
}

mkdir -p "$results"
if [[ -z "${ANALYZE_ONLY:-}" ]]; then
  # --- build ------------------------------------------------------------------------------------
  if [[ -z "${PREDROP_BIN:-}" ]]; then
    log "building the release preset (predrop-server, predrop-client)"
    (cd "$root" && cmake --preset release >/dev/null &&
      cmake --build --preset release --target predrop-server predrop-client predrop-ddl-worker -j2 >/dev/null) ||
      { echo "run-all: build failed" >&2; exit 1; }
    bin="$results/bin"
    mkdir -p "$bin"
    ln -sf "$root/build/release/server/predrop-server" "$bin/predrop-server"
    ln -sf "$root/build/release/client/predrop-client" "$bin/predrop-client"
    ln -sf "$root/build/release/ddl/train/predrop-ddl-worker" "$bin/predrop-ddl-worker"
    export PREDROP_BIN="$bin"
  fi
  # CLIP_KIND=scenes: issue 12's second clip, six lavfi scenes of very different bitrate.
  kind="${CLIP_KIND:-testsrc2}"
  clip="$results/clip.mp4"
  [[ "$kind" != testsrc2 ]] && clip="$results/clip-$kind.mp4"
  log "clip: $clip ($kind)"
  "$here/make-clip.sh" "$clip" 90 "$kind" || exit 1

  # --- runs -------------------------------------------------------------------------------------
  for scen in ${SCENARIOS:-open steady onoff cross shared staircase ddl}; do
    if [[ "$scen" == ddl && ! -d /usr/share/datasets/fashion-mnist ]]; then
      log "ddl skipped: Fashion-MNIST not found in /usr/share/datasets/fashion-mnist (dataset-fashion-mnist)"
      continue
    fi
    if [[ "$scen" == ddl ]]; then
      # DDL: 3 workers behind the bottleneck, the relay's downlink shaped (see run-ddl.sh).
      mkdir -p "$results/ddl"
      scenario_meta ddl >"$results/ddl/scenario.json"
      for pol in ${POLICIES:-$(scenario_policies ddl)}; do
        log "ddl / $pol"
        "$here/run-ddl.sh" --out "$results/ddl/$pol" --policy "$here/policies/$pol.toml" \
          --rate "$DDL_BN" --workers 3 --stages "$DDL_STAGES" -- --eval-every 10 --test-subset 2000 \
          2>"$results/ddl/$pol.stderr" || log "ddl / $pol failed, see $results/ddl/$pol.stderr"
      done
      continue
    fi
    IFS='|' read -r -a parts <<<"$(scenario_args "$scen")"
    read -r blocks clients rate <<<"${parts[0]}"
    [[ "$rate" == open ]] && rate=200mbit
    events=()
    for e in "${parts[@]:1}"; do [[ -n "$e" ]] && events+=(--event "$e"); done
    mkdir -p "$results/$scen"
    scenario_meta "$scen" >"$results/$scen/scenario.json"
    for pol in ${POLICIES:-$(scenario_policies "$scen")}; do
      out="$results/$scen/$pol"
      for attempt in 1 2; do
        log "$scen / $pol (attempt $attempt)"
        "$here/run-scenario.sh" --out "$out" --policy "$here/policies/$pol.toml" --clip "$clip" \
          --blocks "$blocks" --clients "$clients" --rate "$rate" "${events[@]}" 2>"$out.stderr"
        # A run is complete when every client reported every block.
        ok=1
        for ((i = 0; i < clients; i++)); do
          n=$(($(wc -l <"$out/client-$i.csv" 2>/dev/null || echo 0) - 1))
          ((n >= blocks)) || ok=0
        done
        ((ok)) && break
        log "$scen / $pol: incomplete run, see $out.stderr and $out/*.log"
      done
    done
  done
fi

log "analysis"
python3 "$here/analyze.py" "$results"
if ((publish)); then
  reports="$root/bench/reports"
  mkdir -p "$reports/plots"
  cp "$results/summary.md" "$results/summary.csv" "$results/headline.md" "$reports/"
  cp "$results"/*-summary.csv "$reports/" 2>/dev/null || true
  cp "$results"/plots/*.png "$reports/plots/"
  log "published to $reports"
fi
