#!/usr/bin/env bash
# Fails when a module includes a module it may not use. The table below names, for each of the
# 15 modules (one folder, one CMake target, one namespace; docs/design.md §5), the modules it may
# include besides its own: an explicit list, not a rank, so an include sideways (media -> net,
# rtsp -> config, client -> server) fails as surely as one upward. Also checked:
#   - each module's CMakeLists.txt links only predrop:: targets its row allows;
#   - no source reaches into another folder with a relative include ("../");
#   - inside server/, no unit of the facade (a private header server/src/X.hpp and its X.cpp)
#     includes the facade (predrop/server/stream_server.hpp) or what is built on it.
# Tests, benchmarks and fuzz targets sit above everything and are not checked.
#   scripts/check-layers.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# folder      include prefix      may include (besides itself)
layers=(
  "core        predrop/core/       -"
  "wire        predrop/wire/       core"
  "net         predrop/net/        core wire"
  "chain       predrop/chain/      core wire net"
  "config      predrop/config/     core wire"
  "rtsp        predrop/rtsp/       core wire net"
  "media       predrop/media/      core"
  "webrtc      predrop/webrtc/     core wire net media"
  "ddl         predrop/ddl/        core wire net chain config"
  "ddl/train   predrop/ddl/train/  core wire net chain config ddl"
  "ddl/capi    predrop/ddl/capi/   core wire net chain config ddl"
  "server      predrop/server/     core wire net chain config rtsp media webrtc ddl"
  "client      predrop/client/     core wire net chain rtsp media"
  "load        predrop/load/       core wire net chain rtsp media client webrtc"
  "sim         predrop/sim/        core"
)
# CMake target of a folder: predrop::<folder with / as _>.
target_of() { echo "predrop::${1//\//_}"; }
# The facade and what is built on it (worker loops, metrics of a server, setup from config).
facade_re='"predrop/server/(stream_server|stream_workers|metrics_text|server_setup)\.hpp"'

module_of_include() {  # longest matching prefix wins (predrop/ddl/train/ before predrop/ddl/)
  local inc="$1" best="" best_len=0
  for l in "${layers[@]}"; do
    read -r folder prefix _ <<<"$l"
    if [[ "$inc" == "$prefix"* && ${#prefix} -gt $best_len ]]; then
      best=$folder
      best_len=${#prefix}
    fi
  done
  echo "$best"
}

bad=0
fail() {
  echo "check-layers: $*"
  bad=1
}
known_targets=" "
for l in "${layers[@]}"; do
  read -r folder _ _ <<<"$l"
  known_targets+="$(target_of "$folder") "
done

for l in "${layers[@]}"; do
  read -r folder _ allowed <<<"$l"
  allowed=" $folder ${allowed//-/} "
  # Files of this folder only (ddl/ excludes ddl/train/ and ddl/capi/, checked as their own rows).
  while IFS= read -r file; do
    [[ "$folder" == "ddl" && ("$file" == ddl/train/* || "$file" == ddl/capi/*) ]] && continue
    while IFS= read -r inc; do
      m=$(module_of_include "$inc")
      if [[ -z "$m" ]]; then
        fail "$file includes unknown module header $inc"
      elif [[ "$allowed" != *" $m "* ]]; then
        fail "$file (module $folder) includes $inc: $folder may use only${allowed% }"
      fi
    done < <(grep -hoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"predrop/[^"]+"' "$file" |
      sed -E 's/.*"(.*)"/\1/')
    if grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./' "$file"; then
      fail "$file includes a file of another folder by a relative path"
    fi
    if [[ "$file" == server/src/* && -f "server/src/$(basename "${file%.*}").hpp" ]] &&
      grep -qE "^[[:space:]]*#[[:space:]]*include[[:space:]]*$facade_re" "$file"; then
      fail "$file is a unit of the server's facade and includes the facade or what is built on it"
    fi
  done < <(git ls-files "$folder" | grep -E '\.(cpp|hpp|h)$')

  # The module's CMake links: only allowed predrop:: targets (a folder's CMakeLists.txt may also
  # build executables; they belong to the same module).
  cmake_file="$folder/CMakeLists.txt"
  [[ -f "$cmake_file" ]] || continue
  while IFS= read -r t; do
    [[ "$known_targets" == *" $t "* ]] || continue
    ok=0
    for a in $allowed; do [[ "$t" == "$(target_of "$a")" ]] && ok=1; done
    ((ok)) || fail "$cmake_file links $t: $folder may use only${allowed% }"
  done < <(sed 's/#.*//' "$cmake_file" | grep -oE 'predrop::[a-z_]+' | sort -u)
done
if ((bad)); then
  echo "check-layers: FAILED"
  exit 1
fi
echo "check-layers: ok (${#layers[@]} modules, each includes and links only what its row allows)"
