#!/usr/bin/env python3
"""What a stranger gets from predrop's WebRTC port (docs/webrtc.md): POSTs a WHEP offer of its own
(so the server has a session and an ICE ufrag to name), then sends, from fresh UDP sockets,
  1. a Binding request naming the session's ufrag but keyed with a guessed password (forged),
  2. a DTLS ClientHello-shaped datagram from an address no valid check came from,
and expects no answer to either, and both counted in /metrics (predrop_webrtc_stun_refused_total,
predrop_webrtc_dtls_strangers_total). Then a correctly keyed check must be answered, so that the
silence above is a refusal and not a dead port. Last, a flood: 3000 ClientHello-shaped datagrams
from an address that passed a valid check (they do reach the session's DTLS, on the worker's
handshake thread, docs/webrtc.md "Limits"), after which a second session's check is answered
at once and /metrics still serves; what the bounded queue dropped is counted
(predrop_webrtc_dtls_queue_full_total) and printed.
  webrtc_forged.py METRICS_PORT STREAM"""
import hashlib
import hmac
import os
import re
import socket
import struct
import sys
import urllib.request
import zlib

OFFER = ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
         "m=video 9 UDP/TLS/RTP/SAVPF 96 102\r\nc=IN IP4 0.0.0.0\r\na=ice-ufrag:frg1\r\n"
         "a=ice-pwd:forgerpassword0123456789\r\na=fingerprint:sha-256 AA:BB\r\n"
         "a=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtpmap:96 VP8/90000\r\n"
         "a=rtpmap:102 H264/90000\r\na=fmtp:102 packetization-mode=1;profile-level-id=42e01f\r\n")


def attr(kind, value):
    return struct.pack("!HH", kind, len(value)) + value + b"\0" * ((4 - len(value) % 4) % 4)


def check(ufrag, password):
    """A Binding request as a browser sends it (RFC 8445 7.1), keyed with `password`."""
    tid = os.urandom(12)
    body = (attr(0x0006, (ufrag + ":frg1").encode()) + attr(0x0024, struct.pack("!I", 1))
            + attr(0x802A, os.urandom(8)) + attr(0x0025, b""))
    head = lambda length: struct.pack("!HHI", 1, length, 0x2112A442) + tid
    msg = head(len(body) + 24) + body
    msg += attr(0x0008, hmac.new(password.encode(), msg, hashlib.sha1).digest())
    msg = head(len(msg) - 20 + 8) + msg[20:]
    return msg + attr(0x8028, struct.pack("!I", (zlib.crc32(msg) ^ 0x5354554E) & 0xFFFFFFFF))


def answered(datagram, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    s.sendto(datagram, ("127.0.0.1", port))
    try:
        return s.recvfrom(2048)[0]
    except socket.timeout:
        return None
    finally:
        s.close()


def metric(base, name):
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    return int(re.search(r"^%s (\d+)$" % name, text, re.M).group(1))


def offer(base, stream):
    """POSTs our offer; the session's ufrag, pwd and port from the answer."""
    req = urllib.request.Request(base + "/%s/whep" % stream, data=OFFER.encode(),
                                 method="POST", headers={"Content-Type": "application/sdp"})
    answer = urllib.request.urlopen(req).read().decode()
    return (re.search(r"a=ice-ufrag:(\S+)", answer).group(1),
            re.search(r"a=ice-pwd:(\S+)", answer).group(1),
            int(re.search(r"m=video (\d+)", answer).group(1)))


def flood(base, stream, hello):
    """3000 DTLS datagrams from a verified address; a second session must not notice."""
    ufrag, pwd, port = offer(base, stream)
    other_ufrag, other_pwd, other_port = offer(base, stream)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    s.sendto(check(ufrag, pwd), ("127.0.0.1", port))
    assert s.recvfrom(2048)[0][:2] == b"\x01\x01", "the flooder's check was not answered"
    full0 = metric(base, "predrop_webrtc_dtls_queue_full_total")
    s.setblocking(False)
    sent = 0
    for _ in range(3000):
        try:
            s.sendto(hello, ("127.0.0.1", port))
            sent += 1
        except BlockingIOError:
            pass
    s.close()
    good = answered(check(other_ufrag, other_pwd), other_port)
    assert good is not None and good[:2] == b"\x01\x01", "a check was not answered after the flood"
    full1 = metric(base, "predrop_webrtc_dtls_queue_full_total")
    print("webrtc forged: flood of %d DTLS datagrams from a verified address: %d dropped at the"
          " handshake queue; the other session's check answered" % (sent, full1 - full0))


def main():
    base = "http://127.0.0.1:%s" % sys.argv[1]
    ufrag, pwd, port = offer(base, sys.argv[2])
    stun0 = metric(base, "predrop_webrtc_stun_refused_total")
    dtls0 = metric(base, "predrop_webrtc_dtls_strangers_total")
    assert answered(check(ufrag, "guessed-password-0123456"), port) is None, "forged check answered"
    hello = bytes([22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10]) + bytes(16)
    assert answered(hello, port) is None, "a stranger's DTLS was answered"
    stun1 = metric(base, "predrop_webrtc_stun_refused_total")
    dtls1 = metric(base, "predrop_webrtc_dtls_strangers_total")
    assert stun1 == stun0 + 1, "forged STUN not counted (%d -> %d)" % (stun0, stun1)
    assert dtls1 == dtls0 + 1, "stranger DTLS not counted (%d -> %d)" % (dtls0, dtls1)
    good = answered(check(ufrag, pwd), port)
    assert good is not None and good[:2] == b"\x01\x01", "a valid check was not answered"
    print("webrtc forged: ok (forged STUN and stranger DTLS refused and counted; valid check answered)")
    flood(base, sys.argv[2], hello)


if __name__ == "__main__":
    main()
