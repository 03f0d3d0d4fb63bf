#!/usr/bin/env bash
# clang-tidy (repo .clang-tidy) over every first-party library and program source, using the
# compile commands of a configured build (default build/release); any warning fails the run.
#   scripts/tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
if ! command -v run-clang-tidy >/dev/null; then
  echo "tidy: run-clang-tidy not installed (apt-get install clang-tidy)" >&2
  exit 1
fi
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "tidy: $build/compile_commands.json missing: configure the build first" >&2
  exit 1
fi
modules='core|wire|net|chain|config|rtsp|media|ddl|server|client|load|sim'
log="$build/clang-tidy.log"
raw="$build/clang-tidy.raw.log"
files=$(git ls-files '*.cpp' | grep -E "^($modules)/" | sed "s#^#$(pwd)/#")
# shellcheck disable=SC2086
run-clang-tidy -p "$build" -j "$(nproc)" -quiet $files >"$raw" 2>&1 || true
# run-clang-tidy colours its diagnostics even into a file (ESC[...m between "12:3: " and
# "warning: "): strip the colours, or the count below finds nothing and passes every finding.
sed 's/\x1b\[[0-9;]*m//g' "$raw" >"$log"
count=$(grep -cE ': (warning|error): ' "$log" || true)
if ((count > 0)); then
  grep -E ': (warning|error): ' "$log" | sort -u
  echo "tidy: FAILED ($count findings, full log in $log)"
  exit 1
fi
echo "tidy: ok ($(echo "$files" | wc -w) files, no findings)"
