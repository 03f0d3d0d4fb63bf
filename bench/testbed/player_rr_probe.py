#!/usr/bin/env python3
"""Delay probe for bench/testbed/run-player-rr.sh: one small UDP datagram every 100 ms from the
sender namespace to an echo in the receiver namespace and back, so the probe crosses the tbf
bottleneck once (sender -> receiver, where the stream's queue is) and reports its round trip.

  player_rr_probe.py echo IP PORT           (receiver ns) echo every datagram back
  player_rr_probe.py send IP PORT SECONDS   (sender ns) print one RTT in ms per line, 'lost' on timeout
"""
import socket
import struct
import sys
import time


def echo(ip, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((ip, port))
    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(data, peer)


def send(ip, port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.1)
    end = time.monotonic() + seconds
    seq = 0
    pending = {}
    next_send = time.monotonic()
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_send:
            s.sendto(struct.pack("!Id", seq, now), (ip, port))
            pending[seq] = now
            seq += 1
            next_send += 0.1
        try:
            data, _ = s.recvfrom(2048)
            got, sent = struct.unpack("!Id", data[:12])
            pending.pop(got, None)
            print("%.3f %.2f" % (sent, (time.monotonic() - sent) * 1000.0), flush=True)
        except socket.timeout:
            pass
        for k in [k for k, sent_at in pending.items() if time.monotonic() - sent_at > 1.0]:
            print("%.3f lost" % pending.pop(k), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "echo":
        echo(sys.argv[2], int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
