#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_rtsp_server and fuzz_metrics_request (tests/fuzz/corpus/).

The server seeds are operation sequences in the encoding fuzz_rtsp_server.cpp decodes (see its
Harness::step()); they walk the paths a fuzzer takes long to find alone: a session played to
its reports, a second address using a foreign session id, a client that never reads, faults.
Run from anywhere: python3 tests/fuzz/make_server_seeds.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

OPEN, HANGUP, REQ, RAW, TIME, HOUSE, RTCP, READ, ARM, QUICK, PACE, FRAME = (0, 1, 2, 4, 5, 6, 7,
                                                                          8, 9, 10, 11, 12)
METHODS = ["OPTIONS", "DESCRIBE", "SETUP", "PLAY", "PAUSE", "TEARDOWN", "GET_PARAMETER",
           "ANNOUNCE", "SET_PARAMETER", "FROB"]
WHOLE = [0, 0]  # feed cuts: the request in one piece


def time(us):
    out = []
    while us > 0:  # one step moves the clock by at most 65535 x 50 us
        n = min(us // 50, 0xFFFF)
        out += [TIME, n >> 8, n & 0xFF]
        us -= n * 50
    return out


def request(client, method, url, session, transport=None, feedback=1, sessions_known=True):
    """url: 0 base, 1 trackID=0, 2 trackID=1; session: 0 none, 1 known #0; transport: None or
    (port index, variant)."""
    out = [REQ, client, METHODS.index(method), url, session]
    if session in (1, 2, 3) and sessions_known:
        out.append(0)  # index of the known session
    if method == "SETUP":
        port, variant = transport[:2]
        out += [port, variant] + list(transport[2:])  # variant 4 (TCP): its channel choice
    else:
        out.append(1)  # no Transport
    out.append(feedback)
    return out + WHOLE


def quick(client, sessions_before):
    # DESCRIBE, SETUP trackID=0 with client_port and feedback, PLAY with the new session.
    out = [QUICK, client] + WHOLE
    out += [1, 0, 0, 1, 1] + WHOLE  # SETUP: url, no session, port 0, client_port, feedback
    out += [0, 1, sessions_before, 1, 1] + WHOLE  # PLAY: base url, known session, ...
    return out


def frame(client, channel, how, data=b"", extra=()):
    """An interleaved frame from a client: how 0/1 RTCP-looking/raw payload, 2 overlong length
    (extra: its two bytes), 3 truncated (extra: the cut byte)."""
    out = [FRAME, client, channel, how, len(data)] + list(data)
    return out + list(extra) + WHOLE


def report(stage, psnr=160):
    return [RTCP, 0, 1, stage, 0x23, 0x28, 100, 100, psnr]


SERVER_SEEDS = {
    # No SRTP (so PDFB reports count): play, reports on three stages, pause, teardown.
    "play-report-teardown": [0] + [OPEN, 0] + quick(0, 0) + [READ, 0] + time(1_000_000) +
    report(0) + time(1_000_000) + report(1, 120) + time(1_000_000) + report(2) + [HOUSE] +
    request(0, "PAUSE", 0, 1) + [READ, 0] + request(0, "TEARDOWN", 0, 1) + [READ, 0],
    # SRTP on: a second address tries the first one's session; the owner's idle session expires.
    "foreign-session": [1] + [OPEN, 0, OPEN, 1] + quick(0, 0) + [READ, 0] +
    request(1, "PLAY", 0, 1) + [READ, 1] + request(1, "TEARDOWN", 0, 1) + [READ, 1] +
    time(5_000_000) + [HOUSE, READ, 0],
    # A client that asks and never reads: paused, then closed.
    "never-reads": [0] + [OPEN, 2] + sum([request(0, "DESCRIBE", 0, 0) for _ in range(20)], []),
    # Faults in each callback kind while two sessions play.
    "faults": [0] + [OPEN, 0, OPEN, 1] + quick(0, 0) + [READ, 0] + quick(1, 1) + [READ, 1] +
    [ARM, 2] + time(200_000) + [ARM, 1] + report(0) + [ARM, 0] + request(0, "OPTIONS", 0, 0) +
    [READ, 0, PACE],
    # Every method with every URL form, no session.
    "methods": [0, OPEN, 0] + sum([request(0, m, u, 0, (0, 1)) + [READ, 0]
                                   for m in METHODS for u in (0, 1, 4, 5)], []),
    # SRTP on, RTP/AVP/TCP interleaved: media as "$" frames on the connection, then client frames
    # on the RTCP channel, an unknown channel, an overlong and a truncated one, between requests.
    "interleaved": [1, OPEN, 0] + request(0, "DESCRIBE", 0, 0) + [READ, 0] +
    request(0, "SETUP", 1, 0, (0, 4, 0)) + [READ, 0] + request(0, "PLAY", 0, 1) + [READ, 0] +
    time(1_100_000) + [READ, 0] + frame(0, 1, 0) + frame(0, 5, 1, b"abc") +
    frame(0, 1, 2, b"", (0x00, 0x10)) + request(0, "OPTIONS", 0, 1) + [READ, 0] +
    time(500_000) + [READ, 0] + frame(0, 1, 3, b"xyz", (1,)) + [HANGUP, 0],
    # Pipelined bytes and garbage on one connection.
    "raw": [0, OPEN, 0, RAW, 0, 60] + list(b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\nGET / HTTP/1.0\r\n\r\n\x00\x01") +
    [0, 0, READ, 0],
}

METRICS_SEEDS = {
    "get": b"\x05\x00GET /metrics HTTP/1.0\r\nHost: predrop\r\n\r\n",
    "curl": b"\x3f\x02GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: curl/7.88\r\nAccept: */*\r\n\r\n",
    "head": b"\x00\x00HEAD / HTTP/1.1\r\n\r\n",
    "post": b"\x01\x04POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    "http2": b"\x08\x00PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "trickle": b"\x40\x00GET /metrics HTTP/1.0\r\n",
    "render-fault": b"\x10\x01GET /metrics HTTP/1.0\n\n",
    "long": b"\x3f\x00GET /" + b"a" * 600 + b" HTTP/1.0\r\n\r\n",
}


def write(dirname, seeds):
    d = os.path.join(HERE, "corpus", dirname)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes(data))


write("fuzz_rtsp_server", SERVER_SEEDS)
write("fuzz_metrics_request", METRICS_SEEDS)
