#!/usr/bin/env python3
"""A hostile neighbour for bench/perf/webrtc.sh (FLOOD=1): while the scripted viewers play, it
POSTs WHEP offers of its own, passes one valid ICE check per offer (so that its DTLS reaches the
session's association on the worker's handshake thread), and then sends ClientHello-shaped DTLS
datagrams from that address, forged STUN checks and DTLS from strangers, at about RATE datagrams
per second for SECONDS. It prints what it sent; the server's counters say what was refused and
dropped, and the load tool's window says whether the playing viewers noticed (late stages).
  webrtc_flood.py METRICS_PORT STREAM DELAY_S SECONDS [RATE]"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/integration"))
import webrtc_forged as forged  # noqa: E402  (the offer, the check and the metric reader)

HELLO = bytes([22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10]) + bytes(16)


def main():
    port, stream = sys.argv[1], sys.argv[2]
    delay, seconds = float(sys.argv[3]), float(sys.argv[4])
    rate = float(sys.argv[5]) if len(sys.argv) > 5 else 20000.0
    base = "http://127.0.0.1:%s" % port
    time.sleep(delay)
    counters = ("predrop_webrtc_dtls_queue_full_total", "predrop_webrtc_dtls_strangers_total",
                "predrop_webrtc_stun_refused_total", "predrop_webrtc_dtls_failed_total")
    before = {c: forged.metric(base, c) for c in counters}
    sent = {"offers": 0, "dtls from a verified address": 0, "forged STUN": 0,
            "stranger DTLS": 0}
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.setblocking(False)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        # A new verified flooder every 0.5 s (its session fails on the garbage and ends).
        ufrag, pwd, media_port = forged.offer(base, stream)
        sent["offers"] += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1.0)
        s.sendto(forged.check(ufrag, pwd), ("127.0.0.1", media_port))
        try:
            s.recvfrom(2048)
        except socket.timeout:
            pass
        s.setblocking(False)
        slot_end = min(end, time.monotonic() + 0.5)
        forged_check = forged.check(ufrag, "guessed-password-0123456")
        while time.monotonic() < slot_end:
            t0 = time.monotonic()
            for _ in range(100):
                for sock, data, kind in ((s, HELLO, "dtls from a verified address"),
                                         (stranger, HELLO, "stranger DTLS"),
                                         (stranger, forged_check, "forged STUN")):
                    try:
                        sock.sendto(data, ("127.0.0.1", media_port))
                        sent[kind] += 1
                    except BlockingIOError:
                        pass
            pause = 300 / rate - (time.monotonic() - t0)
            if pause > 0:
                time.sleep(pause)
        s.close()
    after = {c: forged.metric(base, c) for c in counters}
    print("flood: sent " + ", ".join("%s %d" % kv for kv in sent.items()))
    print("flood: server counted " + ", ".join(
        "%s +%d" % (c.replace("predrop_webrtc_", ""), after[c] - before[c]) for c in counters))


if __name__ == "__main__":
    main()
