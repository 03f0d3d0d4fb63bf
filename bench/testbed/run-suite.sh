#!/usr/bin/env bash
# The RFC 8867 suite on the bed (issue 21): every case x every policy x both clips x repeats, one
# run at a time, then the RFC 8868 metrics, the summary table and the verdict per target.
#
#   bench/testbed/run-suite.sh [--publish] [--estimate]
#
# Environment (subset selectors; defaults = everything):
#   CASES="rfc5.1 rfc5.2 ..."       case files in cases/ (names without .sh)
#   POLICIES="none fixed-10 ..."     policy files in policies/ (names without .toml)
#   CLIPS="testsrc2 vbr"             the bed clip, and the VBR clip with hard scene cuts
#   REPEATS=1                        runs per (case, policy, clip); run folder r1, r2, ...
#   RESULTS=DIR                      default bench/results/rfc8867
#   MEDIA=predrop|ext:SCRIPT         external media pairs instead of predrop (run-case.sh);
#                                    their runs are filed under policy ext-<script name>
#   PREDROP_BIN=DIR                  use these binaries instead of building
#   ANALYZE_ONLY=1                   only redo metrics and tables of the runs there
#
# Resumable: a run folder with a `complete` file is skipped, so an interrupted suite continues
# where it stopped (Ctrl-C ends the current run cleanly; rerun the same command). It prints the
# estimated time of what is left before it starts (--estimate: only that). Writes
# RESULTS/<clip>/<case>/<policy>/r<n>/ (run-case.sh's files, metrics.json, bins.tsv, plot.png)
# and RESULTS/{summary.md,summary.csv,verdicts.md}; --publish copies the tables and a few plots
# to bench/reports/rfc8867/. Exit 0 with "SKIP: ..." where namespaces are not permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
results="${RESULTS:-$root/bench/results/rfc8867}"
publish=0 estimate_only=0
for a in "$@"; do
  case "$a" in
    --publish) publish=1 ;;
    --estimate) estimate_only=1 ;;
    *) echo "usage: $0 [--publish] [--estimate]" >&2; exit 2 ;;
  esac
done
log() { printf '[suite %(%H:%M:%S)T] %s\n' -1 "$*"; }

ALL_CASES="rfc5.1 rfc5.2 rfc5.6 rfc5.4 rfc5.8 rfc5.3 rfc5.7 rfc5.5 rfc5.1b rfc5.6b rfc5.6z steady onoff cross shared staircase"
ALL_POLICIES="capacity none basic adaptive fixed-30 fixed-20 fixed-40 fixed-10 fixed-50 fixed-60"
cases="${CASES:-$ALL_CASES}"
policies="${POLICIES:-$ALL_POLICIES}"
clips="${CLIPS:-testsrc2 vbr}"
repeats="${REPEATS:-1}"
media="${MEDIA:-predrop}"
if [[ "$media" == ext:* ]]; then
  policies="ext-$(basename "${media#ext:}" | sed 's/\.[a-z]*$//')"
fi
# The clips must outlast the longest case (the client scores no block beyond the reference).
CLIP_SECONDS=310
# Set-up and tear-down per run (bed, server start-up with the clip's packetization, analysis).
RUN_OVERHEAD_S=20

case_duration() { (CASE_DURATION=0; source "$here/cases/$1.sh" && echo "$CASE_DURATION"); }

for c in $cases; do [[ -r "$here/cases/$c.sh" ]] || { echo "run-suite: no case $c" >&2; exit 2; }; done
if [[ "$media" == predrop ]]; then
  for p in $policies; do [[ -r "$here/policies/$p.toml" ]] || { echo "run-suite: no policy $p" >&2; exit 2; }; done
fi

# --- what is left, and how long it takes -------------------------------------------------------
pending=() total=0 done_n=0
for ((rep = 1; rep <= repeats; rep++)); do
  for clip in $clips; do
    for c in $cases; do
      d=$(case_duration "$c")
      for p in $policies; do
        dir="$results/$clip/$c/$p/r$rep"
        if [[ -e "$dir/complete" ]]; then
          done_n=$((done_n + 1))
          continue
        fi
        pending+=("$rep $clip $c $p")
        total=$((total + d + RUN_OVERHEAD_S))
      done
    done
  done
done
log "suite: ${#pending[@]} run(s) to do, $done_n done; estimated $((total / 3600)) h $((total % 3600 / 60)) min (case durations + ${RUN_OVERHEAD_S} s each)"
((estimate_only)) && exit 0

if [[ -z "${ANALYZE_ONLY:-}" && ${#pending[@]} -gt 0 ]]; then
  need=()
  for t in ip:iproute2 tc:iproute2 iperf3:iperf3 gnuplot:gnuplot-nox python3:python3 ffmpeg:ffmpeg \
    tcpdump:tcpdump iptables:iptables ping:iputils-ping ethtool:ethtool; do
    command -v "${t%%:*}" >/dev/null || need+=("${t##*:}")
  done
  if ((${#need[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
      log "installing: ${need[*]}"
      DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null ||
        { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null; } ||
        { echo "run-suite: could not install ${need[*]}" >&2; exit 1; }
    else
      echo "run-suite: missing ${need[*]} (as root: apt-get install -y ${need[*]})" >&2
      exit 1
    fi
  fi
  "$here/bed.sh" check | grep -q '^SKIP' && { "$here/bed.sh" check; exit 0; }
  if [[ -z "${PREDROP_BIN:-}" ]]; then
    log "building the release preset (predrop-server, predrop-client, predrop-delayline)"
    (cd "$root" && cmake --preset release >/dev/null &&
      cmake --build --preset release --target predrop-server predrop-client predrop-delayline -j2 >/dev/null) ||
      { echo "run-suite: build failed" >&2; exit 1; }
    bin="$results/bin"
    mkdir -p "$bin"
    ln -sf "$root/build/release/server/predrop-server" "$bin/predrop-server"
    ln -sf "$root/build/release/client/predrop-client" "$bin/predrop-client"
    ln -sf "$root/build/release/bench/delayline/predrop-delayline" "$bin/predrop-delayline"
    export PREDROP_BIN="$bin"
  fi
  for clip in $clips; do
    "$here/make-clip.sh" "$results/clip-$clip.mp4" "$CLIP_SECONDS" "$clip" || exit 1
  done
  start=$EPOCHSECONDS
  n=0
  for item in "${pending[@]}"; do
    read -r rep clip c p <<<"$item"
    n=$((n + 1))
    dir="$results/$clip/$c/$p/r$rep"
    mkdir -p "$dir"
    log "[$n/${#pending[@]}] $clip / $c / $p / r$rep"
    args=(--case "$here/cases/$c.sh" --out "$dir" --seed "$rep" --clip "$results/clip-$clip.mp4")
    if [[ "$media" == predrop ]]; then
      args+=(--policy "$here/policies/$p.toml")
    else
      args+=(--media "$media")
    fi
    "$here/run-case.sh" "${args[@]}" 2>"$dir.stderr"
    rc=$?
    ((rc == 130)) && { log "interrupted"; exit 130; }
    if [[ -e "$dir/complete" ]]; then
      python3 "$here/bed_metrics.py" "$dir" --plot --clip "$results/clip-$clip.mp4" >/dev/null 2>"$dir/metrics.stderr" ||
        log "metrics failed for $dir (see metrics.stderr)"
    else
      log "$clip / $c / $p / r$rep incomplete (exit $rc): see $dir.stderr"
    fi
    el=$((EPOCHSECONDS - start))
    log "elapsed $((el / 60)) min"
  done
fi

log "summary"
python3 "$here/bed_suite.py" "$results" || exit 1
if ((publish)); then
  reports="$root/bench/reports/rfc8867"
  mkdir -p "$reports/plots"
  cp "$results/summary.md" "$results/summary.csv" "$results/verdicts.md" "$reports/"
  log "published tables to $reports (copy the plots you want into $reports/plots/)"
fi
