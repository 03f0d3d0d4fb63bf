#!/usr/bin/env python3
"""RFC 8867 §5.7's short TCP flows for the test bed (run-case.sh, flow kind `tcpshort`).

    tcp_short.py sink   --listen IP --port P --seconds S      (receiver side: reads and discards)
    tcp_short.py source --connect IP --port P --seconds S [--flows 10] [--seed N]

The source runs FLOWS independent on/off users (RFC 8867 §5.7, as ns3-rmcat's SetUpTCPShort): ON
sends one file of a size drawn uniformly from 30-50 KB over a new TCP NewReno connection
(TCP_CONGESTION "reno", 1000-byte MSS as the RFC's TCP), then OFF for an exponentially
distributed time with mean 10 s, and so on until S seconds have passed. Two users start ON, the
others start OFF. One line per finished file on stdout: user, start s, end s, bytes. Standard
library only; the seed makes a run repeatable.
"""
import argparse
import random
import socket
import threading
import time

MEAN_OFF_S = 10.0
FILE_MIN, FILE_MAX = 30_000, 50_000
START_ON = 2
MSS = 1000


def sink(args):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((args.listen, args.port))
    srv.listen(64)
    srv.settimeout(0.5)
    end = time.monotonic() + args.seconds

    def drain(c):
        with c:
            while c.recv(65536):
                pass

    while time.monotonic() < end:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=drain, args=(c,), daemon=True).start()


def user(k, args, rng, t0, end, lock):
    on = k < START_ON
    while True:
        if not on:
            time.sleep(min(rng.expovariate(1.0 / args.mean_off_s), max(0.0, end - time.monotonic())))
        on = False
        if time.monotonic() >= end:
            return
        size = rng.randint(FILE_MIN, FILE_MAX)
        start = time.monotonic() - t0
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, MSS)
            s.settimeout(max(1.0, end - time.monotonic() + 5))
            s.connect((args.connect, args.port))
            s.sendall(b"\0" * size)
            s.shutdown(socket.SHUT_WR)
            s.recv(1)  # the sink closes after reading everything: the file has arrived
            s.close()
            with lock:
                print(f"{k} {start:.3f} {time.monotonic() - t0:.3f} {size}", flush=True)
        except OSError as e:
            with lock:
                print(f"{k} {start:.3f} error {e}", flush=True)


def source(args):
    t0 = time.monotonic()
    end = t0 + args.seconds
    lock = threading.Lock()
    threads = []
    for k in range(args.flows):
        rng = random.Random(args.seed * 1000 + k)
        t = threading.Thread(target=user, args=(k, args, rng, t0, end, lock), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout=max(0.0, end - time.monotonic()) + 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["sink", "source"])
    ap.add_argument("--listen")
    ap.add_argument("--connect")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--flows", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mean-off-s", type=float, default=MEAN_OFF_S,
                    help="mean OFF time (RFC 8867: 10 s; the DDL bed's tcpshort regime: 1 s)")
    args = ap.parse_args()
    sink(args) if args.mode == "sink" else source(args)


if __name__ == "__main__":
    main()
