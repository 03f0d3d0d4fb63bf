#!/usr/bin/env python3
"""The RFC 8867 suite's tables and verdicts (standard library only).

    bed_suite.py RESULTS

RESULTS/<clip>/<case>/<policy>/r<n>/ are run-case.sh folders (run-suite.sh fills them). Runs with
`complete` but without metrics.json are analysed first (bed_metrics.py). Writes
RESULTS/summary.csv (one row per clip, case, policy: means over repeats, with the repeats'
range for PSNR), RESULTS/summary.md (one table per case and clip) and RESULTS/verdicts.md (issue
21 item 5's targets, computed for every policy that is not a fixed R).

Figures are means over the media flows of a run (PSNR, R, loss, convergence: worst flow where
it says "worst"), then over repeats. Definitions: bench/README.md "Metrics".
"""
import csv
import glob
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed_metrics  # noqa: E402

# Issue 21 item 5's targets.
PSNR_CONGESTED_MARGIN_DB = 0.3
QUEUE_P95_MAX_MS = 30.0
BACK_TO_R0_BLOCKS = 3
SELF_WITHIN_PCT = 90.0   # share of 5 s windows whose max/min throughput ratio is <= 1.25
PSNR_SPREAD_DB = 2.0
TCP_SHARE = (0.5, 1.5)
TCP_NOT_STARVED = 0.5    # TCP's throughput >= this x its fair share
SHORT_TCP_QUEUE_MS = 100.0
TCP_CASES = ("rfc5.6", "rfc5.6b", "rfc5.6z")


def mean(v):
    v = [x for x in v if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.fmean(v) if v else float("nan")


def fmt(x, d=1):
    if x is None:
        return "never"
    if isinstance(x, str):
        return x
    if isinstance(x, float) and math.isnan(x):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{d}f}"


def run_row(m):
    """One run's figures (metrics.json) as flat numbers."""
    media = [f for f in m["flows"] if f["kind"] in ("media", "media-back")]
    tcp = [f for f in m["flows"] if f["kind"] == "tcp"]
    conv = [c["s"] for f in media for c in f.get("convergence", [])]
    back = [b["blocks"] for f in media for b in f.get("back_to_R0", [])]
    psnrs = [f.get("psnr_mean", float("nan")) for f in media]
    fair = m.get("fairness", {})
    row = {
        "psnr": mean(psnrs),
        "psnr_cong": mean([f.get("psnr_congested", float("nan")) for f in media]),
        "psnr_spread": (max(psnrs) - min(psnrs)) if len([p for p in psnrs if not math.isnan(p)]) >= 2 else float("nan"),
        "R": mean([f.get("R_mean", float("nan")) for f in media]),
        "loss": mean([f["loss_pct"] for f in media]),
        "recv_kbps": mean([f["recv_kbps"] for f in media]),
        "rate_vs_target": mean([f.get("rate_vs_target", float("nan")) for f in media]),
        "queue_p95": m.get("queue_p95_ms", float("nan")),
        "queue_p95_cong": m.get("queue_p95_congested_ms", float("nan")),
        "queue_mean_cong": m.get("queue_mean_congested_ms", float("nan")),
        "util": m.get("utilisation", {}).get("fwd", float("nan")),
        "conv_mean": mean([c for c in conv if c is not None]),
        "conv_worst": (None if any(c is None for c in conv) else max(conv)) if conv else float("nan"),
        "conv_never": sum(1 for c in conv if c is None),
        "conv_n": len(conv),
        "oscillation": mean([f.get("oscillation", float("nan")) for f in media]),
        "back_R0_worst": (None if any(b is None for b in back) else max(back)) if back else float("nan"),
        "self_within_5s": fair.get("self_within_5s_pct", float("nan")),
        "self_ratio_1s": fair.get("self_ratio_1s_median", float("nan")),
        "self_ratio_5s": fair.get("self_ratio_5s_median", float("nan")),
        "self_ratio_20s": fair.get("self_ratio_20s_median", float("nan")),
        "media_share": fair.get("media_share_of_fair", float("nan")),
        "tcp_share": fair.get("tcp_share_of_fair", float("nan")),
        "media_tcp_5s": fair.get("media_tcp_ratio_5s_median", float("nan")),
        "tcp_kbps": mean([f["recv_kbps"] for f in tcp]),
    }
    return row


WORST_KEYS = ("conv_worst", "back_R0_worst")


def combine(rows):
    """Means over repeats; the worst of the worst-case figures; PSNR range."""
    out = {}
    for k in rows[0]:
        vals = [r[k] for r in rows]
        if k in WORST_KEYS:
            if any(v is None for v in vals):
                out[k] = None
            else:
                fin = [v for v in vals if not (isinstance(v, float) and math.isnan(v))]
                out[k] = max(fin) if fin else float("nan")
        else:
            out[k] = mean(vals)
    ps = [r["psnr"] for r in rows if not math.isnan(r["psnr"])]
    out["psnr_min_rep"] = min(ps) if ps else float("nan")
    out["psnr_max_rep"] = max(ps) if ps else float("nan")
    out["repeats"] = len(rows)
    return out


def collect(results):
    table = {}  # (clip, case, policy) -> combined row
    for run in sorted(glob.glob(os.path.join(results, "*", "*", "*", "r*"))):
        if not os.path.isdir(run) or not os.path.exists(os.path.join(run, "complete")):
            continue
        clip, case, policy = run.split(os.sep)[-4:-1]
        mpath = os.path.join(run, "metrics.json")
        if not os.path.exists(mpath):
            clipfile = os.path.join(results, f"clip-{clip}.mp4")
            prof = bed_metrics.clip_profile(clipfile) if os.path.exists(clipfile) else None
            try:
                bed_metrics.analyse(run, prof, make_plot=True)
            except Exception as e:  # a broken capture must not stop the tables
                print(f"bed_suite: {run}: {e}", file=sys.stderr)
                continue
        with open(mpath) as f:
            m = json.load(f)
        table.setdefault((clip, case, policy), []).append(run_row(m))
    return {k: combine(v) for k, v in table.items()}


COLUMNS = [
    ("psnr", "PSNR dB", 2), ("psnr_cong", "PSNR cong.", 2), ("R", "R mean", 2),
    ("loss", "loss %", 1), ("queue_p95", "queue p95 ms", 1), ("queue_p95_cong", "queue p95 cong. ms", 1),
    ("util", "util.", 2), ("conv_worst", "conv. worst s", 1), ("oscillation", "osc.", 2),
    ("back_R0_worst", "→R≈0 blocks", 0), ("self_within_5s", "self-fair 5 s %", 0),
    ("psnr_spread", "PSNR spread", 1), ("media_share", "media/fair", 2), ("tcp_share", "TCP/fair", 2),
]


def fixed_policies(policies):
    return [p for p in policies if p == "none" or p.startswith("fixed-")]


def verdicts(table, clip, case):
    """{policy: [(target, verdict text)]} for the non-fixed policies of one case."""
    rows = {p: r for (c, k, p), r in table.items() if c == clip and k == case}
    fixed = {p: r for p, r in rows.items() if p.startswith("fixed-") or p == "none"}
    # External senders (ext-*) are judged by their own figures, not against the targets.
    rows_judged = {p: r for p, r in rows.items() if not p.startswith("ext-")}
    out = {}
    best_fixed_cong = max(((r["psnr_cong"], p) for p, r in fixed.items() if not math.isnan(r["psnr_cong"])),
                          default=(float("nan"), None))
    rivals_whole = {p: r["psnr"] for p, r in rows.items()
                    if (p.startswith("fixed-") or p == "basic") and not math.isnan(r["psnr"])}
    for p, r in rows_judged.items():
        if p in fixed:
            continue
        v = []
        # 1. PSNR against the best fixed R (congested) and against every fixed R and the exact rule.
        if best_fixed_cong[1] is not None and not math.isnan(r["psnr_cong"]):
            gap = r["psnr_cong"] - best_fixed_cong[0]
            ok = gap >= -PSNR_CONGESTED_MARGIN_DB
            v.append(("congested PSNR ≥ best fixed − 0.3 dB",
                      f"{'met' if ok else '**missed**'}: {r['psnr_cong']:.2f} vs {best_fixed_cong[1]} {best_fixed_cong[0]:.2f} ({gap:+.2f})"))
        if rivals_whole and p != "basic":
            best = max(rivals_whole.items(), key=lambda kv: kv[1])
            gap = r["psnr"] - best[1]
            v.append(("whole-run PSNR ≥ every fixed R and the exact rule",
                      f"{'met' if gap >= 0 else '**missed**'}: {r['psnr']:.2f} vs {best[0]} {best[1]:.2f} ({gap:+.2f})"))
        # 2. Queue during congestion: not where a loss-based TCP shares the queue (NewReno fills
        # any drop-tail queue whatever the media flow does; §5.7 has its own bound below).
        q = r["queue_p95_cong"]
        if not math.isnan(q) and case not in TCP_CASES and case != "rfc5.7":
            v.append(("queue p95 in congestion ≤ 30 ms",
                      f"{'met' if q <= QUEUE_P95_MAX_MS else '**missed**'}: {q:.1f} ms"))
        # 3. Back to R ~ 0.
        b = r["back_R0_worst"]
        if b is None or not (isinstance(b, float) and math.isnan(b)):
            ok = b is not None and b <= BACK_TO_R0_BLOCKS
            v.append(("back to R ≈ 0 within 3 blocks", f"{'met' if ok else '**missed**'}: {fmt(b, 0)} blocks (worst)"))
        # 4. Self-fairness.
        if not math.isnan(r["self_within_5s"]):
            ok = r["self_within_5s"] >= SELF_WITHIN_PCT and (math.isnan(r["psnr_spread"]) or r["psnr_spread"] <= PSNR_SPREAD_DB)
            v.append(("self-fairness 0.8-1.25 (5 s), PSNR spread ≤ 2 dB",
                      f"{'met' if ok else '**missed**'}: {r['self_within_5s']:.0f} % of windows, median ratio {fmt(r['self_ratio_5s'], 2)}, spread {fmt(r['psnr_spread'], 1)} dB"))
        # 5. TCP.
        if case in TCP_CASES and not math.isnan(r["media_share"]):
            ok_share = TCP_SHARE[0] <= r["media_share"] <= TCP_SHARE[1]
            ok_tcp = r["tcp_share"] >= TCP_NOT_STARVED
            ref = [rows[x]["psnr_cong"] for x in ("none", "basic") if x in rows and not math.isnan(rows[x]["psnr_cong"])]
            ok_psnr = not ref or r["psnr_cong"] >= max(ref)
            v.append(("vs long TCP: share 0.5-1.5x fair, TCP not starved, PSNR ≥ none's and basic's",
                      f"{'met' if ok_share and ok_tcp and ok_psnr else '**missed**'}: media {r['media_share']:.2f}x, TCP {r['tcp_share']:.2f}x fair, PSNR {r['psnr_cong']:.2f} vs {fmt(max(ref) if ref else float('nan'), 2)}"))
        if case == "rfc5.7":
            ok = r["queue_p95_cong"] <= SHORT_TCP_QUEUE_MS and r["rate_vs_target"] >= 0.5
            v.append(("vs short TCP: no collapse, queue p95 bounded",
                      f"{'met' if ok else '**missed**'}: rate {r['rate_vs_target']:.2f}x target, queue p95 {r['queue_p95_cong']:.1f} ms (≤ {SHORT_TCP_QUEUE_MS:.0f})"))
        # 6. Against Chromium's GCC on the same bed (item 4's ext-* rows), §5.1 and §5.2.
        for g, gr in rows.items():
            if not g.startswith("ext-") or p.startswith("ext-") or case not in ("rfc5.1", "rfc5.1b", "rfc5.2"):
                continue
            cw, gw = r["conv_worst"], gr["conv_worst"]
            ok_q = r["queue_p95_cong"] <= gr["queue_p95_cong"]
            ok_c = cw is not None and (gw is None or (not math.isnan(cw) and cw <= gw))
            v.append((f"vs {g}: queue p95 and convergence no worse",
                      f"{'met' if ok_q and ok_c else '**missed**'}: queue {r['queue_p95_cong']:.1f} vs {gr['queue_p95_cong']:.1f} ms, "
                      f"convergence {fmt(cw)} vs {fmt(gw)} s"))
        out[p] = v
    return out


def main():
    results = sys.argv[1]
    table = collect(results)
    if not table:
        print("bed_suite: no complete runs under", results)
        return
    keys = sorted(table)
    with open(os.path.join(results, "summary.csv"), "w", newline="") as f:
        cols = list(next(iter(table.values())).keys())
        w = csv.writer(f)
        w.writerow(["clip", "case", "policy"] + cols)
        for k in keys:
            w.writerow(list(k) + [table[k][c] for c in cols])
    clips = sorted({k[0] for k in keys})
    cases = []
    for k in keys:
        if k[1] not in cases:
            cases.append(k[1])
    order = ["none", "fixed-10", "fixed-20", "fixed-30", "fixed-40", "fixed-50", "fixed-60", "basic", "adaptive", "capacity"]
    md = ["# RFC 8867 suite on the bed", "",
          "Means over the media flows of a run, then over repeats (n = repeats). PSNR range = the repeats' "
          "lowest and highest run mean. Definitions: bench/README.md \"Metrics\".", ""]
    vd = ["# Verdicts per target (issue 21 item 5)", ""]
    for clip in clips:
        for case in cases:
            pols = [p for (c, k, p) in keys if c == clip and k == case]
            if not pols:
                continue
            pols.sort(key=lambda p: (order.index(p) if p in order else len(order), p))
            md += [f"## {case} — clip {clip}", "",
                   "| policy | n | " + " | ".join(c[1] for c in COLUMNS) + " |",
                   "|---|---|" + "---|" * len(COLUMNS)]
            for p in pols:
                r = table[(clip, case, p)]
                name = f"**{p}**" if p in ("adaptive", "capacity") else p
                cells = [fmt(r[c[0]], c[2]) for c in COLUMNS]
                if r["repeats"] > 1:
                    cells[0] += f" ({r['psnr_min_rep']:.2f}-{r['psnr_max_rep']:.2f})"
                md.append(f"| {name} | {r['repeats']} | " + " | ".join(cells) + " |")
            md.append("")
            v = verdicts(table, clip, case)
            if v:
                vd += [f"## {case} — clip {clip}", "", "| policy | target | verdict |", "|---|---|---|"]
                for p in sorted(v, key=lambda p: (order.index(p) if p in order else len(order), p)):
                    for target, text in v[p]:
                        vd.append(f"| {p} | {target} | {text} |")
                vd.append("")
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(results, "verdicts.md"), "w") as f:
        f.write("\n".join(vd) + "\n")
    print("\n".join(md))
    print("\n".join(vd))


if __name__ == "__main__":
    main()
