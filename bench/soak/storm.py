#!/usr/bin/env python3
"""Storm: malformed RTSP, RTP and RTCP at a predrop-server's ports while a measured session plays.

Runs the measured session twice against a fresh server each time — once quietly, once under the
storm — with the fixed rate policy at R = 0, and compares predrop-client's per-block CSV: every
block must arrive whole (received == sent) and score the same PSNR in both runs. The storm, from
a few threads on 127.0.0.1 for the whole session:
  - RTSP: connections that send random bytes, truncated and oversized requests, requests with
    bad URLs, methods, CSeq, Session ids and Transport headers, and connections that never read;
  - RTP/RTCP: random datagrams, truncated and forged SRTCP (random auth tags), replays of
    nothing in particular, to the server's RTP and RTCP ports.

  bench/soak/storm.py --server BIN --client BIN --media FILE [--blocks 6]

Prints a per-run line and a verdict; exits non-zero if the storm changed what the session got.
"""
import argparse
import csv
import os
import random
import socket
import subprocess
import sys
import threading
import time

RTSP_GARBAGE = [
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 binary\r\n\r\n",
    b"SETUP x RTSP/1.0\r\nCSeq: 1\r\n\r\n",
    b"SETUP * RTSP/1.0\r\nCSeq: 1\r\n\r\n",
    b"SETUP rtsp:// RTSP/1.0\r\nCSeq: 1\r\n\r\n",
    b"PLAY rtsp://127.0.0.1/storm RTSP/1.0\r\nCSeq: 2\r\nSession: 0123456789ABCDEF\r\n\r\n",
    b"TEARDOWN rtsp://127.0.0.1/storm RTSP/1.0\r\nCSeq: 3\r\nSession: ;;;\r\n\r\n",
    b"DESCRIBE rtsp://127.0.0.1/storm RTSP/1.0\r\nCSeq: 99999999999999999999\r\n\r\n",
    b"SETUP rtsp://127.0.0.1/storm/trackID=0 RTSP/1.0\r\nCSeq: 4\r\nTransport: RTP/AVP;;;client_port=-1-70000\r\n\r\n",
    b"SETUP rtsp://127.0.0.1/storm/trackID=9 RTSP/1.0\r\nCSeq: 5\r\nTransport: RTP/AVP/TCP;interleaved=0-1\r\n\r\n",
    b"GET_PARAMETER rtsp://127.0.0.1/storm RTSP/1.0\r\nCSeq: 6\r\nContent-Length: 100000\r\n\r\nshort",
    b"OPTIONS * RTSP/1.0\r\n" + b"X: " + b"A" * 20000 + b"\r\n\r\n",
    b"A" * 30000,
]


COUNTS = {"rtsp_connections": 0, "datagrams": 0}


def rtsp_storm(port, stop, rng):
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            COUNTS["rtsp_connections"] += 1
            kind = rng.random()
            if kind < 0.5:
                s.sendall(rng.choice(RTSP_GARBAGE))
            else:
                s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2000))))
            if rng.random() < 0.7:
                s.settimeout(0.2)
                try:
                    s.recv(4096)
                except OSError:
                    pass
            s.close()
        except OSError:
            time.sleep(0.01)


def udp_storm(ports, stop, rng):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    while not stop.is_set():
        port = rng.choice(ports)
        n = rng.randint(0, 1400)
        data = bytearray(rng.getrandbits(8) for _ in range(n))
        if n >= 12 and rng.random() < 0.5:
            data[0] = 0x80 | (data[0] & 0x1F)          # looks like RTP/RTCP version 2
            if rng.random() < 0.5:
                data[1] = rng.choice([200, 201, 202, 203, 204, 205, 206])  # RTCP types
        try:
            s.sendto(bytes(data), ("127.0.0.1", port))
            COUNTS["datagrams"] += 1
        except OSError:
            pass
        time.sleep(0.0005)


def run(args, storm, tag):
    rtsp_port = args.port
    rtp_port = args.rtp_port
    csv_path = f"/tmp/predrop-storm-{tag}.csv"
    log = open(f"/tmp/predrop-storm-{tag}-server.log", "w")
    srv = subprocess.Popen(
        [args.server, "--stream", f"storm={args.media}", "--listen", f"127.0.0.1:{rtsp_port}",
         "--rtp-port", str(rtp_port), "--policy", "fixed", "--fixed-rate", "0",
         "--metrics", "127.0.0.1:0", "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT)
    stop = threading.Event()
    threads = []
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", rtsp_port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        if storm:
            rng = random.Random(20261201)
            for i in range(args.threads):
                threads.append(threading.Thread(
                    target=rtsp_storm, args=(rtsp_port, stop, random.Random(rng.random())),
                    daemon=True))
                threads.append(threading.Thread(
                    target=udp_storm, args=([rtp_port, rtp_port + 1], stop,
                                            random.Random(rng.random())), daemon=True))
            for t in threads:
                t.start()
        client = subprocess.run(
            [args.client, f"rtsp://127.0.0.1:{rtsp_port}/storm", "--reference", args.media,
             "--blocks", str(args.blocks), "--csv", csv_path, "--log-level", "warn"],
            capture_output=True, text=True, timeout=120)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=2)
        srv.terminate()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()
    alive = srv.returncode == 0
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    return client.returncode, alive, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--media", required=True)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=18654)
    ap.add_argument("--rtp-port", type=int, default=18700)
    a = ap.parse_args()

    quiet = run(a, False, "quiet")
    loud = run(a, True, "storm")
    ok = True
    for name, (code, alive, rows) in (("quiet", quiet), ("storm", loud)):
        whole = sum(1 for r in rows if r.get("received") == r.get("sent"))
        print(f"storm: {name}: client exit {code}, server exit ok={alive}, blocks {len(rows)}, "
              f"whole {whole}, PSNR " + " ".join(r.get("psnr_db", "?") for r in rows))
        ok = ok and code == 0 and alive and len(rows) == a.blocks and whole == len(rows)
    print(f"storm: sent {COUNTS['rtsp_connections']} hostile RTSP connections and "
          f"{COUNTS['datagrams']} hostile datagrams during the stormy run")
    same = [r.get("psnr_db") for r in quiet[2]] == [r.get("psnr_db") for r in loud[2]]
    ok = ok and same
    print(f"storm: per-block PSNR identical with and without the storm: {same}; "
          f"{'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
