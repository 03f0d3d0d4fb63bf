#!/usr/bin/env python3
"""One table row per run of whep-viewer.sh on the bed (issue 22): predrop -> a Chromium viewer.

    whep_summary.py RUN_DIR... [--markdown]

Reads, per run folder (run-case.sh --media ext:whep-viewer.sh, then bed_metrics.py RUN_DIR):
metrics.json and bins.tsv (the router's view, as for every sender on the bed: rate out of the
bottleneck, rate / target, loss, queueing delay), whep-trace-0.csv (the server's block trace: R
and the capacity estimate per block), whep-viewer-0.csv (the page: per second frames decoded,
freezes, freeze time, P; the jitter buffer's delay) and whep-metrics-0.txt (/metrics: transport-cc
reports, page reports, NACK/RTX). "In congestion" = the 200 ms bins where the demand exceeds the
capacity (bins.tsv); a block is placed at the flow's first packet + stage x block length.
Only flow 0 (the cases here have one media flow).
"""
import csv
import json
import os
import statistics
import sys


def mean(v):
    v = [x for x in v if x is not None]
    return statistics.fmean(v) if v else None


def congested_at(bins):
    def f(t):
        k = int(t / 0.2)
        return 0 <= k < len(bins) and bins[k]
    return f


def metric(text, name):
    for line in text.splitlines():
        w = line.split()
        if len(w) == 2 and w[0] == name:
            return float(w[1])
    return 0.0


def summary(run):
    m = json.load(open(os.path.join(run, "metrics.json")))
    f = next(x for x in m["flows"] if x["kind"] == "media")
    with open(os.path.join(run, "bins.tsv")) as fh:
        bins = [r["congested"] == "1" for r in csv.DictReader(fh, delimiter="\t")]
    cong = congested_at(bins)
    active = f.get("active") or [0]
    t_first = active[0][0] if isinstance(active[0], list) else active[0]
    case = dict(line.rstrip("\n").split("\t", 1) for line in open(os.path.join(run, "case.env")))
    out = {"run": run, "case": case["case"], "recv_kbps": f["recv_kbps"], "vs_target": f.get("rate_vs_target"),
           "loss": f["loss_pct"], "q_mean_c": m.get("queue_mean_congested_ms"),
           "q_p95_c": m.get("queue_p95_congested_ms"), "q_p95": m.get("queue_p95_ms")}
    trace = os.path.join(run, "whep-trace-0.csv")
    rows = list(csv.DictReader(open(trace))) if os.path.exists(trace) else []
    block_s = 1.0
    R_all, R_c, est_c, L_c = [], [], [], []
    for r in rows:
        t = t_first + int(r["stage"]) * block_s
        R_all.append(float(r["rate"]))
        if cong(t):
            R_c.append(float(r["rate"]))
            if r["capacity_kbps"]:
                est_c.append(float(r["capacity_kbps"]))
    out.update(blocks=len(rows), R=mean(R_all), R_c=mean(R_c), est_c=mean(est_c),
               reported=sum(r["reported"] == "1" for r in rows))
    viewer = os.path.join(run, "whep-viewer-0.csv")
    q, st = [], []
    if os.path.exists(viewer):
        for r in csv.DictReader(open(viewer)):
            (q if r["kind"] == "quality" else st).append(r)
    qc = [r for r in q if cong(float(r["t"]))]
    out.update(seconds=len(q), P=mean([float(r["p"]) for r in q]), P_c=mean([float(r["p"]) for r in qc]),
               fps_c=mean([float(r["frames_decoded"]) for r in qc]),
               freezes=sum(int(r["freezes"]) for r in q), freeze_s=sum(int(r["freeze_ms"]) for r in q) / 1000,
               freeze_s_c=sum(int(r["freeze_ms"]) for r in qc) / 1000,
               jb_ms=mean([float(r["jitter_buffer_ms"]) for r in st if r["jitter_buffer_ms"]]),
               decoded=int(st[-1]["framesDecoded"]) if st else 0,
               lost=int(st[-1]["packetsLost"]) if st else 0, nacks=int(st[-1]["nackCount"]) if st else 0)
    mt = os.path.join(run, "whep-metrics-0.txt")
    text = open(mt).read() if os.path.exists(mt) else ""
    out.update(twcc_reports=metric(text, "predrop_webrtc_twcc_reports_total"),
               page_reports=metric(text, "predrop_webrtc_page_reports_total"),
               nacked=metric(text, "predrop_webrtc_nacked_packets_total"),
               rtx=metric(text, "predrop_webrtc_rtx_packets_total"),
               rtx_capped=metric(text, "predrop_webrtc_rtx_capped_total"))
    meta = os.path.join(run, "whep-viewer-0.json")
    if os.path.exists(meta):
        out["setup_s"] = json.load(open(meta))["timings"].get("first_frame")
    return out


def fmt(v, d=1):
    return "–" if v is None else f"{v:.{d}f}"


def main():
    runs = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not runs:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    rows = [summary(r) for r in runs]
    if "--markdown" not in sys.argv:
        for r in rows:
            print(json.dumps(r))
        return
    print("| case | recv kbit/s | rate / target | loss % | queue mean / p95 in congestion ms | R mean (in congestion) | "
          "estimate in congestion kbit/s | decoded fps in congestion | freezes / s frozen (in congestion) | P (in congestion) | "
          "jitter buffer ms | NACKed / RTX sent / capped | set-up s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {fmt(r['recv_kbps'], 0)} | {fmt(r['vs_target'], 2)} | {fmt(r['loss'], 2)} | "
              f"{fmt(r['q_mean_c'], 0)} / {fmt(r['q_p95_c'], 0)} | {fmt(r['R'], 2)} ({fmt(r['R_c'], 2)}) | "
              f"{fmt(r['est_c'], 0)} | {fmt(r['fps_c'])} | {r['freezes']} / {fmt(r['freeze_s'])} ({fmt(r['freeze_s_c'])}) | "
              f"{fmt(r['P'], 2)} ({fmt(r['P_c'], 2)}) | {fmt(r['jb_ms'], 0)} | "
              f"{r['nacked']:.0f} / {r['rtx']:.0f} / {r['rtx_capped']:.0f} | {fmt(r.get('setup_s'))} |")


if __name__ == "__main__":
    main()
