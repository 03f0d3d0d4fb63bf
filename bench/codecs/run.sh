#!/usr/bin/env bash
# Layer-aware pre-discard across codecs (issue 24, item 2's figure): the same generated sources
# encoded by each codec at about the same bitrate, served on loopback by predrop-server at a fixed
# R (pre-discard happens at the server, so a fixed R needs no bottleneck) and scored by
# predrop-client (PSNR per block against the file's own pictures).
#
#   codecs  h264  libx264 as the bed encodes it (bench/testbed/make-clip.sh: closed GOP of 30, two
#                 non-reference B-frames; not its two-frame VBV, which is for the bed's queue and
#                 left it at 40 % of the bitrate here): the H.264 planner's best is its priority order
#           h264p the same without B-frames (every picture a reference, as real-time encoders and
#                 most IP cameras send): nothing disposable, later P pictures of a GOP go first
#           h265  x265 with temporal sub-layers (-x265-params temporal-layers=1)
#           vp8   libvpx with a temporal-layer pattern (-ts-parameters ts_layering_mode=MODE)
#           vp9   libvpx-vp9, the same pattern, at -qmin VP9_QMIN (40) -qmax 60 (see codec_args)
#           av1   SVT-AV1's random-access hierarchy (hierarchical-levels=3, as interop_av1.sh)
#   sources testsrc2; mandelbrot (a slow zoom, fine detail everywhere); cuts (testsrc2, mandelbrot,
#           life in 4x4-pixel cells with light noise: a scene cut every 2 s)
#   runs    R = 0 (priority), and every R of RATES with the priority planner and the uniform one
#
# Prints one line a clip and a run and writes OUT/results.csv (codec, source, policy, R, kbit/s,
# encoder PSNR-Y against the source, R measured, mean PSNR, pictures decoded, pictures, frame
# rate kept) and OUT/table.md (the bench/codecs/README.md table).
# No root, no bed: loopback only. Environment: CODECS, SOURCES, RATES, UNIFORM_RATES, CLIP_SECONDS (6),
# SIZE (640x360), KBPS (800), VP_MODE (3: three temporal layers 0-2-1-2), OUT (bench/codecs/results),
# SERVER and CLIENT (default build/release's binaries); TABLE_ONLY=1 redoes table.md from
# OUT/results.csv.
# Usage: bench/codecs/run.sh    (~30 min on 2 busy cores with the defaults)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC2034 # start_server (lib.sh) runs it
server="${SERVER:-$root/build/release/server/predrop-server}"
client="${CLIENT:-$root/build/release/client/predrop-client}"
out="${OUT:-$root/bench/codecs/results}"
read -ra codecs <<<"${CODECS:-h264 h264p h265 vp8 vp9 av1}"
read -ra sources <<<"${SOURCES:-testsrc2 mandelbrot cuts}"
read -ra rates <<<"${RATES:-0.1 0.2 0.3 0.4}"
read -ra uniform_rates <<<"${UNIFORM_RATES:-${rates[*]}}"
seconds="${CLIP_SECONDS:-6}"
size="${SIZE:-640x360}"
kbps="${KBPS:-800}"
vp_mode="${VP_MODE:-3}"
for b in "$server" "$client"; do
  [[ -x "$b" ]] || { echo "missing $b (cmake --build --preset release --target predrop-server predrop-client)"; exit 1; }
done
mkdir -p "$out"
cd "$out"
# shellcheck source=tests/integration/lib.sh
source "$root/tests/integration/lib.sh"
trap stop_server EXIT

# source_args NAME: the ffmpeg input arguments of a source (SECONDS long, SIZE at 30 fps).
source_args() {
  local third cells
  third=$(awk -v s="$seconds" 'BEGIN {print s / 3}')
  # life's cells 4x4 pixels (a cell a pixel is noise no codec compresses near KBPS)
  cells=$(awk -v s="$size" 'BEGIN {split(s, d, "x"); print int(d[1] / 4) "x" int(d[2] / 4)}')
  case "$1" in
    testsrc2) echo "-f lavfi -i testsrc2=s=$size:r=30:d=$seconds" ;;
    mandelbrot) echo "-f lavfi -i mandelbrot=s=$size:r=30,trim=duration=$seconds,format=yuv420p" ;;
    cuts)
      echo "-f lavfi -i testsrc2=s=$size:r=30:d=$third" \
        "-f lavfi -i mandelbrot=s=$size:r=30:start_scale=0.5,trim=duration=$third,format=yuv420p" \
        "-f lavfi -i life=s=$cells:r=30:mold=10:ratio=0.3:seed=7,trim=duration=$third,scale=$size:flags=neighbor,noise=alls=3:allf=t,format=yuv420p" \
        "-filter_complex [0][1][2]concat=n=3:v=1:a=0,format=yuv420p"
      ;;
    *) echo "unknown source $1" >&2; return 1 ;;
  esac
}

# codec_args NAME: FILE_EXTENSION then the ffmpeg encoding arguments, KBPS kbit/s.
codec_args() {
  case "$1" in
    h264p) echo "mp4 -c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p -b:v ${kbps}k" \
      "-x264-params keyint=30:min-keyint=30:scenecut=0:bframes=0" ;;
    h264) echo "mp4 -c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p -b:v ${kbps}k" \
      "-x264-params keyint=30:min-keyint=30:scenecut=0:bframes=2:b-pyramid=none:b-adapt=0" ;;
    h265) echo "mp4 -c:v libx265 -pix_fmt yuv420p -b:v ${kbps}k" \
      "-x265-params log-level=error:temporal-layers=1:keyint=30:min-keyint=30:scenecut=0" ;;
    vp8|vp9)
      local enc=libvpx layers
      [[ "$1" == vp9 ]] && enc=libvpx-vp9
      case "$vp_mode" in
        2) layers="$((kbps * 6 / 10)),$kbps" ;;
        *) layers="$((kbps / 2)),$((kbps * 3 / 4)),$kbps" ;;
      esac
      # libvpx-vp9 through FFmpeg 5.1 with -ts-parameters misses the bitrate (4-30 Mbit/s for
      # 800k: its rate control stays at -qmin), so VP9 gets a quantizer range instead.
      local q=""
      [[ "$1" == vp9 ]] && q="-qmin ${VP9_QMIN:-40} -qmax 60"
      echo "webm -c:v $enc -b:v ${kbps}k $q -g 30 -error-resilient 1 -deadline realtime -cpu-used 8" \
        "-ts-parameters ts_layering_mode=$vp_mode:ts_target_bitrate=$layers" ;;
    av1) echo "ivf -c:v libsvtav1 -b:v ${kbps}k -g 32 -svtav1-params hierarchical-levels=3:preset=12" ;;
    *) echo "unknown codec $1" >&2; return 1 ;;
  esac
}

# run_one NAME FILE R POLICY: serves FILE at the fixed R with the POLICY planner to the measuring
# client; leaves NAME.csv and NAME.log.
run_one() {
  local name="$1" file="$2" rate="$3" policy="$4"
  printf '[server.streams]\nc = "%s"\n\n[discard]\npolicy = "%s"\n' "$file" "$policy" \
    >"$name.toml"
  serve_clip "$name.server.log" "$file" --policy fixed --fixed-rate "$rate" -c "$name.toml" ||
    return 1
  # shellcheck disable=SC2154 # serve_clip (lib.sh) sets clip_url
  timeout 120 "$client" "$clip_url" -r "$file" --csv "$name.csv" >"$name.log" 2>&1 || true
  stop_server
}

[[ -n "${TABLE_ONLY:-}" ]] ||
  echo "codec,source,policy,R,kbps,encoder_psnr_y,R_measured,mean_psnr_db,decoded,pictures,fps_kept" >results.csv
# Every clip first (the bitrates are known before any run), then the runs.
declare -A kbps_of psnr_of pictures_of
[[ -n "${TABLE_ONLY:-}" ]] && sources=()
for src in "${sources[@]}"; do
  # The source once, lossless (FFV1 in NUT: its time base is the source's 1/30 s; Matroska's 1 ms
  # made the encoders' constant frame rate drop and repeat pictures), so that every codec encodes
  # exactly the same pictures.
  generate_clip "$src.src" "$src.src.nut" "$(source_args "$src") -c:v ffv1" || continue
  for codec in "${codecs[@]}"; do
    read -r ext args < <(codec_args "$codec")
    file="$src.$codec.$ext"
    generate_clip "$src.$codec" "$file" "-i $src.src.nut $args" || continue
    pictures_of[$file]=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries \
      stream=nb_read_frames -of csv=p=0 "$file")
    kbps_of[$file]=$(awk -v b="$(stat -c %s "$file")" -v s="$seconds" \
      'BEGIN {printf "%.0f", b * 8 / s / 1000}')
    # The encoder's own fidelity: PSNR (Y) of the file against the source, for context only
    # (FFmpeg's average: of the mean squared error over all pictures). Both in the source's time
    # base first: WebM's 1 ms time stamps (33, 67, 100, 133 ms) paired a third of the pictures
    # with their predecessor.
    psnr_of[$file]=$(ffmpeg -nostdin -i "$file" -i "$src.src.nut" -lavfi "[0:v]settb=1/30[a];[1:v]settb=1/30[b];[a][b]psnr" \
      -frames:v "${pictures_of[$file]}" -f null - 2>&1 | sed -n 's/.*PSNR y:\([0-9.]*\) .*/\1/p' | tail -1)
    echo "# $file: ${kbps_of[$file]} kbit/s, ${pictures_of[$file]} pictures, encoder PSNR-Y ${psnr_of[$file]} dB"
  done
done

for src in "${sources[@]}"; do
  for codec in "${codecs[@]}"; do
    read -r ext _ < <(codec_args "$codec")
    file="$src.$codec.$ext"
    [[ -n "${kbps_of[$file]:-}" ]] || continue
    pictures=${pictures_of[$file]}
    runs=("0 priority")
    for r in "${rates[@]}"; do runs+=("$r priority"); done
    for r in "${uniform_rates[@]}"; do runs+=("$r uniform"); done
    for run in "${runs[@]}"; do
      read -r rate policy <<<"$run"
      name="$src.$codec.$policy.$rate"
      run_one "$name" "$file" "$rate" "$policy" || continue
      mean=$(sed -n 's/.*mean PSNR \([0-9.]*\) dB.*/\1/p' "$name.log")
      decoded=$(sed -n 's/.*frames decoded \([0-9]*\).*/\1/p' "$name.log")
      measured=$(tail -n +2 "$name.csv" | awk -F, '{p += $5; s += $6} END {if (p) printf "%.3f", 1 - s / p}')
      fps=$(awk -v d="${decoded:-0}" -v n="$pictures" 'BEGIN {printf "%.1f", n ? 30 * d / n : 0}')
      echo "$codec,$src,$policy,$rate,${kbps_of[$file]},${psnr_of[$file]},${measured:-},${mean:-},${decoded:-0},$pictures,$fps" |
        tee -a results.csv
    done
  done
done

# The table: per source and codec, the mean PSNR at each R with the priority planner, the frame
# rate it kept, and the uniform planner's mean PSNR in brackets. The client scores against the
# file's own pictures, so R = 0 is the cap (60 dB) for every codec and each figure is what the
# discard cost, not the encoder's fidelity (given apart: encoder PSNR-Y against the source).
python3 - "${rates[@]}" <<'EOF_PY' >table.md
import csv, sys
rates = sys.argv[1:]
rows = list(csv.DictReader(open("results.csv")))
get = {(r["codec"], r["source"], r["policy"], r["R"]): r for r in rows}
order = ["h264", "h264p", "h265", "vp8", "vp9", "av1"]
pairs = sorted({(r["source"], r["codec"]) for r in rows},
               key=lambda p: (p[0], order.index(p[1]) if p[1] in order else 99))
print("| source | codec | kbit/s | encoder PSNR-Y | R = 0 |" + "".join(f" R = {r} |" for r in rates))
print("|---" * (5 + len(rates)) + "|")
for src, codec in pairs:
    base = get.get((codec, src, "priority", "0"))
    if not base or not base["mean_psnr_db"]:
        continue
    cells = []
    for r in rates:
        p, u = get.get((codec, src, "priority", r)), get.get((codec, src, "uniform", r))
        if not p or not p["mean_psnr_db"]:
            cells.append(" - |")
            continue
        c = f" {float(p['mean_psnr_db']):.1f} / {p['fps_kept']}"
        if u and u["mean_psnr_db"]:
            c += f" [{float(u['mean_psnr_db']):.1f}]"
        cells.append(c + " |")
    enc = f"{float(base['encoder_psnr_y']):.1f}" if base["encoder_psnr_y"] else "-"
    print(f"| {src} | {codec} | {base['kbps']} | {enc} | {float(base['mean_psnr_db']):.0f} / "
          f"{base['fps_kept']} |" + "".join(cells))
EOF_PY
cat table.md
