#!/usr/bin/env bash
# The test command: installs missing Debian packages, builds the release and the asan-ubsan
# presets, and runs the whole ctest suite in both. Usage: scripts/test.sh [--no-sanitizers]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh

run_preset() {
  local preset="$1"
  echo "=== build ($preset)"
  scripts/build.sh "$preset"
  echo "=== test ($preset)"
  ctest --preset "$preset" -j "$(nproc)" --timeout 300
}

run_preset release
if [[ "${1:-}" != "--no-sanitizers" ]]; then
  run_preset asan-ubsan
fi
echo "=== all test suites passed"
