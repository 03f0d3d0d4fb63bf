#!/usr/bin/env bash
# Fails when a module includes a module above it. The layer order, bottom to top, is the one
# README.md "Where things are" shows; a module may include its own headers and those of any layer
# below. Tests and benchmarks sit above everything and are not checked.
#   scripts/check-layers.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# folder      include prefix      rank
layers=(
  "core        predrop/core/       0"
  "wire        predrop/wire/       1"
  "net         predrop/net/        2"
  "chain       predrop/chain/      3"
  "config      predrop/config/     4"
  "rtsp        predrop/rtsp/       5"
  "media       predrop/media/      6"
  "ddl         predrop/ddl/        7"
  "ddl/train   predrop/ddl/train/  8"
  "ddl/capi    predrop/ddl/capi/   9"
  "server      predrop/server/     10"
  "client      predrop/client/     11"
  "load        predrop/load/       12"
)

rank_of_include() {  # longest matching prefix wins (predrop/ddl/train/ before predrop/ddl/)
  local inc="$1" best=-1 best_len=0
  for l in "${layers[@]}"; do
    read -r _ prefix rank <<<"$l"
    if [[ "$inc" == "$prefix"* && ${#prefix} -gt $best_len ]]; then
      best=$rank
      best_len=${#prefix}
    fi
  done
  echo "$best"
}

bad=0
for l in "${layers[@]}"; do
  read -r folder _ rank <<<"$l"
  # Files of this folder only (ddl/ excludes ddl/train/ and ddl/capi/, checked as their own layers).
  while IFS= read -r file; do
    [[ "$folder" == "ddl" && ( "$file" == ddl/train/* || "$file" == ddl/capi/* ) ]] && continue
    while IFS= read -r inc; do
      r=$(rank_of_include "$inc")
      if ((r < 0)); then
        echo "check-layers: $file includes unknown module header $inc"
        bad=1
      elif ((r > rank)); then
        echo "check-layers: $file (layer $folder) includes $inc from a layer above it"
        bad=1
      fi
    done < <(grep -hoE '^#include "predrop/[^"]+"' "$file" | sed -E 's/#include "(.*)"/\1/')
  done < <(git ls-files "$folder" | grep -E '\.(cpp|hpp|h)$')
done
if ((bad)); then
  echo "check-layers: FAILED"
  exit 1
fi
echo "check-layers: ok (${#layers[@]} layers, no include runs upward)"
