#!/usr/bin/env python3
"""Table of capacity.sh's runs: per number of calls, the worst call's frame rates and drops.

    capacity.py RUN_DIR... [--from S]

A call passes when its sender encodes and its receiver decodes at >= 29 fps on the mean (after
the first 5 s), the sender never reports qualityLimitationReason "cpu" and the receiver drops no
frames. Standard library only.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from summarize import summarize  # noqa: E402

MIN_FPS = 29.0
# Samples from this many seconds on (after GCC's start-up); ext runs count from the case's t0,
# which is ~3-7 s before the calls connect.
T_FROM = float(sys.argv[sys.argv.index("--from") + 1]) if "--from" in sys.argv else 5.0


def passes(p):
    return ((p["encode_fps_mean"] or 0) >= MIN_FPS and (p["decode_fps_mean"] or 0) >= MIN_FPS
            and not p["qlr_cpu_share"] and not p["frames_dropped"])


def main(runs):
    rows = []
    for run in runs:
        run = Path(run)
        if not (run / "meta.json").exists() and not (run / "webrtc").exists():
            continue
        s = summarize(run, T_FROM, 1e9)
        flows = s["per_flow"]
        load = (run / "load.txt").read_text().split()[0] if (run / "load.txt").exists() else "–"
        cpu = s["cpu_cores"] or {}
        rows.append((s["flows"], run.name, load, flows, cpu))
    rows.sort(key=lambda r: (r[0], r[1]))
    print("| calls | run | load avg before | worst enc fps (mean) | worst dec fps (mean) | worst enc fps p5 "
          "| frames dropped | qlr cpu share (max) | CPU cores snd + rcv | calls passing |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, name, load, flows, cpu in rows:
        enc = min((p["encode_fps_mean"] or 0) for p in flows)
        dec = min((p["decode_fps_mean"] or 0) for p in flows)
        p5 = min((p["encode_fps_p5"] or 0) for p in flows)
        dropped = sum(p["frames_dropped"] or 0 for p in flows)
        cpu_share = max((p["qlr_cpu_share"] or 0) for p in flows)
        ok = sum(1 for p in flows if passes(p))
        cores = (cpu.get("sender") or 0) + (cpu.get("receiver") or 0)
        print(f"| {n} | {name} | {load} | {enc:.1f} | {dec:.1f} | {p5:.1f} | {dropped:.0f} | {cpu_share:.2f} "
              f"| {cores:.2f} | {ok}/{len(flows)} |")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--from" in args:
        i = args.index("--from")
        del args[i:i + 2]
    sys.exit(main(args))
