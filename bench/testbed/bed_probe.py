#!/usr/bin/env python3
"""A paced UDP probe for the test bed's delay check (bed.sh selftest).

    bed_probe.py send --dst IP --port P --kbps R [--size 1200] --seconds S
    bed_probe.py recv --port P --seconds S        prints one JSON object
    bed_probe.py wakeup --seconds S               a 1 ms sleeper's wake-up lateness

The sender stamps each datagram with its sequence number and the wall clock (CLOCK_REALTIME, ns)
just before sending; the receiver takes the kernel's receive stamp (SO_TIMESTAMPNS, same clock:
the bed's namespaces share the machine's clocks), so the one-way delay excludes the receiver's
own scheduling. Reports packets sent (the highest sequence number + 1 seen, or announced by the
last datagram), lost, reordered (arrived after a higher sequence number) and the one-way delay's
min / p50 / p99 / max. Standard library only.
"""
import argparse
import json
import socket
import struct
import time

HEADER = struct.Struct("!IIq")  # magic, sequence, send time ns
MAGIC = 0x50524F42  # "PROB"
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def send(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gap = args.size * 8 / (args.kbps * 1000.0)
    n = int(args.seconds / gap)
    pad = b"\0" * (args.size - HEADER.size)
    start = time.monotonic()
    for seq in range(n):
        due = start + seq * gap
        while True:
            left = due - time.monotonic()
            if left <= 0:
                break
            # Sleep most of the gap, spin the last 0.5 ms: even spacing without a busy core.
            time.sleep(left - 0.0005) if left > 0.001 else None
        s.sendto(HEADER.pack(MAGIC, seq, time.time_ns()) + pad, (args.dst, args.port))
    print(json.dumps({"sent": n}))


def pct(v, q):
    if not v:
        return float("nan")
    k = (len(v) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def recv(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", args.port))
    s.settimeout(0.2)
    end = time.monotonic() + args.seconds
    owd, seen, highest, reordered = [], set(), -1, 0
    while time.monotonic() < end:
        try:
            data, anc, _flags, _addr = s.recvmsg(2048, socket.CMSG_SPACE(16))
        except socket.timeout:
            continue
        if len(data) < HEADER.size:
            continue
        magic, seq, sent_ns = HEADER.unpack_from(data)
        if magic != MAGIC:
            continue
        rx_ns = None
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", cdata[:16])
                rx_ns = sec * 1_000_000_000 + nsec
        if rx_ns is None:
            rx_ns = time.time_ns()
        if seq < highest:
            reordered += 1
        highest = max(highest, seq)
        seen.add(seq)
        owd.append((rx_ns - sent_ns) / 1e6)
    owd.sort()
    sent = highest + 1
    print(json.dumps({
        "sent": sent, "received": len(seen), "lost": sent - len(seen), "reordered": reordered,
        "owd_min_ms": owd[0] if owd else float("nan"), "owd_p50_ms": pct(owd, 50),
        "owd_p95_ms": pct(owd, 95), "owd_p99_ms": pct(owd, 99), "owd_max_ms": owd[-1] if owd else float("nan"),
    }))


def wakeup(args):
    """Wake-up lateness of a 1 ms sleeper: what this machine's scheduler allows (run it under
    chrt -f like the delay line)."""
    late = []
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        t = time.monotonic()
        time.sleep(0.001)
        late.append((time.monotonic() - t - 0.001) * 1000.0)
    late.sort()
    print(f"1 ms sleeper, {len(late)} wake-ups: late p50 {pct(late, 50):.3f} p99 {pct(late, 99):.3f} "
          f"max {late[-1]:.2f} ms; > 1 ms late: {sum(1 for x in late if x > 1.0)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["send", "recv", "wakeup"])
    ap.add_argument("--dst")
    ap.add_argument("--port", type=int)
    ap.add_argument("--kbps", type=float, default=1000.0)
    ap.add_argument("--size", type=int, default=1200)
    ap.add_argument("--seconds", type=float, required=True)
    args = ap.parse_args()
    {"send": send, "recv": recv, "wakeup": wakeup}[args.mode](args)


if __name__ == "__main__":
    main()
