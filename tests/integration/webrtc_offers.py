#!/usr/bin/env python3
"""A flood of WHEP offers and hostile ones against a running predrop-server (docs/webrtc.md
"Limits"), over real HTTP on its metrics listener. The server runs with
max_sessions_per_address = LIMIT. Checked, in order:
  1. 3 x LIMIT valid offers from one address, back to back: exactly LIMIT are 201 Created with a
     Location, the rest 503 naming the per-address limit;
  2. hostile offers (empty, binary, no ICE credentials, no fingerprint, no video, only codecs it
     cannot send, an offer over max_body_bytes, a wrong Content-Length): each a 4xx, and none
     takes a session (a valid one is still 503 afterwards);
  3. 40 connections that send half a request head and stall: after the request deadline they are
     closed, and a normal request is answered again (a stalled client cannot hold the listener);
  4. DELETE of every created session: 200; again: 404; an unknown one: 404;
  5. then a valid offer is 201 again (the limit counts live sessions only), and /metrics still
     answers with the refusals counted.
  webrtc_offers.py METRICS_PORT STREAM LIMIT"""
import http.client
import re
import socket
import sys
import time

VALID = ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
         "m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=ice-ufrag:frg1\r\n"
         "a=ice-pwd:offerpassword0123456789\r\n"
         "a=fingerprint:sha-256 " + ":".join(["AB"] * 32) + "\r\n"
         "a=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
         "a=rtpmap:96 VP8/90000\r\n")


def without(line_start):
    return "".join(l + "\r\n" for l in VALID.split("\r\n") if l and not l.startswith(line_start))


HOSTILE = {
    "empty": b"",
    "binary": bytes(range(256)) * 8,
    "no ice credentials": without("a=ice-").encode(),
    "no fingerprint": without("a=fingerprint").encode(),
    "no video": VALID.replace("m=video", "m=audio").replace("VP8/90000", "opus/48000/2").encode(),
    "only codecs it cannot send": VALID.replace("VP8/90000", "AV2/90000").encode(),
    "not sdp at all": b"GET / HTTP/1.1\r\n\r\n" * 20,
    "over max_body_bytes": (VALID + "a=x-padding:" + "z" * 70000 + "\r\n").encode(),
}


def post(port, stream, body, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"Content-Type": "application/sdp"}
    h.update(headers or {})
    c.request("POST", "/%s/whep" % stream, body=body, headers=h)
    r = c.getresponse()
    out = (r.status, r.getheader("Location"), r.read().decode(errors="replace"))
    c.close()
    return out


def delete(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("DELETE", path)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, text


def main():
    port, stream, limit = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])

    # 1. The flood.
    results = [post(port, stream, VALID) for _ in range(3 * limit)]
    created = [loc for status, loc, _ in results if status == 201]
    refused = [body for status, _, body in results if status == 503]
    assert len(created) == limit, "%d created of %d offers (limit %d): %s" % (
        len(created), len(results), limit, [s for s, _, _ in results])
    assert len(refused) == 2 * limit, [s for s, _, _ in results]
    assert all("limit" in b for b in refused), refused[:1]
    assert all(loc and loc.startswith("/%s/whep/" % stream) for loc in created), created

    # 2. Hostile offers: a 4xx each, and no session taken.
    for name, body in HOSTILE.items():
        status, loc, text = post(port, stream, body)
        assert 400 <= status < 500, "%s: %d %s" % (name, status, text[:120])
        assert loc is None, "%s got a session: %s" % (name, loc)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.putrequest("POST", "/%s/whep" % stream)
    c.putheader("Content-Length", "100")  # promises more than it sends, then goes quiet
    c.endheaders()
    c.send(b"v=0\r\n")
    c.sock.settimeout(15)
    try:
        r = c.getresponse()
        r.read()
        assert r.status >= 400, "a short body was answered %d" % r.status
    except (ConnectionError, http.client.RemoteDisconnected, socket.timeout):
        pass  # closed at the deadline: also a refusal
    c.close()
    assert post(port, stream, VALID)[0] == 503, "a hostile offer freed or took a slot"

    # 3. Stalled request heads.
    stalled = []
    for _ in range(40):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /%s/whep HTTP/1.1\r\nHost: x\r\n" % stream.encode())
        stalled.append(s)
    deadline = time.monotonic() + 15
    while True:
        try:
            if metrics(port)[0] == 200:
                break
        except (ConnectionError, http.client.HTTPException, socket.timeout):
            pass
        assert time.monotonic() < deadline, "the listener stayed blocked by stalled clients"
        time.sleep(0.5)
    for s in stalled:
        s.close()

    # 4. DELETE.
    for loc in created:
        assert delete(port, loc) == 200, loc
        assert delete(port, loc) == 404, loc
    assert delete(port, "/%s/whep/NOSUCHSESSION" % stream) == 404

    # 5. Freed, and still serving.
    status, loc, _ = post(port, stream, VALID)
    assert status == 201 and loc, "a slot was not freed by DELETE (%d)" % status
    assert delete(port, loc) == 200
    status, text = metrics(port)
    assert status == 200

    def counter(name):
        m = re.search(r"^%s (\d+)$" % name, text, re.M)
        assert m, "no %s in /metrics" % name
        return int(m.group(1))

    assert counter("predrop_webrtc_offers_refused_total") >= 2 * limit + 1
    assert counter("predrop_metrics_requests_timed_out_total") >= 1
    assert counter("predrop_metrics_connections_refused_total") >= 40 - 32
    print("webrtc offers: ok (%d of %d created at the limit, %d hostile offers refused, "
          "40 stalled heads timed out, every slot freed by DELETE)"
          % (limit, 3 * limit, len(HOSTILE) + 1))


if __name__ == "__main__":
    main()
