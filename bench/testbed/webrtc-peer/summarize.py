#!/usr/bin/env python3
"""Per-flow summary of one or more call.mjs runs (sender.csv, receiver.csv, meta.json).

    summarize.py RUN_DIR... [--from S] [--to S] [--json]

Per flow, over the samples with FROM <= t < TO (default: the whole run after the first 5 s, the
start-up GCC needs to reach the cap): sending rate as GCC's encoder produced it and as the
receiver got it, GCC's target and available outgoing bitrate, encoded / decoded frame rates, frames
dropped, freezes, the quality limitation reason seen (and how often it was 'cpu'), the sender's RTT,
and the browsers' CPU use. Standard library only.
"""
import csv
import json
import statistics
import sys
from pathlib import Path


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(row, key):
    v = row.get(key, "")
    try:
        return float(v)
    except ValueError:
        return None


def values(rows, key):
    return [v for v in (num(r, key) for r in rows) if v is not None]


def mean(xs):
    return statistics.fmean(xs) if xs else None


def pct(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def read_tbf(run, t0):
    """The bottleneck's 100 ms samples (run-call.sh's tbf.log) as dicts with t relative to t0."""
    path = run / "tbf.log"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        epoch, _, js = line.partition(" ")
        try:
            q = json.loads(js)[0]
            out.append({"t": float(epoch) - t0, "rate_bps": q["options"]["rate"] * 8, "bytes": q["bytes"],
                        "packets": q["packets"], "drops": q["drops"], "backlog": q["backlog"]})
        except (ValueError, IndexError, KeyError):
            continue
    return out


def bottleneck(samples, t_from, t_to):
    """Rate forwarded, drops and the queueing delay (backlog / rate) over [t_from, t_to)."""
    w = [x for x in samples if t_from <= x["t"] < t_to]
    if len(w) < 2:
        return None
    dt = w[-1]["t"] - w[0]["t"]
    fwd = w[-1]["packets"] - w[0]["packets"]
    drops = w[-1]["drops"] - w[0]["drops"]
    qd = [x["backlog"] * 8 / x["rate_bps"] * 1000 for x in w]
    return {
        "forwarded_kbps": (w[-1]["bytes"] - w[0]["bytes"]) * 8 / dt / 1000 if dt > 0 else None,
        "capacity_kbps_mean": mean([x["rate_bps"] / 1000 for x in w]),
        "drop_pct": 100 * drops / (fwd + drops) if fwd + drops else 0.0,
        "queue_ms_mean": mean(qd), "queue_ms_p50": pct(qd, 50), "queue_ms_p95": pct(qd, 95),
        "queue_ms_max": max(qd),
    }


def load_run(run):
    """(sender rows, receiver rows, CPU cores {sender, receiver}, t0 epoch) of a call.mjs folder
    (sender.csv, receiver.csv, meta.json) or of a run-case.sh folder with external Chromium
    media (webrtc/flow-I/seg-K/ from side.mjs). Every row gets 'seg' (the call's segment)."""
    if (run / "meta.json").exists():
        meta = json.loads((run / "meta.json").read_text())
        snd, rcv = read_csv(run / "sender.csv"), read_csv(run / "receiver.csv")
        for r in snd + rcv:
            r["seg"] = "0"
        return snd, rcv, meta.get("cpu_cores"), meta.get("t0_epoch", 0)
    snd, rcv, cpu = [], [], {"sender": 0.0, "receiver": 0.0}
    t0 = float((run / "t0").read_text()) if (run / "t0").exists() else 0.0
    for seg in sorted(run.glob("webrtc/flow-*/seg-*")):
        for role, rows in (("sender", snd), ("receiver", rcv)):
            if (seg / f"{role}.csv").exists():
                part = read_csv(seg / f"{role}.csv")
                for r in part:
                    r["seg"] = seg.name
                rows.extend(part)
            if (seg / f"meta-{role}.json").exists():
                cpu[role] += json.loads((seg / f"meta-{role}.json").read_text()).get("cpu_cores") or 0.0
    return snd, rcv, cpu, t0


def counter_delta(rows, key):
    """Growth of a cumulative counter over ROWS, summed per call segment (counters restart)."""
    total = 0.0
    for seg in {r["seg"] for r in rows}:
        v = [x for x in (num(r, key) for r in rows if r["seg"] == seg) if x is not None]
        if v:
            total += v[-1] - v[0]
    return total


def summarize(run, t_from, t_to):
    snd, rcv, cpu, t0 = load_run(run)
    flows = sorted({r["flow"] for r in snd} | {r["flow"] for r in rcv}, key=int)
    out = {"run": str(run), "flows": len(flows), "cpu_cores": cpu, "per_flow": [],
           "bottleneck": bottleneck(read_tbf(run, t0), t_from, t_to)}
    for f in flows:
        s = [r for r in snd if r["flow"] == f and t_from <= float(r["t"]) < t_to]
        r = [x for x in rcv if x["flow"] == f and t_from <= float(x["t"]) < t_to]
        all_r = [x for x in rcv if x["flow"] == f]
        reasons = [x["quality_limitation_reason"] for x in s if x["quality_limitation_reason"]]
        last = all_r[-1] if all_r else {}
        lastw = r[-1] if r else {}
        out["per_flow"].append({
            "flow": int(f),
            "samples": len(s),
            "send_kbps": mean(values(s, "send_kbps")),
            "recv_kbps": mean(values(r, "recv_kbps")),
            "target_kbps": mean(values(s, "target_kbps")),
            "available_outgoing_kbps": mean(values(s, "available_outgoing_kbps")),
            "capture_fps_mean": mean(values(s, "capture_fps")),
            "encode_fps_mean": mean(values(s, "encode_fps")),
            "encode_fps_p5": pct(values(s, "encode_fps"), 5),
            "decode_fps_mean": mean(values(r, "decode_fps")),
            "decode_fps_p5": pct(values(r, "decode_fps"), 5),
            "qp_mean": mean(values(s, "qp_mean")),
            "frames_dropped": counter_delta(r, "frames_dropped"),
            "freezes": counter_delta(r, "freeze_count"),
            "freeze_s": counter_delta(r, "total_freezes_duration"),
            "packets_lost": counter_delta(r, "packets_lost"),
            "jitter_buffer_ms": mean(values(r, "jitter_buffer_delay_ms")),
            "qlr_cpu_share": reasons.count("cpu") / len(reasons) if reasons else None,
            "qlr_seen": sorted(set(reasons)),
            "rtt_ms_p50": pct(values(s, "rtt_ms"), 50),
            "frames_decoded_total": num(last, "frames_decoded"),
            "size": f"{lastw.get('frame_width', '')}x{lastw.get('frame_height', '')}",
            "codec": last.get("codec", ""),
        })
    return out


def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def main(argv):
    t_from, t_to, as_json, runs = 5.0, 1e9, False, []
    i = 0
    while i < len(argv):
        if argv[i] == "--from":
            t_from = float(argv[i + 1]); i += 2
        elif argv[i] == "--to":
            t_to = float(argv[i + 1]); i += 2
        elif argv[i] == "--json":
            as_json = True; i += 1
        else:
            runs.append(Path(argv[i])); i += 1
    if not runs:
        print(__doc__, file=sys.stderr)
        return 2
    sums = [summarize(run, t_from, t_to) for run in runs]
    if as_json:
        print(json.dumps(sums, indent=2))
        return 0
    print("| run | flow | send kbit/s | recv kbit/s | GCC target | enc fps mean / p5 | dec fps mean / p5 "
          "| dropped | freezes | lost pkts | qlr (cpu share) | size | CPU snd / rcv cores |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in sums:
        cpu = s["cpu_cores"] or {}
        for i, p in enumerate(s["per_flow"]):
            print(f"| {Path(s['run']).name if i == 0 else ''} | {p['flow']} | {fmt(p['send_kbps'], 0)} | "
                  f"{fmt(p['recv_kbps'], 0)} | {fmt(p['target_kbps'], 0)} | "
                  f"{fmt(p['encode_fps_mean'])} / {fmt(p['encode_fps_p5'])} | "
                  f"{fmt(p['decode_fps_mean'])} / {fmt(p['decode_fps_p5'])} | {fmt(p['frames_dropped'], 0)} | "
                  f"{fmt(p['freezes'], 0)} | {fmt(p['packets_lost'], 0)} | {','.join(p['qlr_seen'])} "
                  f"({fmt(p['qlr_cpu_share'], 2)}) | {p['size']} | "
                  f"{fmt(cpu.get('sender'), 2) + ' / ' + fmt(cpu.get('receiver'), 2) if i == 0 else ''} |")
    print()
    print("| run | bottleneck forwarded kbit/s | capacity kbit/s (mean) | tbf drops % | queue ms mean / p50 / p95 / max |")
    print("|---|---|---|---|---|")
    for s in sums:
        b = s["bottleneck"]
        if b:
            print(f"| {Path(s['run']).name} | {fmt(b['forwarded_kbps'], 0)} | {fmt(b['capacity_kbps_mean'], 0)} | "
                  f"{fmt(b['drop_pct'], 2)} | {fmt(b['queue_ms_mean'])} / {fmt(b['queue_ms_p50'])} / "
                  f"{fmt(b['queue_ms_p95'])} / {fmt(b['queue_ms_max'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
