#!/usr/bin/env python3
"""Tail-latency regimes for the DDL bed (issue 26 item 1; run-ddl-torch.sh --profile).

    tail_traffic.py sink      --listen IP --port P
    tail_traffic.py bursts    --dst IP --port P [--rate-mbit 40] [--on-ms 50,200] [--off-s 0.5,2]
                              [--seed N] [--log FILE]
    tail_traffic.py straggler --dev r1 --normal RATE --low RATE [--on-ms 200,600] [--off-s 1,3]
                              [--burst 32kbit] [--latency 100ms] [--seed N] [--log FILE]
    tail_traffic.py cpu       --pid PID [--share 0.1] [--on-ms 200,600] [--off-s 1,3] [--seed N]
                              [--log FILE]

bursts: on/off UDP microbursts (1200-byte datagrams, unresponsive): ON for a time drawn uniformly
from --on-ms at --rate-mbit, OFF for a time drawn uniformly from --off-s, until killed. Sent from
the sender namespace through the bottleneck toward receiver 0 (the sink, which reads and discards,
so that no ICMP port-unreachable comes back). Paced in 0.5 ms slices: within a slice the due
datagrams leave back to back, as a NIC's burst would.

straggler: one rank's path slowed now and then: `tc qdisc change` of the tbf on DEV (run in the
router namespace) to --low for a time drawn from --on-ms, then back to --normal for a time drawn
from --off-s, until killed (SIGTERM restores --normal).

cpu: one rank's CPU slowed now and then (a CPU straggler): the process group PID (a bed_spawn'ed
rank: setsid makes the rank its group's leader) is moved into a cgroup-v1 cpu cgroup of its own,
whose CFS quota is set to --share of one CPU (10 ms period) for a time drawn from --on-ms, then
lifted (quota -1) for a time drawn from --off-s, until killed (SIGTERM lifts the quota, moves
what is left of the group back to its cgroup and removes the cgroup). A quota rather than a
SIGSTOP/SIGCONT duty cycle: the rank keeps running, at a tenth of a core, the way a core shared
with a noisy neighbour or a throttled one does, and every thread slows alike (gloo's and the
relay peer's network threads included), while the kernel still acknowledges its TCP; a stopped
process is a different straggler (a pause), and one left stopped by a killed controller would
hang the run, where a cgroup left behind only holds a quota. Must run in the host's mount
namespace (`ip netns exec` remounts /sys, hiding /sys/fs/cgroup).

The schedule comes from --seed alone (random.Random), so the same seed gives the same on/off
times in every arm. One line per event in --log: seconds since start, what, duration.
"""
import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import time

DATAGRAM = 1200
SLICE_S = 0.0005


def pair(text):
    a, b = (float(x) for x in text.split(","))
    return min(a, b), max(a, b)


class Log:
    def __init__(self, path):
        self.f = open(path, "w", buffering=1) if path else None
        self.t0 = time.monotonic()

    def event(self, what, seconds):
        if self.f:
            self.f.write(f"{time.monotonic() - self.t0:.3f} {what} {seconds:.3f}\n")


def sink(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind((args.listen, args.port))
    while True:
        s.recv(65536)


def send_burst(sock, dst, rate_bps, seconds):
    interval = DATAGRAM * 8 / rate_bps
    payload = b"\0" * DATAGRAM
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            return sent
        due = int((now - start) / interval) + 1
        while sent < due:
            try:
                sock.sendto(payload, dst)
            except OSError:  # ENOBUFS on a full device queue: that datagram is lost
                pass
            sent += 1
        time.sleep(SLICE_S)


def bursts(args):
    rng = random.Random(args.seed)
    log = Log(args.log)
    on, off = pair(args.on_ms), pair(args.off_s)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dst = (args.dst, args.port)
    while True:
        time.sleep(rng.uniform(*off))
        d = rng.uniform(*on) / 1000.0
        log.event(f"burst {args.rate_mbit:g}mbit", d)
        send_burst(sock, dst, args.rate_mbit * 1e6, d)


def straggler(args):
    rng = random.Random(args.seed)
    log = Log(args.log)
    on, off = pair(args.on_ms), pair(args.off_s)

    def tbf(rate):
        subprocess.run(["tc", "qdisc", "change", "dev", args.dev, "root", "tbf", "rate", rate,
                        "burst", args.burst, "latency", args.latency], check=False)

    def restore(*_):
        tbf(args.normal)
        sys.exit(0)

    signal.signal(signal.SIGTERM, restore)
    signal.signal(signal.SIGINT, restore)
    while True:
        time.sleep(rng.uniform(*off))
        d = rng.uniform(*on) / 1000.0
        log.event(f"slow {args.low}", d)
        tbf(args.low)
        time.sleep(d)
        tbf(args.normal)


CPU_ROOT = "/sys/fs/cgroup/cpu"
CPU_PERIOD_US = 10000


def group_pids(pgid):
    """The processes of process group PGID (the rank and any child it started)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp
                pids.append(int(name))
    return pids


def cpu_cgroup_of(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "cpu" in controllers.split(","):
                return path
    return "/"


def cpu_straggler(args):
    rng = random.Random(args.seed)
    log = Log(args.log)
    on, off = pair(args.on_ms), pair(args.off_s)
    cg = os.path.join(CPU_ROOT, f"predrop-ddl-{args.pid}")
    os.makedirs(cg, exist_ok=True)
    home = os.path.join(CPU_ROOT, cpu_cgroup_of(args.pid).lstrip("/"))

    def write(name, value, where=cg):
        try:
            with open(os.path.join(where, name), "w") as f:
                f.write(str(value))
        except OSError:  # a process that has just exited
            pass

    def adopt():  # the group's processes, children started since included
        for pid in group_pids(args.pid):
            write("cgroup.procs", pid)

    write("cpu.cfs_period_us", CPU_PERIOD_US)
    write("cpu.cfs_quota_us", -1)
    adopt()

    def restore(*_):
        write("cpu.cfs_quota_us", -1)
        for pid in open(os.path.join(cg, "cgroup.procs")).read().split():
            write("cgroup.procs", pid, home)
        try:
            os.rmdir(cg)
        except OSError:
            pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, restore)
    signal.signal(signal.SIGINT, restore)
    quota = max(1000, int(args.share * CPU_PERIOD_US))
    while True:
        time.sleep(rng.uniform(*off))
        d = rng.uniform(*on) / 1000.0
        log.event(f"cpu {args.share:g}", d)
        adopt()
        write("cpu.cfs_quota_us", quota)
        time.sleep(d)
        write("cpu.cfs_quota_us", -1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["sink", "bursts", "straggler", "cpu"])
    ap.add_argument("--pid", type=int)
    ap.add_argument("--share", type=float, default=0.1)
    ap.add_argument("--listen", default="0.0.0.0")
    ap.add_argument("--dst")
    ap.add_argument("--port", type=int, default=5301)
    ap.add_argument("--rate-mbit", type=float, default=40.0)
    ap.add_argument("--on-ms", default=None)
    ap.add_argument("--off-s", default=None)
    ap.add_argument("--dev", default="r1")
    ap.add_argument("--normal")
    ap.add_argument("--low")
    ap.add_argument("--burst", default="32kbit")
    ap.add_argument("--latency", default="100ms")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log")
    args = ap.parse_args()
    if args.mode == "sink":
        sink(args)
    elif args.mode == "bursts":
        args.on_ms = args.on_ms or "50,200"
        args.off_s = args.off_s or "0.5,2"
        bursts(args)
    elif args.mode == "cpu":
        args.on_ms = args.on_ms or "200,600"
        args.off_s = args.off_s or "1,3"
        if not args.pid:
            ap.error("cpu needs --pid")
        cpu_straggler(args)
    else:
        args.on_ms = args.on_ms or "200,600"
        args.off_s = args.off_s or "1,3"
        if not (args.normal and args.low):
            ap.error("straggler needs --normal and --low")
        straggler(args)


if __name__ == "__main__":
    main()
