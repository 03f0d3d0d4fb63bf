#!/usr/bin/env python3
"""Summarises test-bed runs: per-block table, per-policy summary, targets, gnuplot plots.

    analyze.py RESULTS_DIR

RESULTS_DIR holds one folder per scenario with a scenario.json (written by run-all.sh) and one
folder per policy run (written by run-scenario.sh: client-<i>.csv, trace.csv, events). Writes
RESULTS_DIR/blocks.csv (every block of every run), summary.csv, summary.md and plots/*.png, and
prints the tables. Standard library only.
"""
import csv
import json
import math
import os
import statistics
import subprocess
import sys

# A block is a stall when its reception period exceeds this multiple of the uncongested one.
STALL_FACTOR = 2.0
# Issue 5's targets: L within 1.2x the uncongested L within 10 blocks of onset, R back to ~0
# within 10 blocks after the end, mean PSNR >= best fixed R and >= no discard + 3 dB.
L_TARGET_FACTOR = 1.2
TARGET_BLOCKS = 10
R_ZERO = 0.02
PSNR_MARGIN_DB = 3.0
# Convergence must hold for this many consecutive blocks (a single good block is luck).
SETTLE_RUN = 3
# Blocks after an onset left out of the "settled" congested PSNR.
SETTLE_SKIP = 2
# "Clean" block: what a viewer would call uncongested (used for the stricter convergence figure).
CLEAN_LOSS = 0.01
CLEAN_QUEUE_MS = 20.0


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def pct(values, q):
    """Percentile with linear interpolation (numpy's default), q in [0, 100]."""
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def fmt(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}f}"


def load_run(run_dir):
    """Per-client block lists from a run folder (client CSVs joined with the server trace)."""
    clients = []
    i = 0
    while os.path.exists(os.path.join(run_dir, f"client-{i}.csv")):
        rows = read_csv(os.path.join(run_dir, f"client-{i}.csv"))
        blocks = []
        for r in rows:
            try:
                psnr = float(r["psnr_db"])
            except ValueError:
                psnr = float("nan")
            sent = int(r["sent"])
            received = int(r["received"])
            blocks.append(
                {
                    "block": int(r["block"]),
                    "rate": float(r["rate"]),
                    "L_ms": float(r["reception_period_ms"]),
                    "psnr": psnr,
                    "planned": int(r["planned"]),
                    "sent": sent,
                    "discarded": int(r["discarded"]),
                    "received": received,
                    "lost": max(0, sent - received),
                    "loss": float(r["network_loss"]),
                    "queue_ms": float(r["queue_delay_ms"]) if r["queue_delay_ms"] else 0.0,
                    # PDFB v1.1 clients: the largest queueing delay of any packet of the block.
                    "queue_max_ms": float(r["queue_max_ms"]) if r.get("queue_max_ms") else float("nan"),
                }
            )
        clients.append(blocks)
        i += 1
    # The server trace's capacity estimate (policies that have one; payload kbit/s), per block of
    # the first session in the trace: with one client that is the client's session; with several
    # the sessions' order in the trace need not be the clients' (plots show client 0 only).
    cap = {}
    trace = os.path.join(run_dir, "trace.csv")
    if clients and os.path.exists(trace):
        first = None
        for r in read_csv(trace):
            if first is None:
                first = r["session"]
            if r["session"] != first or not r.get("capacity_kbps"):
                continue
            cap[int(r["block"])] = float(r["capacity_kbps"])
    for blocks in clients[:1]:
        for b in blocks:
            b["cap_kbps"] = cap.get(b["block"], float("nan"))
    return clients


def settle_index(blocks, start, stop, good):
    """Blocks from `start` until `good` holds for SETTLE_RUN blocks in a row, or from some block
    to the end of the window [start, stop) when the window (e.g. the gap before the next
    congestion episode) ends sooner."""
    run = 0
    last = None
    for b in blocks:
        if b["block"] < start or b["block"] >= stop:
            continue
        run = run + 1 if good(b) else 0
        last = b["block"]
        if run >= SETTLE_RUN:
            return b["block"] - SETTLE_RUN + 1 - start
    if run > 0 and last is not None and last == stop - 1:
        return last - run + 1 - start
    return None


def summarise(blocks, meta, l_unc):
    onset = meta.get("onset")
    end = meta.get("end")
    n_blocks = meta["blocks"]
    skip = meta.get("warmup", 0)
    scored = [b for b in blocks if b["block"] >= skip]
    Ls = [b["L_ms"] for b in scored]
    ps = [b["psnr"] for b in scored if not math.isnan(b["psnr"])]
    s = {
        "blocks": len(scored),
        "L_p50": pct(Ls, 50),
        "L_p95": pct(Ls, 95),
        "L_max": max(Ls) if Ls else float("nan"),
        "psnr_mean": statistics.fmean(ps) if ps else float("nan"),
        "psnr_min": min(ps) if ps else float("nan"),
        "R_mean": statistics.fmean([b["rate"] for b in scored]) if scored else float("nan"),
        "discarded": sum(b["discarded"] for b in scored),
        "lost": sum(b["lost"] for b in scored),
        "sent": sum(b["sent"] for b in scored),
        "queue_p95": pct([b["queue_ms"] for b in scored], 95),
        "stalls": sum(1 for b in scored if b["L_ms"] > STALL_FACTOR * l_unc),
        "loss_blocks": sum(1 for b in scored if b["lost"] > 0),
    }
    planned = sum(b["planned"] for b in scored)
    s["discard_pct"] = 100.0 * s["discarded"] / planned if planned else float("nan")
    s["loss_pct"] = 100.0 * s["lost"] / s["sent"] if s["sent"] else float("nan")
    episodes = meta.get("episodes") or ([[onset, end]] if onset is not None else [])
    if episodes:
        onset_l, onset_clean, end_r0 = [], [], []
        for k, (on, off) in enumerate(episodes):
            stop = off if off is not None else n_blocks
            onset_l.append(settle_index(blocks, on, stop, lambda b: b["L_ms"] <= L_TARGET_FACTOR * l_unc))
            onset_clean.append(settle_index(
                blocks, on, stop,
                lambda b: b["loss"] <= CLEAN_LOSS and b["queue_ms"] <= CLEAN_QUEUE_MS
                and b["L_ms"] <= L_TARGET_FACTOR * l_unc))
            if off is not None:
                nxt = episodes[k + 1][0] if k + 1 < len(episodes) else n_blocks
                end_r0.append(settle_index(blocks, off, nxt, lambda b: b["rate"] <= R_ZERO))
        # The worst episode counts; None (never) is worst of all.
        worst = lambda vals: None if any(v is None for v in vals) else max(vals)
        s["onset_L"] = worst(onset_l)
        s["onset_clean"] = worst(onset_clean)
        if end_r0:
            s["end_R0"] = worst(end_r0)
        inside = lambda b: any(on <= b["block"] < (off if off is not None else n_blocks) for on, off in episodes)
        cp = [b["psnr"] for b in blocks if inside(b) and not math.isnan(b["psnr"])]
        up = [b["psnr"] for b in blocks if not inside(b) and not math.isnan(b["psnr"])]
        s["psnr_congested"] = statistics.fmean(cp) if cp else float("nan")
        # "Settled": congested blocks from the 3rd after each onset on (the onset block and the
        # next are sent before any report on the congestion can act on a block).
        settled = lambda b: any(on + SETTLE_SKIP <= b["block"] < (off if off is not None else n_blocks)
                                for on, off in episodes)
        sp = [b["psnr"] for b in blocks if settled(b) and not math.isnan(b["psnr"])]
        s["psnr_settled"] = statistics.fmean(sp) if sp else float("nan")
        # The queue target's metric: p95 over the congested blocks of the end-of-block queueing
        # delay (the block's last packets); beside it the same p95 of each block's largest
        # per-packet delay (PDFB v1.1 clients), which the key frame's burst dominates.
        s["queue_p95_congested"] = pct([b["queue_ms"] for b in blocks if inside(b)], 95)
        s["queue_p95_settled"] = pct([b["queue_ms"] for b in blocks if settled(b)], 95)
        qm = [b["queue_max_ms"] for b in blocks if inside(b) and not math.isnan(b["queue_max_ms"])]
        s["queue_max_p95_congested"] = pct(qm, 95) if qm else float("nan")
        # Per phase (episode bounds and marks split the run): PSNR mean / R mean.
        bounds = sorted({0, n_blocks, *[x for e in episodes for x in e if x is not None], *meta.get("marks", [])})
        phases = []
        for lo, hi in zip(bounds, bounds[1:]):
            inb = [b for b in blocks if lo <= b["block"] < hi]
            pp = [b["psnr"] for b in inb if not math.isnan(b["psnr"])]
            phases.append((lo, hi, statistics.fmean(pp) if pp else float("nan"),
                           statistics.fmean([b["rate"] for b in inb]) if inb else float("nan")))
        s["phases"] = phases
        if up:
            s["psnr_uncongested"] = statistics.fmean(up)
    return s


def pool(client_summaries):
    """Summary of several clients of one run: means of the figures, worst of the worst cases."""
    if len(client_summaries) == 1:
        return dict(client_summaries[0])
    out = {}
    for k in client_summaries[0]:
        vals = [c[k] for c in client_summaries]
        if k == "phases":
            out[k] = [(p[0], p[1], statistics.fmean(c["phases"][i][2] for c in client_summaries),
                       statistics.fmean(c["phases"][i][3] for c in client_summaries))
                      for i, p in enumerate(vals[0])]
        elif k in ("psnr_min",):
            out[k] = min(vals)
        elif k in ("onset_L", "onset_clean", "end_R0"):
            out[k] = None if any(v is None for v in vals) else max(vals)
        elif k in ("blocks", "discarded", "lost", "sent", "stalls", "loss_blocks"):
            out[k] = sum(vals)
        else:
            out[k] = statistics.fmean(vals)
    means = [c["psnr_mean"] for c in client_summaries]
    out["psnr_spread"] = max(means) - min(means)
    # Jain's fairness index over the clients' delivered packets (1 = equal shares).
    got = [c["sent"] - c["lost"] for c in client_summaries]
    out["jain"] = sum(got) ** 2 / (len(got) * sum(g * g for g in got)) if any(got) else float("nan")
    return out


def blocks_text(v):
    return "never" if v is None else str(v)


def gnuplot_runs(results, scenario, meta, runs, plots_dir):
    """One PNG per scenario: R, L and PSNR over blocks, one line per policy (client 0)."""
    os.makedirs(plots_dir, exist_ok=True)
    data_files = []
    for name, clients in runs:
        path = os.path.join(results, scenario, name, "plot.dat")
        with open(path, "w") as f:
            for b in clients[0]:
                psnr = "nan" if math.isnan(b["psnr"]) else f"{b['psnr']:.3f}"
                cap = b.get("cap_kbps", float("nan"))
                cap = "nan" if math.isnan(cap) else f"{cap:.1f}"
                qmax = b.get("queue_max_ms", float("nan"))
                qmax = "nan" if math.isnan(qmax) else f"{qmax:.3f}"
                f.write(f"{b['block']} {b['rate']:.4f} {b['L_ms']:.3f} {psnr} {b['queue_ms']:.3f} {cap} {qmax}\n")
        data_files.append((name, path))
    # The bottleneck's rate per block (wire kbit/s) from the scenario's initial rate and the
    # rate events the run executed; the capacity estimate is in the same link kbit/s.
    bottleneck = None
    if meta.get("rate_kbps") is not None and runs:
        steps = [(0, float(meta["rate_kbps"]))]
        ev = os.path.join(results, scenario, runs[0][0], "events")
        if os.path.exists(ev):
            for line in open(ev):
                f = line.split()
                if len(f) >= 4 and f[2] == "rate":
                    v = f[3].lower()
                    kbps = float(v[:-4]) if v.endswith("kbit") else float(v[:-4]) * 1000 if v.endswith("mbit") else None
                    if kbps is not None:
                        steps.append((int(float(f[0])), kbps))
        bottleneck = os.path.join(results, scenario, "bottleneck.dat")
        with open(bottleneck, "w") as f:
            for blk in range(meta["blocks"] + 1):
                rate = [k for t, k in steps if t <= blk][-1]
                f.write(f"{blk} {min(rate, 3000.0):.1f}\n")
    cap_files = [(n, p) for (n, p), (_, c) in zip(data_files, runs)
                 if any(not math.isnan(b.get("cap_kbps", float("nan"))) for b in c[0])]
    png = os.path.join(plots_dir, f"{scenario}.png")
    marks = []
    for key in ("onset", "end"):
        if meta.get(key) is not None:
            marks.append(meta[key])
    for t in meta.get("marks", []):
        marks.append(t)
    arrows = "".join(
        f"set arrow from {m},graph 0 to {m},graph 1 nohead dt 2 lc rgb 'gray40'\n" for m in marks
    )

    colors = ["#7f7f7f", "#2ca02c", "#1f77b4", "#ff7f0e", "#d62728", "#9467bd", "#8c564b",
              "#e377c2", "#17becf", "#bcbd22", "#000000", "#aec7e8", "#ffbb78"]

    def color(name, i):
        # The improved policy is always red and drawn thickest, so it reads the same in every plot.
        if name == "adaptive":
            return "#d62728", 2.5
        if name == "capacity":
            return "#1f3fbf", 2.5
        return colors[i % len(colors)] if colors[i % len(colors)] != "#d62728" else "#000000", 1.3

    def plot_cmd(col):
        parts = []
        for i, (n, p) in enumerate(data_files):
            c, w = color(n, i)
            parts.append(f"'{p}' using 1:{col} with lines lw {w} lc rgb '{c}' title '{n}'")
        return "plot " + ", ".join(parts)

    cap_plot = ""
    if cap_files:
        parts = []
        if bottleneck:
            parts.append(f"'{bottleneck}' using 1:2 with steps lw 1.5 dt 2 lc rgb 'black' title 'bottleneck (link, cap 3000)'")
        for i, (n, p) in enumerate(data_files):
            if (n, p) in cap_files:
                c, w = color(n, i)
                parts.append(f"'{p}' using 1:6 with linespoints pt 7 ps 0.4 lw {w} lc rgb '{c}' title '{n} Ĉ (link)'")
        # Stream scale: an open path's estimate (the key frame's send rate) is 6-15 Mbit/s.
        cap_plot = "set ylabel 'kbit/s'\nset yrange [0:3000]\nplot " + ", ".join(parts)
    # The capacity policy's largest per-packet queueing delay per block (PDFB v1.1), dashed, beside
    # every policy's end-of-block reading (the queue target's metric).
    qmax_plot = ""
    for i, (n, p) in enumerate(data_files):
        if n == "capacity" and (n, p) in cap_files:
            c, _ = color(n, i)
            qmax_plot = f", '{p}' using 1:7 with lines lw 1 dt 2 lc rgb '{c}' title 'capacity: largest per packet'"
    panels = 5 if cap_plot else 4
    script = f"""
set terminal png size 1000,{1100 if cap_plot else 900} font ',9'
set output '{png}'
set multiplot layout {panels},1 title '{scenario}: {meta.get("title", "")}'
set key outside right
set grid
{arrows}
set ylabel 'R'
set yrange [0:0.7]
{plot_cmd(2)}
set ylabel 'L (ms)'
set yrange [*:*]
{plot_cmd(3)}
set ylabel 'PSNR (dB)'
set yrange [10:62]
{plot_cmd(4)}
set ylabel 'queue delay (ms)'
set xlabel 'block (1 s)'
set yrange [0:*]
{plot_cmd(5)}{qmax_plot}
{cap_plot}
unset multiplot
"""
    try:
        subprocess.run(["gnuplot"], input=script.encode(), check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"gnuplot failed for {scenario}: {e}", file=sys.stderr)
        return None
    return png


COLUMNS = [
    ("policy", "policy", None),
    ("L_p50", "L p50 ms", 1),
    ("L_p95", "L p95 ms", 1),
    ("queue_p95", "queue p95 ms", 1),
    ("queue_p95_congested", "queue p95 cong.", 1),
    ("queue_p95_settled", "queue p95 settled", 1),
    ("queue_max_p95_congested", "queue max p95 cong.", 1),
    ("psnr_mean", "PSNR mean", 2),
    ("psnr_min", "PSNR worst", 1),
    ("psnr_congested", "PSNR cong.", 2),
    ("psnr_settled", "PSNR settled", 2),
    ("psnr_uncongested", "PSNR uncong.", 2),
    ("R_mean", "R mean", 3),
    ("discard_pct", "pre-disc %", 1),
    ("loss_pct", "net loss %", 1),
    ("loss_blocks", "loss blocks", 0),
    ("stalls", "stalls", 0),
    ("onset_L", "onset→L≤1.2x", 0),
    ("onset_clean", "onset→clean", 0),
    ("end_R0", "end→R≈0", 0),
    ("jain", "Jain", 3),
    ("psnr_spread", "PSNR spread", 2),
]


def cell(s, key, digits):
    if key == "policy":
        return s["policy"]
    if key not in s:
        return "–"
    v = s[key]
    if key in ("onset_L", "onset_clean", "end_R0"):
        return blocks_text(v)
    if digits == 0 and isinstance(v, (int, float)) and not math.isnan(v):
        return str(int(round(v)))
    return fmt(v, digits)


DDL_TARGET_SPEEDUP = 1.5
DDL_ACC_MARGIN_PP = 0.5
DDL_SMOOTH = 3


def ddl_section(results, scen, meta, plots_dir):
    """DDL runs: time to the target test accuracy, final accuracy, loss and R per policy."""
    target = meta.get("target_accuracy", 0.75)
    rows, curves = [], []
    for name in meta["policies"]:
        d = os.path.join(results, scen, name)
        w0 = os.path.join(d, "worker-0.csv")
        if not os.path.exists(w0):
            continue
        stages = read_csv(w0)
        if not stages:
            continue
        t = 0.0
        curve = []
        reach_t = reach_s = None
        for r in stages:
            t += int(r["stage_us"]) / 1e6
            acc = float(r["test_accuracy"])
            if acc >= 0:
                curve.append((int(r["stage"]), t, acc))
                # Test accuracy on 2000 images jumps by several points between evaluations, so
                # the target counts as reached when the mean of the last DDL_SMOOTH evaluations
                # reaches it; the final accuracy is the same mean at the end.
                last = [c[2] for c in curve[-DDL_SMOOTH:]]
                if reach_t is None and len(last) == DDL_SMOOTH and statistics.fmean(last) >= target:
                    reach_t, reach_s = t, int(r["stage"])
        lost = announced = 0
        Ls = []
        i = 0
        while os.path.exists(os.path.join(d, f"worker-{i}.csv")):
            for r in read_csv(os.path.join(d, f"worker-{i}.csv")):
                lost += int(r["lost"])
                announced += int(r["announced"])
                Ls.append(int(r["L_us"]) / 1000.0)
            i += 1
        relay = read_csv(os.path.join(d, "relay-trace.csv")) if os.path.exists(os.path.join(d, "relay-trace.csv")) else []
        planned = sum(int(r["planned"]) for r in relay)
        discarded = sum(int(r["discarded"]) for r in relay)
        rates = [float(r["rate"]) for r in relay]
        rows.append({
            "policy": name, "stages": len(stages), "wall_s": t,
            "stage_ms": 1000.0 * t / len(stages), "L_p50": pct(Ls, 50), "L_p95": pct(Ls, 95),
            "R_mean": statistics.fmean(rates) if rates else float("nan"),
            "discard_pct": 100.0 * discarded / planned if planned else float("nan"),
            "loss_pct": 100.0 * lost / announced if announced else float("nan"),
            "final_acc": statistics.fmean(c[2] for c in curve[-DDL_SMOOTH:]) if curve else float("nan"),
            "reach_s": reach_s, "reach_t": reach_t,
        })
        curves.append((name, curve, relay))
    md = [f"## {scen}: {meta.get('title', '')}", ""]
    if meta.get("description"):
        md += [meta["description"], ""]
    if not rows:
        return md + ["(no runs)", ""], []
    none = next((r for r in rows if r["policy"].endswith("none")), None)
    md.append(f"Test accuracy is smoothed over the last {DDL_SMOOTH} evaluations (every 10 stages) for both "
              f"the time to {target:.0%} and the final accuracy.")
    md.append("")
    md.append(f"| policy | stages | wall s | stage ms | L p50 ms | L p95 ms | R mean | pre-disc % | net loss % | stage to {target:.0%} | time to {target:.0%} s | speed-up vs R=0 | final acc % |")
    md.append("|" + "---|" * 13)
    for r in rows:
        sp = (none["reach_t"] / r["reach_t"]) if none and none["reach_t"] and r["reach_t"] else float("nan")
        r["speedup"] = sp
        md.append("| " + " | ".join([
            r["policy"], str(r["stages"]), fmt(r["wall_s"], 1), fmt(r["stage_ms"], 0), fmt(r["L_p50"], 1),
            fmt(r["L_p95"], 1), fmt(r["R_mean"], 3), fmt(r["discard_pct"], 1), fmt(r["loss_pct"], 1),
            blocks_text(r["reach_s"]), fmt(r["reach_t"], 1) if r["reach_t"] else "never", fmt(sp, 2),
            fmt(100 * r["final_acc"], 2)]) + " |")
    md.append("")
    for r in rows:
        if not r["policy"].endswith("adaptive") or none is None:
            continue
        ok1 = r["reach_t"] is not None and none["reach_t"] is not None and r["reach_t"] * DDL_TARGET_SPEEDUP <= none["reach_t"]
        ok2 = r["final_acc"] >= none["final_acc"] - DDL_ACC_MARGIN_PP / 100
        md.append(f"Targets, **{r['policy']}**:")
        md.append("")
        md.append(f"- {'met' if ok1 else '**missed**'}: reaches {target:.0%} at least {DDL_TARGET_SPEEDUP}x sooner than R = 0: speed-up {fmt(r['speedup'], 2)}")
        md.append(f"- {'met' if ok2 else '**missed**'}: final accuracy within {DDL_ACC_MARGIN_PP} pp of R = 0 ({100 * none['final_acc']:.2f} %): {100 * r['final_acc']:.2f} %")
        md.append("")
    with open(os.path.join(results, f"{scen}-summary.csv"), "w", newline="") as f:
        keys = ["policy", "stages", "wall_s", "stage_ms", "L_p50", "L_p95", "R_mean", "discard_pct",
                "loss_pct", "reach_s", "reach_t", "speedup", "final_acc"]
        w = csv.writer(f)
        w.writerow(keys)
        for r in rows:
            w.writerow([f"{r[k]:.4f}" if isinstance(r.get(k), float) else r.get(k, "") for k in keys])
    # Plot: accuracy over wall time, R over stages (rank 0).
    os.makedirs(plots_dir, exist_ok=True)
    files = []
    for name, curve, relay in curves:
        a = os.path.join(results, scen, name, "acc.dat")
        with open(a, "w") as f:
            for st, t, acc in curve:
                f.write(f"{st} {t:.3f} {acc:.4f}\n")
        rr = os.path.join(results, scen, name, "rate.dat")
        with open(rr, "w") as f:
            for r in relay:
                if r["rank"] == "0":
                    f.write(f"{r['stage']} {r['rate']} {int(r['L_us']) / 1000.0:.3f}\n")
        files.append((name, a, rr))
    png = os.path.join(plots_dir, f"{scen}.png")
    acc_plot = ", ".join(f"'{a}' using 2:3 with linespoints lw 1.5 title '{n}'" for n, a, _ in files)
    r_plot = ", ".join(f"'{rr}' using 1:2 with lines lw 1.5 title '{n}'" for n, _, rr in files)
    l_plot = ", ".join(f"'{rr}' using 1:3 with lines lw 1 title '{n}'" for n, _, rr in files)
    script = f"""
set terminal png size 1000,800 font ',9'
set output '{png}'
set multiplot layout 3,1 title '{scen}: {meta.get("title", "")}'
set key outside right
set grid
set ylabel 'test accuracy'
set xlabel 'wall time (s)'
plot {acc_plot}
set ylabel 'R (relay to rank 0)'
set xlabel 'stage'
set yrange [0:0.7]
plot {r_plot}
set ylabel 'L (ms, rank 0)'
set yrange [*:*]
plot {l_plot}
unset multiplot
"""
    try:
        subprocess.run(["gnuplot"], input=script.encode(), check=True, capture_output=True)
        md += [f"![{scen}](plots/{os.path.basename(png)})", ""]
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"gnuplot failed for {scen}: {e}", file=sys.stderr)
    return md, rows


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    plots_dir = os.path.join(results, "plots")
    scenarios = sorted(
        d for d in os.listdir(results) if os.path.exists(os.path.join(results, d, "scenario.json"))
    )
    metas = {s: json.load(open(os.path.join(results, s, "scenario.json"))) for s in scenarios}
    scenarios.sort(key=lambda s: metas[s].get("order", 99))
    # The uncongested reception period: median L of R = 0 in the open bed.
    l_unc = None
    for s in scenarios:
        if metas[s].get("baseline"):
            clients = load_run(os.path.join(results, s, "none"))
            if clients:
                l_unc = statistics.median(b["L_ms"] for b in clients[0])
    if l_unc is None:
        l_unc = 1000.0
        print("no baseline run (open/none): taking 1000 ms as the uncongested L", file=sys.stderr)

    all_rows = []
    md = [
        "# Test-bed results",
        "",
        f"Uncongested L (median L of R = 0 in the open bed): **{l_unc:.1f} ms**; stall = block with "
        f"L > {STALL_FACTOR:g}x that; convergence counts blocks until the condition holds "
        f"{SETTLE_RUN} blocks in a row (onset→clean also needs network loss ≤ {CLEAN_LOSS:.0%} and "
        f"queueing delay ≤ {CLEAN_QUEUE_MS:g} ms); 'never' = not within the run.",
        "",
    ]
    blocks_out = open(os.path.join(results, "blocks.csv"), "w", newline="")
    bw = csv.writer(blocks_out)
    bw.writerow(["scenario", "policy", "client", "block", "rate", "L_ms", "psnr_db", "planned",
                 "sent", "pre_discarded", "received", "network_lost", "network_loss",
                 "queue_delay_ms"])
    for scen in scenarios:
        meta = metas[scen]
        if meta.get("kind") == "ddl":
            ddl_md, ddl_rows = ddl_section(results, scen, meta, plots_dir)
            md += ddl_md
            for r in ddl_rows:
                r["scenario"] = scen
            continue
        runs = []
        # The scenario's policies, then any other run folder in it (a SCENARIOS/POLICIES subset
        # run may have added rows the scenario's default list does not name).
        extra = sorted(d for d in os.listdir(os.path.join(results, scen))
                       if d not in meta["policies"] and os.path.exists(os.path.join(results, scen, d, "client-0.csv")))
        for name in meta["policies"] + extra:
            d = os.path.join(results, scen, name)
            if not os.path.isdir(d):
                continue
            clients = load_run(d)
            if not clients or not clients[0]:
                print(f"{scen}/{name}: no client data", file=sys.stderr)
                continue
            runs.append((name, clients))
            for ci, blocks in enumerate(clients):
                for b in blocks:
                    bw.writerow([scen, name, ci, b["block"], f"{b['rate']:.4f}", f"{b['L_ms']:.3f}",
                                 f"{b['psnr']:.3f}", b["planned"], b["sent"], b["discarded"],
                                 b["received"], b["lost"], f"{b['loss']:.4f}", f"{b['queue_ms']:.3f}"])
            per_client = [summarise(c, meta, l_unc) for c in clients]
            s = pool(per_client)
            s["policy"] = name
            s["scenario"] = scen
            all_rows.append(s)
        rows = [r for r in all_rows if r["scenario"] == scen]
        if not rows:
            continue
        cols = [c for c in COLUMNS if any(c[0] in r for r in rows) or c[0] == "policy"]
        md.append(f"## {scen}: {meta.get('title', '')}")
        md.append("")
        if meta.get("description"):
            md.append(meta["description"])
            md.append("")
        md.append("| " + " | ".join(c[1] for c in cols) + " |")
        md.append("|" + "---|" * len(cols))
        for r in rows:
            md.append("| " + " | ".join(cell(r, c[0], c[2]) for c in cols) + " |")
        md.append("")
        if meta.get("marks") and any("phases" in r for r in rows):
            ph = next(r["phases"] for r in rows if "phases" in r)
            md.append("Per phase, PSNR dB / R mean:")
            md.append("")
            md.append("| policy | " + " | ".join(f"blocks {lo}-{hi - 1}" for lo, hi, _, _ in ph) + " |")
            md.append("|" + "---|" * (len(ph) + 1))
            for r in rows:
                if "phases" in r:
                    md.append(f"| {r['policy']} | " + " | ".join(f"{fmt(p, 1)} / {fmt(x, 2)}" for _, _, p, x in r["phases"]) + " |")
            md.append("")
        # Targets of issue 5 for the improved policy, where the scenario has them.
        if meta.get("targets"):
            fixed = [r for r in rows if r["policy"].startswith("fixed-") and not r["policy"].endswith("uniform")]
            none = next((r for r in rows if r["policy"] == "none"), None)
            best_fixed = bool(fixed)
            for r in rows:
                if not r["policy"].startswith("adaptive"):
                    continue
                checks = []
                if "onset_L" in r:
                    v = r["onset_L"]
                    checks.append((f"L ≤ {L_TARGET_FACTOR}x uncongested within {TARGET_BLOCKS} blocks of onset",
                                   v is not None and v <= TARGET_BLOCKS, blocks_text(v) + " blocks"))
                windows = [("psnr_mean", "whole run")]
                if "psnr_uncongested" in r:
                    windows.append(("psnr_congested", "congested blocks"))
                for key, label in windows:
                    if best_fixed:
                        bf = max(fixed, key=lambda x: x[key])
                        checks.append((f"mean PSNR ({label}) ≥ best fixed R ({bf['policy']}, {bf[key]:.2f} dB)",
                                       r[key] >= bf[key], f"{r[key]:.2f} dB"))
                    if none:
                        checks.append((f"mean PSNR ({label}) ≥ no discard + {PSNR_MARGIN_DB:g} dB ({none[key] + PSNR_MARGIN_DB:.2f} dB)",
                                       r[key] >= none[key] + PSNR_MARGIN_DB, f"{r[key]:.2f} dB"))
                if "end_R0" in r:
                    v = r["end_R0"]
                    checks.append((f"R ≈ 0 within {TARGET_BLOCKS} blocks after the end",
                                   v is not None and v <= TARGET_BLOCKS, blocks_text(v) + " blocks"))
                md.append(f"Targets, **{r['policy']}**:")
                md.append("")
                for what, ok, got in checks:
                    md.append(f"- {'met' if ok else '**missed**'}: {what}: {got}")
                md.append("")
        png = gnuplot_runs(results, scen, meta, [(n, c) for n, c in runs if n in meta.get("plot", meta["policies"])], plots_dir)
        if png:
            md.append(f"![{scen}](plots/{os.path.basename(png)})")
            md.append("")
    blocks_out.close()

    with open(os.path.join(results, "summary.csv"), "w", newline="") as f:
        keys = ["scenario", "policy"] + [c[0] for c in COLUMNS[1:]]
        w = csv.writer(f)
        w.writerow(keys)
        for r in all_rows:
            w.writerow([("never" if k in r and r[k] is None else r.get(k, "")) if not isinstance(r.get(k), float)
                        else f"{r[k]:.4f}" for k in keys])
    # Condensed tables for bench/README.md: the columns a reader needs first.
    head = ["| scenario | policy | L p50 / p95 ms | queue p95 ms | PSNR mean dB | PSNR congested | PSNR worst "
            "| R mean | pre-disc % | net loss % | stalls | onset→clean | end→R≈0 |", "|" + "---|" * 13]
    for r in all_rows:
        if "L_p50" not in r:
            continue
        head.append("| " + " | ".join([
            r["scenario"], r["policy"], f"{r['L_p50']:.0f} / {r['L_p95']:.0f}", fmt(r["queue_p95"], 0),
            fmt(r["psnr_mean"], 2), fmt(r.get("psnr_congested", float("nan")), 2), fmt(r["psnr_min"], 1),
            fmt(r["R_mean"], 2), fmt(r["discard_pct"], 1), fmt(r["loss_pct"], 1), str(r["stalls"]),
            blocks_text(r["onset_clean"]) if "onset_clean" in r else "–",
            blocks_text(r["end_R0"]) if "end_R0" in r else "–"]) + " |")
    with open(os.path.join(results, "headline.md"), "w") as f:
        f.write("\n".join(head) + "\n")
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
