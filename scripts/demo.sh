#!/usr/bin/env bash
# The main job on its built-in default: installs what is missing, builds, and runs the loopback
# demo. Extra arguments go to the demo program.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh release
exec build/release/server/predrop-demo "$@"
