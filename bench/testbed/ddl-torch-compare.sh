#!/usr/bin/env bash
# DDP + gloo all-reduce against DDP + the predrop relay (R = 0, the exact rule `history`, the
# `adaptive` and `capacity` policies; missing chunks zero, own, or zero with error feedback) on
# the test bed, same model, seed and batches
# (run-ddl-torch.sh), with a bottleneck and without one. Prints a markdown table of rank 1 (the
# rank behind the bottleneck); the runs stay in OUT.
#
#   ddl-torch-compare.sh [--out DIR] [--rate RATE] [--stages S] [--target-acc A] [--deadline D]
#                        [--perturb EPS]
#   DDL_TORCH_RUNS="4mbit gloo - -,4mbit relay history feedback" ddl-torch-compare.sh  (a subset)
#
# The relay's stage deadline is --deadline (ms, default 400, or adaptive); the final accuracy is
# taken on the full test set (10 000 images) after the final model synchronisation of
# model-averaging runs (DDL_TORCH_RANK_ARGS, default "--final-sync 1 --final-test-subset 10000
# --idle-close-ms 30 --eval-every 10"; the time to the target leaves out the time spent
# evaluating;
# docs/ddl-torch.md "Final accuracy"). A sixth field of a run repeats it: "4mbit relay history
# model 2".
#
# Tail-latency regimes (issue 26; run-ddl-torch.sh --profile): a run's sixth field names its
# profile (steady, the default, bursts, tcpshort, straggler, cpustraggler: rank 1's CPU), e.g. "20mbit relay basic model 2
# bursts"; its directory is then RATE+PROFILE-BACKEND-POLICY-FILL-REP. --owd MS adds the delay
# line's one-way delay to rank 1's path, --seed N fixes the profile's schedule (the same for every
# arm); DDL_TORCH_PROFILE_ARGS is passed as run-ddl-torch.sh --profile-args (e.g. "--rate-mbit 8":
# bursts at twice a 4 Mbit/s bottleneck). The timeout-only arm is "relay fixed model" (R = 0,
# only the stage deadline); the seed's exact rule is "relay basic model". gloo runs time their all-reduce (fmnist_job --timeline 1:
# DDP's all-reduce through a Python comm hook that notes its start and end), so that the
# comm p50/p99 columns hold gloo's all-reduce time. ddl_tail_table.py aggregates the repeats.
#
# --world N runs N ranks (run-ddl-torch.sh --world: one tbf per rank), --relays K shards the
# relay runs over K relay processes; the regime's name then ends in +wN resp. +rK (e.g.
# 4mbit+bursts+w4+r2-relay-capacity-model-1).
#
# --perturb EPS starts repeat k of every arm from the model multiplied by 1 + EPS * N(0, 1) drawn
# with seed k (fmnist_job --perturb EPS --perturb-seed k; the same for every rank and arm of a
# repeat): gloo's repeats are otherwise bit-identical, so its row would hide how far a
# difference at the level of float rounding (EPS 1e-6) carries to the final accuracy, which the
# relay arms' repeats sample through their timing (bench/README.md "How much the final accuracy
# moves").
#
# Needs PREDROP_BIN and PREDROP_DDL_CAPI (see run-ddl-torch.sh).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=build/ddl-torch-bed rate=4mbit stages=150 target=0.65 deadline=400 owd=0 seed=1 world=2 relays=1
perturb=0
export DDL_TORCH_RANK_ARGS="${DDL_TORCH_RANK_ARGS---final-sync 1 --final-test-subset 10000 --idle-close-ms 30 --eval-every 10}"
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    --target-acc) target="$2"; shift 2 ;;
    --deadline) deadline="$2"; shift 2 ;;
    --owd) owd="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --relays) relays="$2"; shift 2 ;;
    --perturb) perturb="$2"; shift 2 ;;
    *) echo "ddl-torch-compare: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
runs=(
  "$rate gloo - -"
  "$rate relay fixed gradient"
  "$rate relay fixed model"
  "$rate relay history model"
  "$rate relay adaptive model"
  "$rate relay capacity model"
  "200mbit gloo - -"
  "200mbit relay fixed gradient"
  "200mbit relay fixed model"
  "200mbit relay history model"
)
[[ -n "${DDL_TORCH_RUNS:-}" ]] && mapfile -t runs < <(tr ',' '\n' <<<"$DDL_TORCH_RUNS")
echo "| bottleneck | backend | policy | fill | run | load avg | wall s | rank 1: stage, s to ${target} | rank 1 final acc | rank 0: s to ${target} | rank 0 final acc | rank 1 mean R | rank 1 chunks received | uplink chunks late at the relay | tbf drops | rank 1 stage ms (median) | profile | rank 1 iteration ms p50 / p99 | rank 1 comm ms p50 / p99 | rank 1 data missing % (lost in flight or late %) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for run in "${runs[@]}"; do
  read -r r backend policy fill rep profile <<<"$run"
  rep="${rep:-1}" profile="${profile:-steady}"
  name="$r"
  [[ "$profile" != steady ]] && name="$r+$profile"
  ((world != 2)) && name+="+w$world"
  [[ "$backend" == relay ]] && ((relays > 1)) && name+="+r$relays"
  dir="$out/$name-$backend-$policy-$fill-$rep"
  args=(--out "$dir" --rate "$r" --backend "$backend" --stages "$stages" --target-acc "$target"
        --profile "$profile" --seed "$seed" --owd "$owd"
        --profile-args "${DDL_TORCH_PROFILE_ARGS:-}" --world "$world" --relays "$relays")
  # fill "gradient": gradient averaging with zero fill (the R = 0 reference).
  [[ "$fill" == gradient ]] && fill=zero
  [[ "$policy" != - ]] && args+=(--policy "$policy" --fill "$fill" --deadline "$deadline")
  load="$(cut -d' ' -f1 /proc/loadavg)"
  rank_args="$DDL_TORCH_RANK_ARGS"
  [[ "$backend" == gloo ]] && rank_args+=" --timeline 1"
  [[ "$perturb" != 0 ]] && rank_args+=" --perturb $perturb --perturb-seed $rep"
  DDL_TORCH_RANK_ARGS="$rank_args" "$here/run-ddl-torch.sh" "${args[@]}" >"$dir.log" 2>&1
  load="$load-$(cut -d' ' -f1 /proc/loadavg)"
  echo "$load" >"$dir/load.txt"
  echo "$perturb" >"$dir/perturb.txt"
  /usr/bin/python3 - "$dir" "$r" "$backend" "$policy" "$fill" "$rep" "$load" "$profile" <<'PY'
import csv, json, os, re, sys
d, rate, backend, policy, fill, rep, load, profile = sys.argv[1:]
def summary(k):
    s = {}
    p = os.path.join(d, f"rank-{k}.out")
    for line in open(p) if os.path.exists(p) else []:
        if line.startswith("SUMMARY "):
            s = json.loads(line[8:])
    return s
def f(v, fmt):
    return "-" if v is None else format(v, fmt)
s0, s1 = summary(0), summary(1)
rs, rx, it, comm, miss, lost = [], [], [], [], [], []
p = os.path.join(d, "rank-1.csv")
if os.path.exists(p):
    rows = list(csv.DictReader(open(p)))
    for x in rows[10:]:
        if x.get("hook_us") and x.get("done_us") and int(x["done_us"]) > int(x["hook_us"]) > 0:
            comm.append((int(x["done_us"]) - int(x["hook_us"])) / 1000.0)
        if x.get("chunks"):
            miss.append(1 - int(x["received"]) / int(x["chunks"]))
            lost.append(int(x["lost"]) / int(x["chunks"]))
    for x in rows:
        if x.get("R"):
            rs.append(float(x["R"]))
            rx.append(int(x["received"]))
    # Stage time: iteration start to the next one, stages without an evaluation, after 10.
    for a, b in zip(rows, rows[1:]):
        if int(a["stage"]) >= 10 and not a.get("test_acc") and a.get("iter_us") and b.get("iter_us"):
            it.append((int(b["iter_us"]) - int(a["iter_us"])) / 1000.0)
it.sort()
comm.sort()
med = f"{it[len(it) // 2]:.1f}" if it else "-"
pct = lambda v, q: v[min(len(v) - 1, int(q * len(v)))]
p5099 = lambda v: f"{pct(v, 0.5):.1f} / {pct(v, 0.99):.1f}" if v else "-"
mean = lambda v, fmt: format(sum(v) / len(v), fmt) if v else "-"
drops = "-"
q = os.path.join(d, "qdisc.txt")
if os.path.exists(q):
    m = re.findall(r"dropped (\d+)", open(q).read())
    drops = str(max(int(x) for x in m)) if m else "-"
late = "-"
lg = os.path.join(d, "relay.log")
if os.path.exists(lg):
    m = re.search(r"chunks (\d+) received, (\d+) late", open(lg, errors="replace").read())
    late = f"{m.group(2)} of {int(m.group(1))}" if m else "-"
err = s1.get("error") or s0.get("error")
print(f"| {rate} | {backend} | {policy} | {fill} | {rep} | {load} | {s1.get('wall_s', 0):.1f} | "
      f"{s1.get('stage_at_target', '-')}, {f(s1.get('time_to_target_train'), '.1f')} | "
      f"{f(s1.get('final_acc'), '.4f')} | {f(s0.get('time_to_target_train'), '.1f')} | "
      f"{f(s0.get('final_acc'), '.4f')} | {mean(rs, '.3f')} | {mean(rx, '.1f')} | {late} | "
      f"{drops} | {med} | {profile} | {p5099(it)} | {p5099(comm)} | "
      f"{mean(miss, '.1%')[:-1] if miss else '-'} ({mean(lost, '.1%')[:-1] if lost else '-'}) |"
      + (f" error: {err}" if err else ""), flush=True)
PY
done
