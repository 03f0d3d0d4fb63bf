#!/usr/bin/env python3
"""RTSP soak: N set-up/PLAY/TEARDOWN cycles against one predrop-server, RSS before and after.

Each cycle opens a TCP connection, sends DESCRIBE, SETUP (track 0, UDP client ports nobody
listens on), PLAY and TEARDOWN, checks every answer is 200, and closes. The server's resident set
size is read from /proc/<pid>/status after a warm-up and at the end; the run fails if it grew by
more than --rss-tolerance (default 5 %). Under the asan-ubsan build, LeakSanitizer reports any
leak at the server's exit (the caller checks its exit status and log).

  bench/soak/soak.py --server BIN --media FILE [--cycles 10000] [--port 18554]

Traffic stays on 127.0.0.1. Prints one summary line and exits non-zero on any failure.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Rtsp:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.cseq = 0
        self.buf = b""

    def request(self, method, url, headers=()):
        self.cseq += 1
        lines = [f"{method} {url} RTSP/1.0", f"CSeq: {self.cseq}", *headers, "", ""]
        self.sock.sendall("\r\n".join(lines).encode())
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"{method}: connection closed")
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        fields = {}
        status_line, *header_lines = head.decode(errors="replace").split("\r\n")
        for h in header_lines:
            k, _, v = h.partition(":")
            fields[k.strip().lower()] = v.strip()
        length = int(fields.get("content-length", "0"))
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"{method}: body cut short")
            rest += chunk
        self.buf = rest[length:]
        status = int(status_line.split()[1])
        if status != 200:
            raise RuntimeError(f"{method} answered {status_line}")
        return fields

    def close(self):
        self.sock.close()


def cycle(port, n):
    url = f"rtsp://127.0.0.1:{port}/soak"
    c = Rtsp(port)
    try:
        c.request("DESCRIBE", url, ["Accept: application/sdp"])
        client = 40000 + 2 * (n % 5000)
        f = c.request("SETUP", url + "/trackID=0",
                      [f"Transport: RTP/SAVP/UDP;unicast;client_port={client}-{client + 1}"])
        session = f["session"].split(";")[0]
        c.request("PLAY", url, [f"Session: {session}", "Range: npt=0-"])
        c.request("TEARDOWN", url, [f"Session: {session}"])
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--media", required=True)
    ap.add_argument("--cycles", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--port", type=int, default=18554)
    ap.add_argument("--rss-tolerance", type=float, default=0.05)
    ap.add_argument("--log", default="/tmp/predrop-soak-server.log")
    a = ap.parse_args()

    log = open(a.log, "w")
    srv = subprocess.Popen(
        [a.server, "--stream", f"soak={a.media}", "--listen", f"127.0.0.1:{a.port}",
         "--metrics", "127.0.0.1:0", "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", a.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        start = time.monotonic()
        for n in range(a.warmup):
            cycle(a.port, n)
        rss_before = rss_kib(srv.pid)
        for n in range(a.warmup, a.warmup + a.cycles):
            cycle(a.port, n)
        rss_after = rss_kib(srv.pid)
        elapsed = time.monotonic() - start
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            code = srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            code = -9
        log.close()
    growth = (rss_after - rss_before) / rss_before
    ok = growth <= a.rss_tolerance and code == 0
    print(f"soak: {a.cycles} cycles (+{a.warmup} warm-up) in {elapsed:.1f} s, "
          f"RSS {rss_before} -> {rss_after} KiB ({100 * growth:+.2f} %), server exit {code}: "
          f"{'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
