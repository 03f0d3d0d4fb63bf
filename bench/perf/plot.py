#!/usr/bin/env python3
"""Plots the egress bench's CSV rows: packets per CPU-second against sessions (one line per
suite and server mode, the machine's protect + sendmmsg series of the same run dashed), and
packets per wall-second against worker loops at saturation.

    plot.py OUT_DIR EGRESS_CSV [WORKERS_CSV]

Rows are those predrop_egress_bench --csv appends (no header):
sender,suite,mode,sessions,seconds,pps,cpu_s,per_core,protect_1,protect_n,sendmmsg,series,
series_meas,late_stages,stages,max_lag_us,drops. Several rows of one (sender, suite, mode,
sessions) are repeats: the plot shows their median. Standard library and gnuplot only.
"""
import collections
import csv
import os
import statistics
import subprocess
import sys

FIELDS = ["sender", "suite", "mode", "sessions", "seconds", "pps", "cpu_s", "per_core",
          "protect_1", "protect_n", "sendmmsg", "series", "series_meas", "late_stages",
          "stages", "max_lag_us", "drops"]
SUITE_SHORT = {"AES_CM_128_HMAC_SHA1_80": "AES-CM-80", "AEAD_AES_128_GCM": "GCM", "none": "plain"}


def read_rows(path):
    with open(path, newline="") as f:
        return [dict(zip(FIELDS, r)) for r in csv.reader(f) if r and r[0] != "sender"]


def workers_of(mode):
    for part in mode.split("+"):
        if part.startswith("w") and part[1:].isdigit():
            return int(part[1:])
    return 0


def label_of(row):
    parts = [p for p in row["mode"].split("+") if not (p.startswith("w") and p[1:].isdigit())]
    return f'{row["sender"]} {SUITE_SHORT.get(row["suite"], row["suite"])} {"+".join(parts)}'


def median_by(rows, key):
    groups = collections.defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    return groups


def plot_per_core(rows, out_png):
    series = median_by([r for r in rows if r["sender"] == "predrop" and "paced" in r["mode"]],
                       lambda r: (label_of(r), int(r["sessions"])))
    lines = collections.defaultdict(list)
    limits = collections.defaultdict(list)
    for (label, sessions), group in sorted(series.items()):
        lines[label].append((sessions, statistics.median(float(r["per_core"]) for r in group)))
        suite = label.split()[1]
        crypto = label.rsplit("+", 1)[-1]
        limits[f"series {suite} {crypto}"].append(
            (sessions, statistics.median(float(r["series"]) for r in group)))
    blocks, plots = [], []
    for i, (label, points) in enumerate(sorted(lines.items())):
        blocks.append(f"$d{i} << EOD\n" + "\n".join(f"{s} {v / 1000:.1f}" for s, v in points)
                      + "\nEOD")
        plots.append(f'$d{i} with linespoints lw 2 title "{label}"')
    for j, (label, points) in enumerate(sorted(limits.items())):
        # One machine figure per session count: the median of the rows' own measurements.
        by_sessions = collections.defaultdict(list)
        for sessions, value in points:
            by_sessions[sessions].append(value)
        points = [(s, statistics.median(v)) for s, v in sorted(by_sessions.items())]
        blocks.append(f"$l{j} << EOD\n" + "\n".join(f"{s} {v / 1000:.1f}" for s, v in points)
                      + "\nEOD")
        plots.append(f'$l{j} with lines dt 2 lw 1 title "{label} (machine)"')
    if not plots:
        return False
    script = "\n".join(blocks) + f"""
set terminal pngcairo size 1000,600 font ",10"
set output "{out_png}"
set title "Egress per core: packets per CPU-second against sessions (1 Mbit/s each)"
set xlabel "sessions on one worker"
set ylabel "k packets per CPU-second"
set logscale x
set key outside right
set grid
plot {", ".join(plots)}
"""
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    return True


def plot_workers(rows, out_png):
    groups = median_by([r for r in rows if r["sender"] == "predrop" and workers_of(r["mode"]) > 0],
                       lambda r: (f'{SUITE_SHORT.get(r["suite"], r["suite"])} '
                                  f'{r["sessions"]} sessions', workers_of(r["mode"])))
    lines = collections.defaultdict(list)
    for (label, workers), group in sorted(groups.items()):
        lines[label].append((workers, statistics.median(float(r["pps"]) for r in group)))
    if not lines:
        return False
    blocks, plots = [], []
    for i, (label, points) in enumerate(sorted(lines.items())):
        blocks.append(f"$d{i} << EOD\n" + "\n".join(f"{w} {v / 1000:.1f}" for w, v in points)
                      + "\nEOD")
        plots.append(f'$d{i} with linespoints lw 2 title "{label}"')
        one = dict(points).get(1)
        if one:  # what N workers would send if each sent what one does
            blocks.append(f"$i{i} << EOD\n" + "\n".join(f"{w} {w * one / 1000:.1f}"
                                                          for w, _ in points) + "\nEOD")
            plots.append(f'$i{i} with lines dt 2 lw 1 title "{label}: N x one worker"')
    script = "\n".join(blocks) + f"""
set terminal pngcairo size 800,500 font ",10"
set yrange [0:*]
set output "{out_png}"
set title "Worker loops: packets sent per second (wall clock)"
set xlabel "worker loops"
set ylabel "k packets per second"
set xtics 1
set key left top
set grid
plot {", ".join(plots)}
"""
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    return True


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rows = read_rows(sys.argv[2])
    if plot_per_core(rows, os.path.join(out, "egress-per-core.png")):
        print(f"wrote {out}/egress-per-core.png")
    if len(sys.argv) > 3:
        if plot_workers(read_rows(sys.argv[3]), os.path.join(out, "workers.png")):
            print(f"wrote {out}/workers.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
