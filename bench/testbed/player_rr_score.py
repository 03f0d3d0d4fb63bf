#!/usr/bin/env python3
"""Scores one run of bench/testbed/run-player-rr.sh offline.

  player_rr_score.py RUN_DIR FPS CONGESTED_FROM_BLOCK

Reads RUN_DIR/psnr.log (ffmpeg's psnr filter stats_file: one line per frame of what ffmpeg
received, re-timed onto the reference's frame grid with the last shown picture repeated, against
the reference), RUN_DIR/probe.txt (delay probe), RUN_DIR/qdisc.txt (tbf counters) and
RUN_DIR/trace.csv (the server's R per block, when reported). Prints one JSON object with per-block
PSNR (the PSNR of the mean MSE of the block's frames, 1 s blocks, capped at 60 dB as the
measuring client does), and the run's loss, delay and PSNR summaries.
"""
import csv
import json
import math
import os
import re
import sys


def psnr_of(mse):
    return 60.0 if mse <= 0 else min(60.0, 10.0 * math.log10(255.0 * 255.0 / mse))


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    run, fps, congested = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mses = []
    with open(os.path.join(run, "psnr.log")) as f:
        for line in f:
            m = re.search(r"mse_avg:([0-9.]+|inf)", line)
            if m:
                mses.append(float(m.group(1)))
    blocks = []
    for b in range(len(mses) // fps):
        chunk = mses[b * fps:(b + 1) * fps]
        blocks.append(psnr_of(sum(chunk) / len(chunk)))
    rtts, late, lost_probes, first = [], [], 0, None
    with open(os.path.join(run, "probe.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 2:
                continue
            t = float(parts[0])
            first = t if first is None else first
            if parts[1] == "lost":
                lost_probes += 1
                continue
            rtts.append(float(parts[1]))
            # Probes from 10 s after the bottleneck appeared (the RR loop has reacted by then).
            if t - first >= congested + 10:
                late.append(float(parts[1]))
    q = open(os.path.join(run, "qdisc.txt")).read()
    sent = re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", q)
    fwd, dropped = (int(sent.group(1)), int(sent.group(2))) if sent else (0, 0)
    rates = {}
    trace = os.path.join(run, "trace.csv")
    if os.path.exists(trace):
        with open(trace) as f:
            for row in csv.DictReader(f):
                try:
                    rates[int(row["stage"])] = float(row["rate"])
                except (KeyError, ValueError):
                    pass
    # The server's view of ffmpeg's RRs, scraped from /metrics once a second.
    rr_rtts, rr_count, rr_rejected = [], 0, 0
    metrics = os.path.join(run, "metrics.txt")
    if os.path.exists(metrics):
        last = None
        for line in open(metrics):
            m = re.match(r"predrop_session_rr_rtt_seconds\{[^}]*\} ([-0-9.e]+)", line)
            if m and float(m.group(1)) >= 0 and m.group(1) != last:
                rr_rtts.append(1000.0 * float(m.group(1)))
                last = m.group(1)
            m = re.match(r"predrop_session_receiver_reports_total\{[^}]*\} (\d+)", line)
            if m:
                rr_count = max(rr_count, int(m.group(1)))
            m = re.match(r"predrop_session_rr_rejected_total\{[^}]*\} (\d+)", line)
            if m:
                rr_rejected = max(rr_rejected, int(m.group(1)))
    cong = blocks[congested:]
    out = {
        "blocks": len(blocks),
        "psnr_per_block": [round(x, 2) for x in blocks],
        "psnr_mean": round(sum(blocks) / len(blocks), 2) if blocks else None,
        "psnr_congested_mean": round(sum(cong) / len(cong), 2) if cong else None,
        "tbf_forwarded": fwd,
        "tbf_dropped": dropped,
        "loss_pct": round(100.0 * dropped / (fwd + dropped), 2) if fwd + dropped else None,
        "probe_rtt_ms_median": round(percentile(rtts, 50), 1),
        "probe_rtt_ms_p95": round(percentile(rtts, 95), 1),
        "probe_rtt_ms_median_late": round(percentile(late, 50), 1),
        "probe_rtt_ms_p95_late": round(percentile(late, 95), 1),
        "probe_lost": lost_probes,
        "ffmpeg_rrs": rr_count,
        "ffmpeg_rrs_refused": rr_rejected,
        "rr_rtt_ms_median": round(percentile(rr_rtts, 50), 1),
        "rr_rtt_ms_max": round(max(rr_rtts), 1) if rr_rtts else None,
        "rate_mean_congested": round(sum(v for k, v in rates.items() if k >= congested) /
                                     max(1, sum(1 for k in rates if k >= congested)), 3)
        if rates else None,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
