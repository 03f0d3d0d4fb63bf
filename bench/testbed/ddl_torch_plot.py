#!/usr/bin/python3
"""Accuracy against training time and against stage, DDP + gloo and DDP + the relay's policies,
with and without the bottleneck, from the runs of ddl-torch-compare.sh (docs/ddl-torch.md,
bench/README.md "DDL under PyTorch (issue 13)").

    ddl_torch_plot.py RUNS_DIR [--out bench/reports/plots/ddl-torch-accuracy.png] [--rank 1]
                      [--csv runs.csv] [--no-plot]

RUNS_DIR holds one directory per run, named RATE-BACKEND-POLICY-FILL-REP (as the compare script
names them). For each (rate, backend, policy, fill) the curve is the mean over its repeats of the
test accuracy at each evaluated stage (2 000 images), at the mean training time of that stage;
error bars span the lowest and highest repeat. Training time leaves out the evaluations (the
iteration after an evaluated stage minus the median of the others, per rank), as the table's
"s to 0.6" does. Needs gnuplot (Debian's gnuplot-nox); writes the data and the gnuplot script next
to the PNG's name (.dat, .gp). --csv also writes one line per run. It prints the summary table:
per row the mean and the range over its repeats of the time to the target (training time), the
final accuracy and the median stage time, each against the gloo row of the same bottleneck.
"""

import argparse
import collections
import csv
import json
import os
import statistics
import subprocess
import sys

LABEL = {
    ("gloo", "-", "-"): "DDP + gloo",
    ("relay", "fixed", "gradient"): "relay R = 0 (gradient)",
    ("relay", "fixed", "model"): "relay R = 0 (model)",
    ("relay", "history", "model"): "relay history",
    ("relay", "adaptive", "model"): "relay adaptive",
    ("relay", "capacity", "model"): "relay capacity",
}
ORDER = list(LABEL)
RATES = [("4mbit", "4 Mbit/s bottleneck toward rank 1"), ("200mbit", "no bottleneck (200 Mbit/s)")]


def curve(run_dir, rank):
    """[(stage, training s, accuracy)] of one run's rank."""
    path = os.path.join(run_dir, f"rank-{rank}.csv")
    if not os.path.exists(path):
        return []
    rows = list(csv.DictReader(open(path, newline="")))
    tails = []  # step end to the next iteration, per stage: where the evaluation runs
    for a, b in zip(rows, rows[1:]):
        if a.get("step_end_us") and b.get("iter_us"):
            tails.append((a, int(b["iter_us"]) - int(a["step_end_us"])))
    plain = [t for a, t in tails if not a.get("test_acc")]
    base = statistics.median(plain) if plain else 0
    eval_us = {int(a["stage"]): max(0, t - base) for a, t in tails if a.get("test_acc")}
    t0 = int(rows[0]["iter_us"]) if rows and rows[0].get("iter_us") else None
    out, spent = [], 0
    for r in rows:
        s = int(r["stage"])
        if r.get("test_acc"):
            if t0 is not None and r.get("step_end_us"):
                # The accuracy is measured right after the step (the tail's first part).
                t = (int(r["step_end_us"]) - t0 - spent) / 1e6
            else:
                t = float(r["wall_s"])
            out.append((s, t, float(r["test_acc"])))
            spent += eval_us.get(s, 0)
    return out


def stage_ms(run_dir, rank):
    """Median stage time (iteration to iteration, stages without an evaluation, after 10)."""
    path = os.path.join(run_dir, f"rank-{rank}.csv")
    if not os.path.exists(path):
        return None
    rows = list(csv.DictReader(open(path, newline="")))
    it = [(int(b["iter_us"]) - int(a["iter_us"])) / 1000.0 for a, b in zip(rows, rows[1:])
          if int(a["stage"]) >= 10 and not a.get("test_acc") and a.get("iter_us")
          and b.get("iter_us")]
    return round(statistics.median(it), 2) if it else None


def spread(v, fmt):
    v = [x for x in v if x is not None]
    if not v:
        return "-"
    return f"{format(statistics.mean(v), fmt)} ({format(min(v), fmt)}-{format(max(v), fmt)})"


def print_summary(lines):
    """Mean (range) per row; "x gloo" = gloo's mean time / the row's mean time."""
    rows = collections.defaultdict(list)
    for x in lines:
        rows[(x["rate"], x["backend"], x["policy"], x["fill"])].append(x)
    print("| bottleneck | row | runs | s to target, mean (range) | x gloo | final acc, mean "
          "(range) | vs gloo, points | stage ms, mean (range) | x gloo (stage) | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rate, _ in RATES:
        gloo = rows.get((rate, "gloo", "-", "-"), [])
        gt = [x["s_to_target"] for x in gloo if x["s_to_target"] is not None]
        ga = [x["final_acc"] for x in gloo if x["final_acc"] is not None]
        gs = [x["stage_ms"] for x in gloo if x["stage_ms"] is not None]
        for key in ORDER:
            r = rows.get((rate,) + key)
            if not r:
                continue
            t = [x["s_to_target"] for x in r if x["s_to_target"] is not None]
            acc = [x["final_acc"] for x in r if x["final_acc"] is not None]
            st = [x["stage_ms"] for x in r if x["stage_ms"] is not None]
            xg = f"{statistics.mean(gt) / statistics.mean(t):.2f}x" if gt and t else "-"
            pts = (f"{100 * (statistics.mean(acc) - statistics.mean(ga)):+.2f}"
                   if acc and ga else "-")
            xs = f"{statistics.mean(gs) / statistics.mean(st):.2f}x" if gs and st else "-"
            errs = sum(1 for x in r if x["error"])
            missed = sum(1 for x in r if x["s_to_target"] is None)
            print(f"| {rate} | {LABEL[key]} | {len(r)} | {spread(t, '.1f')}"
                  f"{f' ({missed} never)' if missed else ''} | {xg} | {spread(acc, '.4f')} | "
                  f"{pts} | {spread(st, '.1f')} | {xs} | {errs} |")


def summary(run_dir, rank):
    p = os.path.join(run_dir, f"rank-{rank}.out")
    s = {}
    for line in open(p) if os.path.exists(p) else []:
        if line.startswith("SUMMARY "):
            s = json.loads(line[8:])
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs")
    ap.add_argument("--out", default="bench/reports/plots/ddl-torch-accuracy.png")
    ap.add_argument("--rank", type=int, default=1)
    ap.add_argument("--csv", default=None)
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args()
    groups = collections.defaultdict(list)
    lines = []
    for name in sorted(os.listdir(a.runs)):
        d = os.path.join(a.runs, name)
        parts = name.split("-")
        if not os.path.isdir(d) or len(parts) < 5:
            continue
        rate, backend, policy, fill, rep = parts[0], parts[1], parts[2], parts[3], parts[-1]
        if backend == "gloo":
            policy, fill = "-", "-"
        c = curve(d, a.rank)
        if c:
            groups[(rate, backend, policy, fill)].append(c)
        s = summary(d, a.rank)
        if s:
            lines.append({"rate": rate, "backend": backend, "policy": policy, "fill": fill,
                          "run": rep, "stage_at_target": s.get("stage_at_target"),
                          "s_to_target": s.get("time_to_target_train"),
                          "final_acc": s.get("final_acc"), "wall_s": round(s["wall_s"], 2),
                          "stage_ms": stage_ms(d, a.rank), "error": s.get("error") or ""})
    print_summary(lines)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(lines[0]) if lines else ["rate"])
            w.writeheader()
            w.writerows(lines)
    if a.no_plot:
        return 0
    base = os.path.splitext(a.out)[0]
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    blocks = []  # (rate, key, gnuplot index)
    with open(base + ".dat", "w") as f:
        for rate, _ in RATES:
            for key in ORDER:
                runs = groups.get((rate,) + key)
                if not runs:
                    continue
                f.write(f"# {rate} {LABEL[key]} ({len(runs)} runs): stage time_s acc acc_min "
                        "acc_max\n")
                stages = sorted(set.intersection(*[{s for s, _, _ in r} for r in runs]))
                for st in stages:
                    ts = [t for r in runs for s, t, _ in r if s == st]
                    acc = [x for r in runs for s, _, x in r if s == st]
                    f.write(f"{st} {statistics.mean(ts):.3f} {statistics.mean(acc):.4f} "
                            f"{min(acc):.4f} {max(acc):.4f}\n")
                f.write("\n\n")
                blocks.append((rate, key, len(blocks), len(runs)))
    gp = [f'set terminal pngcairo size 1200,800 font ",9"', f'set output "{a.out}"',
          "set multiplot layout 2,2", "set grid", "set key bottom right", "set yrange [0.1:0.8]",
          'set ylabel "rank 1 test accuracy (2 000 images)"']
    for col, (xlabel, xcol) in enumerate([("training time, s (evaluation left out)", 2),
                                          ("stage", 1)]):
        pass
    for rate, title in RATES:
        for xlabel, xcol in [("training time, s (evaluations left out)", 2), ("stage", 1)]:
            mine = [b for b in blocks if b[0] == rate]
            if not mine:
                continue
            gp.append(f'set title "{title}"')
            gp.append(f'set xlabel "{xlabel}"')
            gp.append("set arrow 1 from graph 0, first 0.6 to graph 1, first 0.6 nohead dt 2")
            plots = [f'"{base}.dat" index {i} using {xcol}:3:4:5 with yerrorlines lw 1.5 ps 0.5 '
                     f'title "{LABEL[k]} (n={n})"' for _, k, i, n in mine]
            gp.append("plot " + ", \\\n     ".join(plots))
    gp.append("unset multiplot")
    with open(base + ".gp", "w") as f:
        f.write("\n".join(gp) + "\n")
    subprocess.run(["gnuplot", base + ".gp"], check=True)
    print(f"wrote {a.out} ({len(blocks)} curves)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
