#!/usr/bin/env bash
# The test command: installs missing Debian packages, checks the include layers, the C++ format
# and the shell scripts (scripts/lint.sh), builds the release and the asan-ubsan presets, runs
# the whole ctest suite in both and clang-tidy over every source, then a short libFuzzer run of
# every fuzz target.
# Usage: scripts/test.sh [--no-sanitizers]   (skips the asan-ubsan and fuzz stages)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
echo "=== layers (each module includes and links only what its row allows)"
scripts/check-layers.sh
echo "=== lint (clang-format, shellcheck)"
scripts/lint.sh

run_preset() {
  local preset="$1"
  echo "=== build ($preset)"
  scripts/build.sh "$preset"
  echo "=== test ($preset)"
  ctest --preset "$preset" -j "$(nproc)" --timeout 300
}

run_preset release
echo "=== clang-tidy (repo .clang-tidy, every first-party source)"
scripts/tidy.sh build/release
if [[ "${1:-}" != "--no-sanitizers" ]]; then
  run_preset asan-ubsan
  echo "=== fuzz smoke run (libFuzzer, ${PREDROP_FUZZ_SECONDS:-10} s per target)"
  scripts/fuzz-smoke.sh "${PREDROP_FUZZ_SECONDS:-10}"
fi
echo "=== all test suites passed"
