#!/usr/bin/env bash
# Format and shell checks: clang-format (repo .clang-format) over every tracked C/C++ file, and
# ShellCheck (warnings and errors, sourced files followed) over the scripts of scripts/ and
# tests/. Fails on any finding; fix with `clang-format -i FILE`. bench/ is not yet held to
# ShellCheck: its case files are sourced fragments, and its scripts have findings left.
#   scripts/lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in clang-format shellcheck; do
  if ! command -v "$tool" >/dev/null; then
    echo "lint: $tool not installed (apt-get install $tool)" >&2
    exit 1
  fi
done
bad=0
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h')
if ! clang-format --dry-run -Werror "${sources[@]}"; then
  echo "lint: clang-format: the files above are not formatted"
  bad=1
fi
mapfile -t scripts < <(git ls-files 'scripts/*.sh' 'tests/*.sh')
for s in "${scripts[@]}"; do
  # From the script's folder, so that `# shellcheck source=lib.sh` resolves.
  (cd "$(dirname "$s")" && shellcheck -x -S warning "$(basename "$s")") || bad=1
done
if ((bad)); then
  echo "lint: FAILED"
  exit 1
fi
echo "lint: ok (${#sources[@]} C++ files formatted, ${#scripts[@]} scripts pass shellcheck)"
