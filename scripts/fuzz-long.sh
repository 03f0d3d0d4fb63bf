#!/usr/bin/env bash
# The long fuzz run recorded in docs/robustness.md: every fuzz target (or the ones named) for
# RUNS executions each (default 10 000 000), capped at MAX_SECONDS per target (default 3600),
# from its committed seeds in a scratch corpus. Prints a Markdown table row per target:
# executions, seconds, executions/s, corpus size, crashes. A crash leaves its reproducer in
# build/fuzz/findings/<target>/ (commit it under tests/fuzz/regressions/<target>/).
#   scripts/fuzz-long.sh [--runs N] [--max-seconds S] [--build DIR] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=10000000
max_seconds=3600
build=build/fuzz
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) break ;;
  esac
done
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(grep -rhoE 'predrop_add_fuzzer\(NAME [A-Za-z0-9_]+' tests | awk '{print $2}' | sort -u)
fi
echo "| target | executions | seconds | exec/s | corpus | crashes |"
echo "|---|---|---|---|---|---|"
status=0
for t in "${targets[@]}"; do
  bin=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  if [[ -z "$bin" ]]; then
    echo "| $t | not built | | | | |"
    status=1
    continue
  fi
  scratch="$build/long/$t"
  findings="$build/findings/$t"
  rm -rf "$scratch"
  mkdir -p "$scratch" "$findings"
  [[ -d "tests/fuzz/corpus/$t" ]] && cp -r "tests/fuzz/corpus/$t/." "$scratch/"
  start=$(date +%s)
  crashes=0
  if ! "$bin" -runs="$runs" -max_total_time="$max_seconds" -artifact_prefix="$findings/" \
      -print_final_stats=1 "$scratch" >"$findings/long.log" 2>&1; then
    crashes=1
    status=1
  fi
  secs=$(( $(date +%s) - start ))
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$findings/long.log" | grep -oE '[0-9]+$' || echo 0)
  rate=$(( execs / (secs > 0 ? secs : 1) ))
  corpus=$(find "$scratch" -type f | wc -l)
  echo "| $t | $execs | $secs | $rate | $corpus | $crashes |"
done
exit $status
