#!/usr/bin/python3
"""Per regime and arm, mean and range over the repeats of ddl-torch-compare.sh's runs (issue 26;
bench/README.md "Tail-latency regimes"): rank 1's stage and time at the target accuracy
(training time, evaluations left out), final accuracy (10 000 images), iteration time mean and
p50 / p99 (stages 10.. without an evaluation), communication time p50 / p99 (the hook's first
bucket to the last all-reduce's completion: gloo's all-reduce with --timeline 1, the relay's
stage), the fraction of the model's chunks that did not come back (pre-discard R plus lost or
late) and of those lost in flight or late, the bytes through the bottleneck tbf(s); times and
accuracies as mean (range) over the repeats, the percentiles as means of the runs' percentiles; each against the gloo row of the
same regime.

    ddl_tail_table.py RUNS_DIR [RUNS_DIR...] [--rank 1] [--csv runs.csv] [--reference DIR...]

--reference: gloo's final accuracy from runs that start from perturbed models (fmnist_job
--perturb 1e-6 --perturb-seed K, one run per directory; gloo's accuracy does not depend on the
path, so loopback runs do): the accuracy columns then compare with their mean, and the table is
preceded by their mean, range and standard deviation. Without it gloo's repeats on the bed are
bit-identical (same seed, same start), a single point of a trajectory that a difference at the
level of float rounding moves by a point or more (bench/README.md "How much the final accuracy
moves"). Give only regimes of the reference's job (the same ranks and stages).
"within 0.5" counts the repeats whose final accuracy is at most 0.5 points below gloo's mean.

A run directory is RATE[+PROFILE][+wN][+rK]-BACKEND-POLICY-FILL-REP (N ranks, K sharded relays;
a +rK regime's speed-up is against gloo's rows of the regime without +rK); a run whose rank
failed or never reached the target counts in "failed" and not in the means.
"""
import argparse
import collections
import csv
import json
import os
import re
import sys

ARMS = [
    (("gloo", "-", "-"), "DDP + gloo"),
    (("relay", "fixed", "model"), "timeout-only (R = 0, deadline)"),
    (("relay", "fixed", "gradient"), "timeout-only, gradient averaging"),
    (("relay", "basic", "model"), "seed rule `basic`"),
    (("relay", "history", "model"), "`history`"),
    (("relay", "adaptive", "model"), "`adaptive`"),
    (("relay", "capacity", "model"), "`capacity`"),
]


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else None


def run_stats(d, rank):
    s = {}
    p = os.path.join(d, f"rank-{rank}.out")
    for line in open(p) if os.path.exists(p) else []:
        if line.startswith("SUMMARY "):
            s = json.loads(line[8:])
    p = os.path.join(d, f"rank-{rank}.csv")
    rows = list(csv.DictReader(open(p))) if os.path.exists(p) else []
    it, comm, miss, lost = [], [], [], []
    for a, b in zip(rows, rows[1:]):
        if (int(a["stage"]) >= 10 and not a.get("test_acc") and a.get("iter_us")
                and b.get("iter_us")):
            it.append((int(b["iter_us"]) - int(a["iter_us"])) / 1000.0)
    for x in rows[10:]:
        if x.get("hook_us") and x.get("done_us") and int(x["done_us"]) > int(x["hook_us"]) > 0:
            comm.append((int(x["done_us"]) - int(x["hook_us"])) / 1000.0)
        if x.get("chunks"):
            miss.append(1 - int(x["received"]) / int(x["chunks"]))
            lost.append(int(x["lost"]) / int(x["chunks"]))
    # Bytes through the bottleneck(s): every tbf in qdisc.txt below the open rate (run-ddl-torch.sh
    # writes r1's, then each rank's port tbf at --world > 2), cross traffic included.
    mb = None
    p = os.path.join(d, "qdisc.txt")
    if os.path.exists(p):
        mb, rate, shaped = 0.0, None, False
        for line in open(p):
            m = re.search(r"tbf .* rate (\S+)", line)
            if m:
                rate = m.group(1)
            m = re.search(r"Sent (\d+) bytes", line)
            if m and rate and rate != "200Mbit":
                mb += int(m.group(1)) / 1e6
                shaped = True
        mb = mb if shaped else None  # no bottleneck (every tbf open)
    load = ""
    p = os.path.join(d, "load.txt")
    if os.path.exists(p):
        load = open(p).read().strip()
    return {"t": s.get("time_to_target_train"), "stage": s.get("stage_at_target"),
            "acc": s.get("final_acc"), "error": s.get("error"),
            "itm": sum(it) / len(it) if it else None, "it50": pct(it, 0.5),
            "it99": pct(it, 0.99), "c50": pct(comm, 0.5),
            "c99": pct(comm, 0.99), "miss": sum(miss) / len(miss) if miss else 0.0,
            "lost": sum(lost) / len(lost) if lost else 0.0, "load": load, "mb": mb}


def spread(v, fmt, scale=1.0):
    v = [x * scale for x in v if x is not None]
    if not v:
        return "-"
    m = sum(v) / len(v)
    return f"{m:{fmt}} ({min(v):{fmt}}-{max(v):{fmt}})" if len(v) > 1 else f"{m:{fmt}}"


def mean(v):
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--rank", type=int, default=1)
    ap.add_argument("--csv")
    ap.add_argument("--reference", nargs="+", default=[])
    a = ap.parse_args()
    ref = [run_stats(d, a.rank)["acc"] for d in a.reference]
    ref = [x for x in ref if x is not None]
    if ref:
        m = sum(ref) / len(ref)
        sd = (sum((x - m) ** 2 for x in ref) / (len(ref) - 1)) ** 0.5 if len(ref) > 1 else 0.0
        near = sum(1 for x in ref if x >= m - 0.005)
        print(f"gloo from {len(ref)} perturbed starts: final accuracy {spread(ref, '.4f')}, "
              f"sd {sd * 100:.2f} points; {near} of {len(ref)} within 0.5 points of their own "
              "mean\n")
    groups = collections.defaultdict(list)
    lines = []
    for root in a.runs:
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            parts = name.split("-")
            if not os.path.isdir(d) or len(parts) < 5:
                continue
            # gloo's policy and fill are "-": NAME-gloo-----REP
            regime, backend, rep = parts[0], parts[1], parts[-1]
            policy, fill = ("-", "-") if backend == "gloo" else (parts[2], parts[3])
            r = run_stats(d, a.rank)
            r.update(regime=regime, backend=backend, policy=policy, fill=fill, rep=rep)
            groups[(regime, (backend, policy, fill))].append(r)
            lines.append(r)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(lines[0]) if lines else ["regime"])
            w.writeheader()
            w.writerows(lines)
    print("| regime | arm | runs | stage at target | s to target | x gloo | final acc | "
          "vs gloo, points | iteration ms mean (x gloo) | iteration ms p50 / p99 | "
          "comm ms p50 / p99 (P99/P50) | data missing % "
          "(lost/late %) | bottleneck MB | failed | within 0.5 | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for regime in sorted({k[0] for k in groups}):
        # Sharded relays (+rK, ddl-torch-compare.sh --relays) compare with gloo's regime.
        base = re.sub(r"\+r\d+$", "", regime)
        gl = [r for r in groups.get((base, ARMS[0][0]), []) if r["t"] is not None]
        gt, ga = mean([r["t"] for r in gl]), mean([r["acc"] for r in gl])
        if ref:
            ga = sum(ref) / len(ref)
        for key, label in ARMS:
            runs = groups.get((regime, key))
            if not runs:
                continue
            ok = [r for r in runs if r["t"] is not None and not r["error"]]
            t, acc = mean([r["t"] for r in ok]), mean([r["acc"] for r in ok])
            c50, c99 = mean([r["c50"] for r in ok]), mean([r["c99"] for r in ok])
            ratio = f" ({c99 / c50:.1f})" if c50 and c99 else ""
            loads = ", ".join(r["load"] for r in runs if r["load"])
            speed = f"{gt / t:.2f}x" if gt and t else "-"
            delta = f"{(acc - ga) * 100:+.2f}" if acc is not None and ga is not None else "-"
            m = {k: mean([r[k] for r in ok]) for k in ("itm", "it50", "it99", "miss", "lost")}
            gm = mean([r["itm"] for r in gl])
            its = (f"{m['itm']:.0f} ({gm / m['itm']:.2f}x) | {m['it50']:.0f} / {m['it99']:.0f}"
                   if m["itm"] and gm else "- | -")
            com = f"{c50:.0f} / {c99:.0f}{ratio}" if c50 and c99 else "-"
            miss = (f"{m['miss'] * 100:.1f} ({m['lost'] * 100:.1f})"
                    if m["miss"] is not None else "-")
            stages = "/".join(str(r["stage"]) for r in ok)
            near = (f"{sum(1 for r in ok if r['acc'] is not None and r['acc'] >= ga - 0.005)}"
                    f" of {len(ok)}" if ga is not None else "-")
            print(f"| {regime} | {label} | {len(runs)} | {stages} | "
                  f"{spread([r['t'] for r in ok], '.1f')} | "
                  f"{speed} | {spread([r['acc'] for r in ok], '.4f')} | {delta} | {its} | {com} | "
                  f"{miss} | {spread([r['mb'] for r in ok], '.1f')} | {len(runs) - len(ok)} | "
                  f"{near} | {loads} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
