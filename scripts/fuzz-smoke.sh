#!/usr/bin/env bash
# Short libFuzzer run of every fuzz target (clang, ASan+UBSan, the `fuzz` preset): builds only the
# fuzzers and runs each for SECONDS (default 10) from its committed seeds, in a scratch corpus so
# the repository's seeds stay as committed. A crash fails the run; its reproducer is left in
# build/fuzz/findings/<target>/ to be committed under tests/fuzz/regressions/<target>/.
#   scripts/fuzz-smoke.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
if ! command -v clang++ >/dev/null; then
  echo "fuzz-smoke: SKIP: clang++ not installed"
  exit 0
fi
targets=$(grep -rhoE 'predrop_add_fuzzer\(NAME [A-Za-z0-9_]+' tests | awk '{print $2}' | sort -u)
cmake --preset fuzz >/dev/null
# shellcheck disable=SC2086
cmake --build --preset fuzz -j "$(nproc)" --target $targets
# fuzz_rtsp_server plays the sample clip, which the media_sample ctest fixture makes; a clean
# clone has none until that fixture has run in this build directory.
ctest --test-dir build/fuzz -L fixture --output-on-failure >/dev/null
failed=0
for t in $targets; do
  scratch="build/fuzz/scratch/$t"
  findings="build/fuzz/findings/$t"
  rm -rf "$scratch"
  mkdir -p "$scratch" "$findings"
  [[ -d "tests/fuzz/corpus/$t" ]] && cp -r "tests/fuzz/corpus/$t/." "$scratch/"
  # The reproducers too: the fuzzer runs every input of its corpus first, and this build's clang
  # UBSan checks what gcc's (the replay tests) does not, e.g. float-to-integer overflow.
  [[ -d "tests/fuzz/regressions/$t" ]] && cp -r "tests/fuzz/regressions/$t/." "$scratch/"
  bin=$(find build/fuzz -type f -name "$t" -perm -u+x | head -1)
  if ! "$bin" -max_total_time="$seconds" -artifact_prefix="$findings/" -print_final_stats=1 \
      "$scratch" >"$findings/log.txt" 2>&1; then
    echo "fuzz-smoke: $t FAILED (see $findings/log.txt)"
    failed=1
  else
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$findings/log.txt" | grep -oE '[0-9]+$')
    echo "fuzz-smoke: $t ok (${seconds}s, ${runs:-?} runs)"
  fi
done
exit $failed
