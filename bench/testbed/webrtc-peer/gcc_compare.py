#!/usr/bin/env python3
"""Chromium's GCC beside predrop's policies on the same RFC 8867 cases (standard library only).

    gcc_compare.py RESULTS [--clip testsrc2] [--cases rfc5.1,rfc5.2] [--gcc ext-ext-media]
                   [--policies capacity,none]

RESULTS is run-suite.sh's folder: RESULTS/<clip>/<case>/<policy>/r<n>/ with metrics.json
(bed_metrics.py: the router's captures, every flow measured alike). The Chromium runs are the
policy folder --gcc (run-suite.sh MEDIA=ext:.../ext-media.sh files them as ext-ext-media). Prints
markdown: per case, one row per sender with the means over repeats (ranges where they say so),
then the convergence time after each event, median over flows and repeats.

Chromium's own view (getStats: GCC's target, frame rate, QP, freezes) comes from the runs'
webrtc/ folders (summarize.py).
"""
import argparse
import csv
import glob
import json
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from summarize import summarize  # noqa: E402


def mean(v):
    v = [x for x in v if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.fmean(v) if v else float("nan")


def fmt(x, d=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{d}f}"


def rng(v, d=0):
    v = [x for x in v if x is not None and not math.isnan(x)]
    if not v:
        return "–"
    if len(v) == 1:
        return fmt(v[0], d)
    return f"{fmt(mean(v), d)} ({fmt(min(v), d)}–{fmt(max(v), d)})"


def runs_of(results, clip, case, policy):
    out = []
    for run in sorted(glob.glob(os.path.join(results, clip, case, policy, "r*"))):
        mp = os.path.join(run, "metrics.json")
        if os.path.exists(os.path.join(run, "complete")) and os.path.exists(mp):
            with open(mp) as f:
                out.append((Path(run), json.load(f)))
    return out


def row(runs, chromium):
    """Figures of one sender on one case, over its repeats."""
    per = []
    for run, m in runs:
        media = [f for f in m["flows"] if f["kind"] in ("media", "media-back")]
        r = {
            "recv": mean([f["recv_kbps"] for f in media]),
            "vs_target": mean([f.get("rate_vs_target") for f in media]),
            "util": m.get("utilisation", {}).get("fwd"),
            "loss": mean([f["loss_pct"] for f in media]),
            "q_mean_c": m.get("queue_mean_congested_ms"),
            "q_p95_c": m.get("queue_p95_congested_ms"),
            "q_p95": m.get("queue_p95_ms"),
            "osc": mean([f.get("oscillation") for f in media]),
            "self5": m.get("fairness", {}).get("self_ratio_5s_median"),
            "media_fair": m.get("fairness", {}).get("media_share_of_fair"),
            "tcp_fair": m.get("fairness", {}).get("tcp_share_of_fair"),
            "psnr_c": mean([f.get("psnr_congested") for f in media]),
            "R": mean([f.get("R_mean") for f in media]),
        }
        if chromium and (run / "webrtc").exists():
            s = summarize(run, 0.0, 1e9)
            pf = s["per_flow"]
            r.update({
                "gcc_target": mean([p["target_kbps"] for p in pf]),
                "fps": mean([p["encode_fps_mean"] for p in pf]),
                "cap_fps": mean([p["capture_fps_mean"] for p in pf]),
                "cpu_lim": max([p["qlr_cpu_share"] or 0 for p in pf] or [0]),
                "qp": mean([p["qp_mean"] for p in pf]),
                "freezes": mean([p["freezes"] for p in pf]),
                "freeze_s": mean([p["freeze_s"] for p in pf]),
                "cpu": (s["cpu_cores"] or {}).get("sender", 0) + (s["cpu_cores"] or {}).get("receiver", 0),
            })
        per.append(r)
    return per


def convergence(runs):
    """{event: [seconds or None per flow and repeat]} for capacity changes (joins left out)."""
    out = {}
    for _run, m in runs:
        for f in m["flows"]:
            if f["kind"] not in ("media", "media-back"):
                continue
            for c in f.get("convergence", []):
                if c["what"].startswith(("rate", "back")):
                    out.setdefault(f"{c['what']} @{round(c['t'])} s", []).append(c["s"])
    return out


def phases(runs):
    """[(start s, capacity kbit/s, [forward media rate / capacity per repeat], [median 200 ms queue
    p95 ms per repeat])] over the phases of constant forward capacity (bins.tsv of each run)."""
    out = {}
    for run, m in runs:
        # Forward media only: the phases are the forward capacity's (§5.3's reverse flow has its own).
        media = [str(f["index"]) for f in m["flows"] if f["kind"] == "media"]
        rows = list(csv.DictReader(open(run / "bins.tsv"), delimiter="\t"))
        k = 0
        while k < len(rows):
            cap = float(rows[k]["cap_fwd"])
            j = k
            while j < len(rows) and float(rows[j]["cap_fwd"]) == cap:
                j += 1
            seg = rows[k:j]
            t0 = round(float(seg[0]["t"]))
            rate = mean([sum(float(r[f"recv{i}"]) for i in media) for r in seg])
            q = [float(r["queue_p95_fwd"]) for r in seg if r["queue_p95_fwd"] != "nan"]
            e = out.setdefault((t0, cap), ([], []))
            e[0].append(rate / cap)
            e[1].append(statistics.median(q) if q else float("nan"))
            k = j
    return [(t, c, v[0], v[1]) for (t, c), v in sorted(out.items())]


def conv_cell(v):
    got = [x for x in v if x is not None]
    never = len(v) - len(got)
    if not got:
        return f"never ({never}/{len(v)})"
    cell = f"{statistics.median(got):.1f} ({min(got):.1f}–{max(got):.1f})"
    return cell + (f", never {never}/{len(v)}" if never else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--clip", default="testsrc2")
    ap.add_argument("--cases", default="rfc5.1,rfc5.2")
    ap.add_argument("--gcc", default="ext-ext-media")
    ap.add_argument("--policies", default="capacity")
    a = ap.parse_args()
    senders = [(a.gcc, "Chromium GCC", True)] + [(p, f"predrop {p}", False) for p in a.policies.split(",") if p]
    for case in a.cases.split(","):
        rows = [(label, chromium, runs_of(a.results, a.clip, case, pol)) for pol, label, chromium in senders]
        rows = [(label, chromium, runs) for label, chromium, runs in rows if runs]
        if not rows:
            continue
        print(f"\n**{case}** ({a.clip} clip; mean over repeats, range in brackets)\n")
        print("| sender | runs | recv kbit/s | rate / target | util. | loss % | queue mean cong. ms "
              "| queue p95 cong. ms | queue p95 whole run ms | osc. | self-fair 5 s | media / TCP vs fair | PSNR cong. dB | R mean "
              "| GCC target kbit/s | capture / enc. fps | QP | freezes (s) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for label, chromium, runs in rows:
            per = row(runs, chromium)
            col = lambda k, d=1: fmt(mean([p.get(k) for p in per]), d)  # noqa: E731
            print(f"| {label} | {len(per)} | {col('recv', 0)} | {col('vs_target', 2)} | {col('util', 2)} | "
                  f"{rng([p['loss'] for p in per], 2)} | {col('q_mean_c')} | {rng([p['q_p95_c'] for p in per], 0)} | "
                  f"{col('q_p95', 0)} | {col('osc', 2)} | {col('self5', 2)} | {col('media_fair', 2)} / {col('tcp_fair', 2)} | {col('psnr_c', 2)} | {col('R', 2)} | "
                  f"{col('gcc_target', 0)} | {col('cap_fps')} / {col('fps')} | {col('qp')} | "
                  f"{col('freezes')} ({col('freeze_s')}) |")
        convs = [(label, convergence(runs)) for label, _c, runs in rows]
        events = sorted({e for _l, c in convs for e in c}, key=lambda e: float(e.rsplit("@", 1)[1].split()[0]))
        if events:
            print(f"\nConvergence after each capacity change, s (median over flows and repeats, range; "
                  f"'never' = not within ±20 % of the target for 3 s before the next event):\n")
            print("| sender | " + " | ".join(events) + " |")
            print("|---|" + "---|" * len(events))
            for label, c in convs:
                print(f"| {label} | " + " | ".join(conv_cell(c.get(e, [])) if c.get(e) else "–" for e in events) + " |")
        print("\nPer phase of constant capacity: the media flows' rate out of the bottleneck / capacity, and the "
              "median over the phase's 200 ms bins of their queue p95 (ms), mean over repeats:\n")
        ph = [(label, phases(runs)) for label, _c, runs in rows]
        heads = [f"{t} s: {c:.0f} kbit/s" for t, c, _r, _q in ph[0][1]]
        print("| sender | " + " | ".join(heads) + " |")
        print("|---|" + "---|" * len(heads))
        for label, p in ph:
            print(f"| {label} | " + " | ".join(f"{fmt(mean(r), 2)}, {fmt(mean(q), 0)} ms" for _t, _c, r, q in p) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
