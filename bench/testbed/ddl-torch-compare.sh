#!/usr/bin/env bash
# DDP + gloo all-reduce against DDP + the predrop relay (R = 0, the exact rule `history`, the
# `adaptive` policy; missing chunks zero or own) on the test bed, same model, seed and batches
# (run-ddl-torch.sh), with a bottleneck and without one. Prints a markdown table of rank 1 (the
# rank behind the bottleneck); the runs stay in OUT.
#
#   ddl-torch-compare.sh [--out DIR] [--rate RATE] [--stages S] [--target-acc A]
#
# Needs PREDROP_BIN and PREDROP_DDL_CAPI (see run-ddl-torch.sh).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=build/ddl-torch-bed rate=4mbit stages=150 target=0.65
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    --target-acc) target="$2"; shift 2 ;;
    *) echo "ddl-torch-compare: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
runs=(
  "$rate gloo - -"
  "$rate relay fixed zero"
  "$rate relay history zero"
  "$rate relay adaptive zero"
  "$rate relay fixed own"
  "$rate relay history own"
  "$rate relay adaptive own"
  "200mbit gloo - -"
  "200mbit relay fixed zero"
)
echo "| bottleneck | backend | policy | fill | stages | wall s | s to ${target} | final acc (rank 1) | mean R (rank 1) |"
echo "|---|---|---|---|---|---|---|---|---|"
for run in "${runs[@]}"; do
  read -r r backend policy fill <<<"$run"
  dir="$out/$r-$backend-$policy-$fill"
  args=(--out "$dir" --rate "$r" --backend "$backend" --stages "$stages" --target-acc "$target")
  [[ "$policy" != - ]] && args+=(--policy "$policy" --fill "$fill")
  "$here/run-ddl-torch.sh" "${args[@]}" >"$dir.log" 2>&1
  /usr/bin/python3 - "$dir" "$r" "$backend" "$policy" "$fill" <<'PY'
import csv, json, os, sys
d, rate, backend, policy, fill = sys.argv[1:]
s = {}
for line in open(os.path.join(d, "rank-1.out")) if os.path.exists(os.path.join(d, "rank-1.out")) else []:
    if line.startswith("SUMMARY "):
        s = json.loads(line[8:])
rs = []
p = os.path.join(d, "rank-1.csv")
if os.path.exists(p):
    rs = [float(x["R"]) for x in csv.DictReader(open(p)) if x.get("R")]
mr = f"{sum(rs) / len(rs):.3f}" if rs else "-"
ttt = s.get("time_to_target")
acc = s.get("final_acc")
print(f"| {rate} | {backend} | {policy} | {fill} | {s.get('stages', '-')} | "
      f"{s.get('wall_s', 0):.1f} | {'-' if ttt is None else f'{ttt:.1f}'} | "
      f"{'-' if acc is None else f'{acc:.4f}'} | {mr} |"
      + (f" error: {s['error']}" if s.get("error") else ""))
PY
done
