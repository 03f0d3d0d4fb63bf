#!/usr/bin/python3
"""Where the time of one stage goes, from a DDP run's CSVs (docs/ddl-torch.md "Where a stage's
time goes").

    ddl_timeline.py RUN_DIR [RUN_DIR ...] [--skip 10] [--rank R]

RUN_DIR holds rank-<r>.csv (python/predrop/fmnist_job.py; every time column is CLOCK_MONOTONIC in
us, which the namespaces of the bed share) and, for relay runs, relay-trace.csv (the relay's
up_first_us, up_last_us, closed_us, sent_done_us per stage and rank). For each rank it prints the
median and the 90th percentile of each segment of a stage, in ms, over the stages after --skip
(start-up) that ran no evaluation (their iteration includes the test pass). A gloo run shows the
all-reduce's segments only when it ran with the timing hook (fmnist_job --timeline 1).
"""

import argparse
import csv
import os
import statistics
import sys

# (name, from column, to column, where the column is: "r" rank row, "x" relay row, "n" the rank's
# next row). Segments whose ends are missing in a run are left out.
RELAY = [
    ("forward (iteration start to backward())", "r:iter_us", "r:backward_us"),
    ("compute: iteration start to hook", "r:iter_us", "r:hook_us"),
    ("hook: bucket copy, submit call", "r:hook_us", "r:submit_us"),
    ("peer thread wakes (submit to begin)", "r:submit_us", "r:begin_us"),
    ("uplink paced out (begin to last chunk sent)", "r:begin_us", "r:uplink_sent_us"),
    ("uplink on the wire (last sent to relay has it)", "r:uplink_sent_us", "x:up_last_us"),
    ("relay waits for the other ranks", "x:up_last_us", "x:closed_us"),
    ("relay: close to last aggregate packet sent", "x:closed_us", "x:sent_done_us"),
    ("downlink: relay close to first chunk here", "x:closed_us", "r:first_chunk_us"),
    ("downlink: first to last chunk here", "r:first_chunk_us", "r:last_chunk_us"),
    ("peer: last chunk to close", "r:last_chunk_us", "r:closed_us"),
    ("peer: fill, copy, GIL to the callback", "r:closed_us", "r:callback_us"),
    # Completing the futures wakes the training thread, which takes the GIL back before the
    # callback has noted done_us; so the segment ends where backward() returns.
    ("callback: futures completed, backward() returns", "r:callback_us", "r:backward_end_us"),
    ("optimiser step", "r:backward_end_us", "r:step_end_us"),
    ("probe loss, report, CSV (to the next iteration)", "r:step_end_us", "n:iter_us"),
    ("= hook to backward() returns (communication)", "r:hook_us", "r:backward_end_us"),
    ("= whole stage (iteration to iteration)", "r:iter_us", "n:iter_us"),
]
GLOO = [
    ("forward (iteration start to backward())", "r:iter_us", "r:backward_us"),
    ("compute: iteration start to hook", "r:iter_us", "r:hook_us"),
    ("all-reduce (hook to its future done)", "r:hook_us", "r:done_us"),
    ("DDP: futures done to backward() returns", "r:done_us", "r:backward_end_us"),
    ("optimiser step", "r:backward_end_us", "r:step_end_us"),
    ("probe loss, CSV (to the next iteration)", "r:step_end_us", "n:iter_us"),
    ("= hook to backward() returns (communication)", "r:hook_us", "r:backward_end_us"),
    ("= backward() (compute + all-reduce)", "r:backward_us", "r:backward_end_us"),
    ("= whole stage (iteration to iteration)", "r:iter_us", "n:iter_us"),
]


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(row, key):
    v = row.get(key, "") if row else ""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if x > 0 else None


def segments(d, rank, skip):
    rows = read(os.path.join(d, f"rank-{rank}.csv"))
    by_stage = {int(r["stage"]): r for r in rows}
    relay = {}
    p = os.path.join(d, "relay-trace.csv")
    if os.path.exists(p):
        for x in read(p):
            if int(x["rank"]) == rank:
                relay[int(x["stage"])] = x
    is_relay = any(num(r, "submit_us") for r in rows)
    table = RELAY if is_relay else GLOO
    out = {name: [] for name, _, _ in table}
    for s, r in by_stage.items():
        if s < skip or r.get("test_acc"):
            continue
        src = {"r": r, "x": relay.get(s), "n": by_stage.get(s + 1)}
        for name, a, b in table:
            va = num(src[a[0]], a[2:])
            vb = num(src[b[0]], b[2:])
            if va is not None and vb is not None:
                out[name].append((vb - va) / 1000.0)
    return table, out


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--skip", type=int, default=10)
    ap.add_argument("--rank", type=int, default=None)
    a = ap.parse_args()
    for d in a.dirs:
        ranks = sorted(int(f[5:-4]) for f in os.listdir(d)
                       if f.startswith("rank-") and f.endswith(".csv"))
        for rank in ranks if a.rank is None else [a.rank]:
            table, out = segments(d, rank, a.skip)
            print(f"\n{d} rank {rank}")
            print(f"| segment | median ms | p90 ms | stages |\n|---|---|---|---|")
            for name, _, _ in table:
                v = out[name]
                if v:
                    print(f"| {name} | {statistics.median(v):.2f} | {pct(v, 0.9):.2f} | "
                          f"{len(v)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
