#!/usr/bin/env python3
"""RFC 8868 metrics of one bed run, from the router's captures (standard library only).

    bed_metrics.py RUN_DIR [--plot] [--clip-profile FILE]

RUN_DIR is a run-case.sh folder (case.env, flows.tsv, events, starts, r0.pcap, r1.pcap, and for
predrop media flows client-<i>[-<seg>].csv). Writes RUN_DIR/metrics.json and RUN_DIR/bins.tsv
(200 ms bins), with --plot RUN_DIR/plot.png (gnuplot). Every flow is measured the same way
whatever sends it (predrop, TCP, an external peer): at the bottleneck, from its packets in and out.

What is computed (bench/README.md "Metrics" has the definitions and why):
- per flow: sending rate (into the router) and receiving rate (out of the bottleneck) in 200 ms
  bins, kbit/s at the link layer (what the tbf counts); loss at the bottleneck (packets in
  without a copy out); per-packet queueing delay = time in the router - the flow's configured
  propagation delay, mean and p95, overall and during congestion;
- the target rate of each flow per bin: the bottleneck's capacity shared by water-filling among
  the active flows, each capped at its demand (a media flow's demand is the clip's rate at that
  point of the clip, TCP's is unbounded, UDP's its rate); a flow is congested when its target is
  below its demand, the bottleneck when the demands exceed it;
- utilisation (all flows' receiving rate / capacity), convergence time after each capacity
  change and each join or leave (until the flow's 1 s sending rate stays within +-20 % of its
  target for 3 s), oscillation (std of the 1 s sending rate / target outside the 5 s after any
  event),
  throughput ratios over 1, 5 and 20 s windows between media flows (self-fairness) and between
  media and TCP;
- from the predrop client CSVs: PSNR and R per block, mean over the run and over congested
  blocks, and the blocks until R <= 0.02 (3 blocks in a row) after each end of congestion.
"""
import argparse
import bisect
import csv
import json
import math
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed_pcap  # noqa: E402

BIN_S = 0.2
OPEN_KBPS = 200000.0
RCV_NET = bed_pcap.ip_to_int("198.18.1.0")
SND_NET = bed_pcap.ip_to_int("198.18.0.0")
CONVERGE_TOL = 0.20
CONVERGE_HOLD_S = 3
STEADY_SKIP_S = 5
R_ZERO = 0.02
R_ZERO_RUN = 3
# A media flow is congested when its target is below this share of its demand.
CONGESTED_SHARE = 0.98
# Nominal media demand (kbit/s on the wire) when no clip profile is known: the bed clip.
DEFAULT_DEMAND_KBPS = 1230.0


def pct(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def mean(values):
    return statistics.fmean(values) if values else float("nan")


def read_kv(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            out[k] = v
    return out


def parse_rate_kbps(text):
    """tc rate text ("820kbit", "200mbit", "open") -> kbit/s."""
    t = text.strip().lower()
    if t == "open":
        return OPEN_KBPS
    for suffix, f in (("mbit", 1000.0), ("kbit", 1.0), ("bit", 0.001)):
        if t.endswith(suffix):
            return float(t[: -len(suffix)]) * f
    return float(t)


def read_flows(run):
    flows = []
    with open(os.path.join(run, "flows.tsv")) as f:
        for line in f:
            i, kind, start, stop, owd, back, ip, rate = line.rstrip("\n").split("\t")
            flows.append({"index": int(i), "kind": kind, "start": float(start), "stop": float(stop),
                          "owd_ms": float(owd), "back_ms": float(back), "ip": ip,
                          "rate_kbps": None if rate == "-" else float(rate)})
    return flows


def read_events(run, env):
    """Capacity schedules: {"fwd": [(t, kbps)], "back": [...]} from t = 0, actual event times."""
    sched = {"fwd": [(0.0, parse_rate_kbps(env.get("rate", "open")))], "back": [(0.0, OPEN_KBPS)]}
    path = os.path.join(run, "events")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) >= 4 and w[2] in ("rate", "back"):
                    sched["fwd" if w[2] == "rate" else "back"].append((float(w[1]), parse_rate_kbps(w[3])))
    for k in sched:
        sched[k].sort()
    # The reverse path's rate at t0 (CASE_BACK_RATE) is set before t0: it is in case.env.
    if env.get("back_rate") and env["back_rate"] != "open":
        sched["back"][0] = (0.0, parse_rate_kbps(env["back_rate"]))
    return sched


def capacity_at(sched, t):
    k = bisect.bisect_right([s[0] for s in sched], t) - 1
    return sched[max(k, 0)][1]


def read_starts(run):
    """{(flow, segment): start seconds since t0}."""
    out = {}
    path = os.path.join(run, "starts")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) == 3:
                    out[(int(w[0]), int(w[1]))] = float(w[2])
    return out


def clip_profile(clip, cache=None):
    """The clip's rate on the wire per second (kbit/s): every audio/video packet's bytes plus
    ~50 bytes of RTP/SRTP/UDP/IP per 1150-byte fragment. Cached in CLIP.profile."""
    cache = cache or clip + ".profile"
    if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(clip):
        with open(cache) as f:
            return [float(x) for x in f.read().split()]
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "packet=pts_time,size",
                          "-of", "csv=p=0", clip], capture_output=True, text=True, check=True).stdout
    per_s = {}
    for line in out.splitlines():
        w = line.split(",")
        if len(w) < 2 or w[0] in ("", "N/A"):
            continue
        s, size = int(float(w[0])), int(w[1])
        per_s[s] = per_s.get(s, 0) + size + 50 * (size // 1150 + 1)
    prof = [per_s.get(s, 0) * 8 / 1000.0 for s in range(max(per_s) + 1)] if per_s else []
    with open(cache, "w") as f:
        f.write(" ".join(f"{x:.1f}" for x in prof))
    return prof


def waterfill(capacity, demands):
    """Max-min fair shares of `capacity` for `demands` (None = unbounded)."""
    n = len(demands)
    share = [0.0] * n
    left = capacity
    todo = sorted(range(n), key=lambda i: math.inf if demands[i] is None else demands[i])
    for k, i in enumerate(todo):
        fair = left / (n - k)
        d = demands[i]
        share[i] = fair if d is None or d > fair else d
        left -= share[i]
    return share


def rolling(values, width):
    """Means over `width` consecutive bins (centred at the window's end)."""
    out = []
    s = 0.0
    for k, v in enumerate(values):
        s += v
        if k >= width:
            s -= values[k - width]
        out.append(s / min(k + 1, width))
    return out


def load_client_blocks(run, flow_index):
    """Blocks of a predrop media flow, per segment: [(segment, rows)]."""
    segs = []
    for seg in range(0, 8):
        name = f"client-{flow_index}.csv" if seg == 0 else f"client-{flow_index}-{seg}.csv"
        path = os.path.join(run, name)
        if not os.path.exists(path):
            if seg == 0:
                continue
            break
        with open(path, newline="") as f:
            rows = []
            for r in csv.DictReader(f):
                try:
                    psnr = float(r["psnr_db"])
                except ValueError:
                    psnr = float("nan")
                rows.append({"block": int(r["block"]), "R": float(r["rate"]), "psnr": psnr,
                             "loss": float(r["network_loss"])})
        segs.append((seg, rows))
    return segs


class Run:
    """One run folder, parsed."""

    def __init__(self, run, profile=None):
        self.dir = run
        self.env = read_kv(os.path.join(run, "case.env"))
        self.duration = float(self.env["duration"])
        self.flows = read_flows(run)
        self.sched = read_events(run, self.env)
        self.starts = read_starts(run)
        self.profile = profile
        self.nbins = int(math.ceil(self.duration / BIN_S))
        with open(os.path.join(run, "t0")) as f:
            self.t0_wall = float(f.read().strip())
        self._load_packets()

    # --- packets -----------------------------------------------------------------------------------
    def _flow_of(self, p):
        """(flow index, direction) of a packet: 'fwd' = toward receiver i, 'back' = from it."""
        if (p.dst & 0xFFFFFF00) == RCV_NET and (p.src & 0xFFFFFF00) == SND_NET:
            return (p.dst & 0xFF) - 2, "fwd"
        if (p.src & 0xFFFFFF00) == RCV_NET and (p.dst & 0xFFFFFF00) == SND_NET:
            return (p.src & 0xFF) - 2, "back"
        return None, None

    def _load_packets(self):
        r0 = bed_pcap.read_packets(os.path.join(self.dir, "r0.pcap"))
        r1 = bed_pcap.read_packets(os.path.join(self.dir, "r1.pcap"))
        fwd_in = [p for p in r0 if self._flow_of(p)[1] == "fwd"]
        fwd_out = [p for p in r1 if self._flow_of(p)[1] == "fwd"]
        back_in = [p for p in r1 if self._flow_of(p)[1] == "back"]
        back_out = [p for p in r0 if self._flow_of(p)[1] == "back"]
        self.pkts = {}  # (flow, dir) -> list of (t_in, t_out or None, wire_len, proto)
        end_in = None
        for direction, ins, outs in (("fwd", fwd_in, fwd_out), ("back", back_in, back_out)):
            pairs, unmatched, _stray = bed_pcap.match(ins, outs)
            # The largest frame out per 5-tuple: the segment size of that socket's GSO
            # super-packets (1284 bytes for the server's RTP), to count a super-packet's segments.
            seg_len = {}
            for _a, b in pairs:
                k5 = b.key[:5]
                seg_len[k5] = max(seg_len.get(k5, 0), b.wire_len)

            def segments(a):
                if a.wire_len <= bed_pcap.MAX_WIRE:
                    return 1
                size = seg_len.get(a.key[:5], bed_pcap.MAX_WIRE)
                return max(1, math.ceil((a.wire_len - 42) / max(size - 42, 1)))

            count = {}
            for a, _b in pairs:
                count[id(a)] = count.get(id(a), 0) + 1
            seen = set()
            for a, b in pairs:
                # A GSO super-packet in pairs with each of its segments out: its bytes in count
                # once, each segment's bytes out count for itself; segments that did not come
                # out are drops, recorded with the first.
                first = id(a) not in seen
                seen.add(id(a))
                self._add(a, b, direction, a.wire_len if first else 0, b.wire_len, 1)
                missing = segments(a) - count[id(a)] if first else 0
                if missing > 0:
                    self._add(a, None, direction, 0, 0, missing)
            for a in unmatched:
                self._add(a, None, direction, a.wire_len, 0, segments(a))
            if ins:
                end_in = max(end_in or 0.0, ins[-1].t)
        for v in self.pkts.values():
            v.sort(key=lambda x: x[0])
        self.capture_end = (end_in - self.t0_wall) if end_in else self.duration

    def _add(self, a, b, direction, len_in, len_out, segs):
        """One packet's record: (t_in, t_out or None, proto, bytes in, bytes out, packets)."""
        flow, _ = self._flow_of(a)
        t_in = a.t - self.t0_wall
        t_out = None if b is None else b.t - self.t0_wall
        self.pkts.setdefault((flow, direction), []).append((t_in, t_out, a.proto, len_in, len_out, segs))

    # --- per-flow series ---------------------------------------------------------------------------
    def data_dir(self, f):
        return "back" if f["kind"] == "media-back" else "fwd"

    def data_proto(self, f):
        return 6 if f["kind"] in ("tcp", "tcpshort") else 17

    def data_packets(self, f):
        d = self.data_dir(f)
        proto = self.data_proto(f)
        return [p for p in self.pkts.get((f["index"], d), []) if p[2] == proto]

    def delay_s(self, f, direction):
        return (f["owd_ms"] if direction == "fwd" else f["back_ms"]) / 1000.0

    def segments(self, f):
        """Active intervals of a flow (pause splits a media flow in two)."""
        segs = sorted((s, t) for (i, s), t in self.starts.items() if i == f["index"])
        if not segs:
            return [(f["start"], f["stop"])]
        out = []
        for k, (seg, t) in enumerate(segs):
            stop = segs[k + 1][1] if k + 1 < len(segs) else f["stop"]
            out.append((t, stop))
        # A paused flow: the first segment ends at the pause.
        return out

    def active(self, f, t):
        return any(a <= t < b for a, b in self.active_intervals(f))

    def active_intervals(self, f):
        if f.get("_iv") is None:
            pk = self.data_packets(f)
            ivs = []
            for a, b in self.segments(f):
                ts = [p[0] for p in pk if a - 0.5 <= p[0] < b + 1.0]
                if ts:
                    ivs.append((max(a, ts[0]), min(b, ts[-1]) if f["kind"] != "tcp" else b))
            f["_iv"] = ivs
        return f["_iv"]

    def demand(self, f, t):
        """kbit/s the flow would send at t without any congestion control (None = unbounded)."""
        if f["kind"] in ("tcp",):
            return None
        if f["kind"] == "tcpshort":
            return 0.0
        if f["kind"] == "udp":
            return (f["rate_kbps"] or 0.0) * float(self.env.get("scale", "1"))
        for a, b in self.active_intervals(f):
            if a <= t < b:
                if self.profile:
                    k = int(t - a)
                    return self.profile[k] if k < len(self.profile) else mean(self.profile)
                return DEFAULT_DEMAND_KBPS
        return 0.0

    def compute(self):
        nb = self.nbins
        flows = self.flows
        res = {"case": self.env.get("case"), "policy": self.env.get("policy"),
               "clip": self.env.get("clip"), "media": self.env.get("media"),
               "duration": self.duration, "flows": []}
        cap = {d: [capacity_at(self.sched[d], (k + 0.5) * BIN_S) for k in range(nb)] for d in ("fwd", "back")}
        send = {f["index"]: [0.0] * nb for f in flows}
        recv = {f["index"]: [0.0] * nb for f in flows}
        qbins = {d: [[] for _ in range(nb)] for d in ("fwd", "back")}
        per_flow_q = {}
        for f in flows:
            d = self.data_dir(f)
            D = self.delay_s(f, d)
            qs, drops, n_in = [], 0, 0
            pk = self.data_packets(f)
            # A packet in without a copy out is a drop when a later packet of the same flow and
            # direction did come out (both queues are FIFO); after the last one out it may
            # still have been in flight when the capture stopped.
            last_through = max((p[0] for p in pk if p[1] is not None), default=-1.0)
            for t_in, t_out, _proto, len_in, len_out, segs in pk:
                k = int(t_in / BIN_S)
                if 0 <= k < nb:
                    send[f["index"]][k] += len_in * 8 / BIN_S / 1000.0
                if t_out is not None:
                    ko = int(t_out / BIN_S)
                    if 0 <= ko < nb:
                        recv[f["index"]][ko] += len_out * 8 / BIN_S / 1000.0
                    q = max(0.0, (t_out - t_in - D) * 1000.0)
                    qs.append((t_in, q))
                    if 0 <= k < nb:
                        qbins[d][k].append(q)
                    n_in += 1
                elif t_in < last_through:
                    drops += segs
                    n_in += segs
            per_flow_q[f["index"]] = (qs, drops, n_in)
        # Targets by water-filling per bin and direction.
        target = {f["index"]: [0.0] * nb for f in flows}
        dem = {f["index"]: [0.0] * nb for f in flows}
        congested_dir = {d: [False] * nb for d in ("fwd", "back")}
        for k in range(nb):
            t = (k + 0.5) * BIN_S
            for d in ("fwd", "back"):
                act = [f for f in flows if self.data_dir(f) == d and f["kind"] != "tcpshort" and self.active(f, t)]
                demands = [self.demand(f, t) for f in act]
                shares = waterfill(cap[d][k], demands)
                total = sum(math.inf if x is None else x for x in demands)
                congested_dir[d][k] = total > cap[d][k]
                for f, s, x in zip(act, shares, demands):
                    target[f["index"]][k] = s
                    dem[f["index"]][k] = math.inf if x is None else x
        res["bins"] = {"send": send, "recv": recv, "target": target, "cap": cap, "qbins": qbins,
                       "congested": congested_dir}
        # Event times: capacity changes (both directions) and joins/leaves of any flow.
        events = [(t, f"rate {kb:g}") for t, kb in self.sched["fwd"][1:]] + \
                 [(t, f"back {kb:g}") for t, kb in self.sched["back"][1:]]
        for f in flows:
            for a, b in self.active_intervals(f):
                if a > 1.0:
                    events.append((a, f"join {f['index']}"))
                if b < self.duration - 1.0:
                    events.append((b, f"leave {f['index']}"))
        events.sort()
        res["events"] = events
        width = int(round(1.0 / BIN_S))
        total_recv = {d: [0.0] * nb for d in ("fwd", "back")}
        for f in flows:
            for k in range(nb):
                total_recv[self.data_dir(f)][k] += recv[f["index"]][k]
        for f in flows:
            i = f["index"]
            d = self.data_dir(f)
            ivs = self.active_intervals(f)
            act_bins = [k for k in range(nb) if self.active(f, (k + 0.5) * BIN_S)]
            qs, drops, n_in = per_flow_q[i]
            cong_flow = [dem[i][k] > 0 and target[i][k] < CONGESTED_SHARE * dem[i][k] for k in range(nb)]
            q_all = [q for _t, q in qs]
            q_cong = [q for t, q in qs if 0 <= int(t / BIN_S) < nb and congested_dir[d][int(t / BIN_S)]]
            # Convergence and oscillation read the sending rate (what the flow puts into the
            # path): the receiving rate of any flow above capacity is the capacity, converged
            # or not.
            r1s = rolling(send[i], width)
            fr = {"index": i, "kind": f["kind"], "owd_ms": f["owd_ms"], "back_ms": f["back_ms"],
                  "active": ivs,
                  "send_kbps": mean([send[i][k] for k in act_bins]),
                  "recv_kbps": mean([recv[i][k] for k in act_bins]),
                  "target_kbps": mean([target[i][k] for k in act_bins]),
                  "loss_pct": 100.0 * drops / n_in if n_in else float("nan"),
                  "queue_mean_ms": mean(q_all), "queue_p95_ms": pct(q_all, 95),
                  "queue_p95_congested_ms": pct(q_cong, 95),
                  "congested_s": sum(1 for k in act_bins if cong_flow[k]) * BIN_S}
            # Convergence after each event that falls in this flow's active time.
            conv = []
            for n, (te, what) in enumerate(events):
                if not self.active(f, te + 0.5) or what == f"join {i}" and False:
                    continue
                stop = min([t for t, _ in events[n + 1:] if t > te + 0.5] + [b for a, b in ivs if a <= te < b] + [self.duration])
                conv.append({"t": te, "what": what, "s": self._converge(r1s, target[i], te, stop)})
            fr["convergence"] = conv
            # Oscillation: std of the 1 s rate relative to the target, away from events.
            steady = [k for k in act_bins if target[i][k] > 0 and
                      all(not (te <= (k + 0.5) * BIN_S < te + STEADY_SKIP_S) for te, _ in events) and
                      all((k + 0.5) * BIN_S >= a + STEADY_SKIP_S for a, b in ivs if a <= (k + 0.5) * BIN_S < b)]
            rel = [r1s[k] / target[i][k] for k in steady]
            # Oscillation within each phase between events (not the level: a fixed R above
            # the capacity is steady, just wrong), averaged over the phases, bins as weights.
            ev_t = [te for te, _ in events]
            phases = {}
            for k in steady:
                phases.setdefault(bisect.bisect_right(ev_t, (k + 0.5) * BIN_S), []).append(r1s[k] / target[i][k])
            devs = [(statistics.pstdev(v), len(v)) for v in phases.values() if len(v) > 2]
            fr["oscillation"] = sum(d * n for d, n in devs) / sum(n for _, n in devs) if devs else float("nan")
            fr["rate_vs_target"] = mean(rel)
            if f["kind"] in ("media", "media-back"):
                self._blocks(f, fr, cong_flow)
            res["flows"].append(fr)
        # Utilisation per direction over bins where any flow of that direction is active.
        util = {}
        for d in ("fwd", "back"):
            ks = [k for k in range(nb) if any(self.data_dir(f) == d and self.active(f, (k + 0.5) * BIN_S) for f in flows)]
            util[d] = mean([min(total_recv[d][k] / cap[d][k], 1.5) for k in ks if cap[d][k] < OPEN_KBPS])
        res["utilisation"] = util
        qf = [q for k in range(nb) for q in qbins["fwd"][k]]
        qc = [q for k in range(nb) if congested_dir["fwd"][k] for q in qbins["fwd"][k]]
        res["queue_p95_ms"] = pct(qf, 95)
        res["queue_mean_ms"] = mean(qf)
        res["queue_p95_congested_ms"] = pct(qc, 95)
        res["queue_mean_congested_ms"] = mean(qc)
        res["congested_s"] = sum(congested_dir["fwd"]) * BIN_S
        res["fairness"] = self._fairness(flows, recv)
        return res

    def _converge(self, r1s, target, te, stop):
        """Seconds from te until the 1 s rate stays within the tolerance of the target for
        CONVERGE_HOLD_S; None when it does not before `stop`."""
        k0 = int(te / BIN_S) + int(1.0 / BIN_S)  # the 1 s window must lie after the event
        hold = int(CONVERGE_HOLD_S / BIN_S)
        kend = min(int(stop / BIN_S), len(r1s))
        run = 0
        for k in range(k0, kend):
            tg = target[k]
            ok = tg > 0 and abs(r1s[k] - tg) <= CONVERGE_TOL * tg
            run = run + 1 if ok else 0
            if run >= hold:
                return round((k - hold + 1) * BIN_S - te, 2)
        return None

    def _blocks(self, f, fr, cong_flow):
        """PSNR and R per block (predrop client CSVs), placed in time from the segment's first
        media packet (block k starts k seconds later; paced 1 s blocks)."""
        segs = load_client_blocks(self.dir, f["index"])
        if not segs:
            return
        ivs = self.active_intervals(f)
        blocks = []
        for seg, rows in segs:
            if seg >= len(ivs):
                continue
            # One client that paused and resumed (--pause) writes one CSV across its intervals:
            # its blocks fill each interval in turn, 1 s each, from the interval's first packet.
            rest = ivs[seg:] if len(segs) == 1 else ivs[seg:seg + 1]
            for r in rows:
                b, k_iv = r["block"], 0
                while k_iv + 1 < len(rest) and b >= round(rest[k_iv][1] - rest[k_iv][0]):
                    b -= round(rest[k_iv][1] - rest[k_iv][0])
                    k_iv += 1
                t = rest[k_iv][0] + b + 0.5
                k = int(t / BIN_S)
                r = dict(r, t=t, congested=0 <= k < len(cong_flow) and cong_flow[k])
                blocks.append(r)
        fr["blocks"] = [[round(b["t"], 2), b["R"], b["psnr"]] for b in blocks]
        ps = [b["psnr"] for b in blocks if not math.isnan(b["psnr"])]
        pc = [b["psnr"] for b in blocks if b["congested"] and not math.isnan(b["psnr"])]
        fr["psnr_mean"] = mean(ps)
        fr["psnr_congested"] = mean(pc)
        fr["R_mean"] = mean([b["R"] for b in blocks])
        fr["blocks_n"] = len(blocks)
        # Back to R ~ 0 after each end of congestion (this flow's target back at its demand).
        rec = []
        for k, b in enumerate(blocks):
            if k == 0 or not (blocks[k - 1]["congested"] and not b["congested"]):
                continue
            run, got = 0, None
            for j in range(k, len(blocks)):
                if blocks[j]["congested"]:
                    break
                run = run + 1 if blocks[j]["R"] <= R_ZERO else 0
                if run >= R_ZERO_RUN:
                    got = j - R_ZERO_RUN + 1 - k
                    break
            stretch = 0
            for j in range(k, len(blocks)):
                if blocks[j]["congested"]:
                    break
                stretch += 1
            if got is None and stretch < R_ZERO_RUN + 3:
                continue  # too short an uncongested stretch to judge
            rec.append({"t": round(b["t"], 1), "blocks": got})
        fr["back_to_R0"] = rec

    def _fairness(self, flows, recv):
        """Throughput ratios over 1, 5, 20 s windows (sliding by 1 s): max/min among the media
        flows active for the whole window, and media/TCP."""
        out = {}
        media = [f for f in flows if f["kind"] in ("media", "media-back") and self.data_dir(f) == "fwd"]
        tcp = [f for f in flows if f["kind"] == "tcp"]
        per_s = int(round(1.0 / BIN_S))
        for w in (1, 5, 20):
            ratios, mt = [], []
            t = 0.0
            while t + w <= self.duration:
                def whole(f):
                    return any(a <= t and t + w <= b for a, b in self.active_intervals(f))
                k0, k1 = int(t / BIN_S), int((t + w) / BIN_S)
                act = [f for f in media if whole(f)]
                if len(act) >= 2:
                    th = [sum(recv[f["index"]][k0:k1]) for f in act]
                    if min(th) > 0:
                        ratios.append(max(th) / min(th))
                    else:
                        ratios.append(math.inf)
                at = [f for f in tcp if whole(f)]
                if act and at:
                    m = mean([sum(recv[f["index"]][k0:k1]) for f in act])
                    c = sum(sum(recv[f["index"]][k0:k1]) for f in at) / len(at)
                    mt.append(m / c if c > 0 else math.inf)
                t += 1.0
            if ratios:
                fin = [r for r in ratios if math.isfinite(r)]
                out[f"self_ratio_{w}s_median"] = pct(fin, 50) if fin else math.inf
                out[f"self_ratio_{w}s_p90"] = pct(fin, 90) if len(fin) == len(ratios) else math.inf
                out[f"self_within_{w}s_pct"] = 100.0 * sum(1 for r in ratios if r <= 1.25) / len(ratios)
            if mt:
                fin = [r for r in mt if math.isfinite(r)]
                out[f"media_tcp_ratio_{w}s_median"] = pct(fin, 50) if fin else math.inf
        # Shares against the fair share over the time media and TCP compete.
        if media and tcp:
            ks = [k for k in range(self.nbins)
                  if any(self.active(f, (k + 0.5) * BIN_S) for f in media)
                  and any(self.active(f, (k + 0.5) * BIN_S) for f in tcp)]
            if ks:
                capk = [capacity_at(self.sched["fwd"], (k + 0.5) * BIN_S) for k in ks]
                n = len(media) + len(tcp)
                fair = mean(capk) / n
                out["media_share_of_fair"] = mean([mean([recv[f["index"]][k] for f in media]) for k in ks]) / fair
                out["tcp_share_of_fair"] = mean([mean([recv[f["index"]][k] for f in tcp]) for k in ks]) / fair
                out["competition_s"] = len(ks) * BIN_S
        ps = [fr for fr in media]
        return out


def write_bins(res, path):
    b = res["bins"]
    idx = sorted(b["send"])
    with open(path, "w") as f:
        f.write("t\tcap_fwd\tcap_back\tqueue_p95_fwd\tcongested\t" +
                "\t".join(f"send{i}\trecv{i}\ttarget{i}" for i in idx) + "\n")
        for k in range(len(b["cap"]["fwd"])):
            q = pct(b["qbins"]["fwd"][k], 95)
            row = [f"{k * BIN_S:.1f}", f"{b['cap']['fwd'][k]:.0f}", f"{b['cap']['back'][k]:.0f}",
                   "nan" if math.isnan(q) else f"{q:.2f}", "1" if b["congested"]["fwd"][k] else "0"]
            for i in idx:
                row += [f"{b['send'][i][k]:.1f}", f"{b['recv'][i][k]:.1f}", f"{b['target'][i][k]:.1f}"]
            f.write("\t".join(row) + "\n")


def plot(res, run, out_png):
    """rate vs capacity, queue (p95 per 200 ms), R and PSNR per block, one line per flow."""
    bins = os.path.join(run, "bins.tsv")
    idx = sorted(res["bins"]["send"])
    blk = os.path.join(run, "blocks.tsv")
    with open(blk, "w") as f:
        for fr in res["flows"]:
            for t, R, p in fr.get("blocks", []):
                f.write(f"{fr['index']}\t{t}\t{R}\t{'nan' if math.isnan(p) else p}\n")
            f.write("\n\n")
    media_idx = [fr["index"] for fr in res["flows"] if fr.get("blocks")]
    title = f"{res['case']} / {res['policy']} / {res['clip']}"
    cap_max = max(max(x for x in res["bins"]["cap"]["fwd"] if x < OPEN_KBPS) if any(x < OPEN_KBPS for x in res["bins"]["cap"]["fwd"]) else 2000, 1500)
    g = [f"set terminal pngcairo size 1100,1000 font 'sans,9'", f"set output '{out_png}'",
         "set multiplot layout 4,1 title '" + title.replace("'", "") + "'", "set grid",
         "set key top right inside opaque", "set lmargin 10", "set rmargin 3",
         f"set xrange [0:{res['duration']}]", "set ylabel 'kbit/s'", f"set yrange [0:{cap_max * 1.6:.0f}]"]
    cols = 6
    lines = [f"'{bins}' using 1:2 with steps lw 2 lc rgb 'black' title 'capacity'"]
    for n, i in enumerate(idx):
        c = cols + n * 3 + 1  # recv column (1-based: t cap cap q cong | send recv target)
        lines.append(f"'{bins}' using 1:(${c}) smooth unique with lines title 'flow {i} recv'")
    g.append("plot " + ", ".join(lines))
    g += ["set ylabel 'queue p95 ms'", "set yrange [0:*]",
          f"plot '{bins}' using 1:4 with lines lc rgb 'red' title 'queue (fwd)'"]
    if media_idx:
        g += ["set ylabel 'R'", "set yrange [0:1]",
              "plot " + ", ".join(f"'{blk}' index {n} using 2:3 with steps title 'flow {i}'"
                                  for n, i in enumerate(fr["index"] for fr in res["flows"]) if i in media_idx)]
        g += ["set ylabel 'PSNR dB'", "set yrange [10:62]", "set xlabel 't s'",
              "plot " + ", ".join(f"'{blk}' index {n} using 2:4 with linespoints pt 7 ps 0.4 title 'flow {i}'"
                                  for n, i in enumerate(fr["index"] for fr in res["flows"]) if i in media_idx)]
    g.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(g) + "\n", text=True, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def analyse(run, profile=None, make_plot=False):
    r = Run(run, profile)
    res = r.compute()
    write_bins(res, os.path.join(run, "bins.tsv"))
    if make_plot:
        plot(res, run, os.path.join(run, "plot.png"))
    bins = res.pop("bins")
    with open(os.path.join(run, "metrics.json"), "w") as f:
        json.dump(res, f, indent=1, default=lambda x: None)
    res["bins"] = bins
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--clip", help="the clip the run streamed (for the media demand profile)")
    args = ap.parse_args()
    prof = clip_profile(args.clip) if args.clip else None
    res = analyse(args.run, prof, args.plot)
    res.pop("bins")
    print(json.dumps(res, indent=1, default=lambda x: None)[:4000])


if __name__ == "__main__":
    main()
