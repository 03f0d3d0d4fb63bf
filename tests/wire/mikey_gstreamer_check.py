#!/usr/bin/env python3
"""Interop: GStreamer's own SDP/MIKEY parser (GstSdp, what rtspsrc uses) reads the MIKEY message
predrop puts in `a=key-mgmt:mikey` and derives the same SRTP key and cipher/auth for every suite.

  mikey_gstreamer_check.py MIKEY_PRINT_BINARY
Runs under /usr/bin/python3 (python3-gi, gir1.2-gst-plugins-base-1.0, installed by
scripts/setup-deps.sh). Exits non-zero on any mismatch.
"""
import subprocess
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstSdp", "1.0")
from gi.repository import Gst, GstSdp  # noqa: E402

EXPECTED = {
    "AES_CM_128_HMAC_SHA1_80": ("aes-128-icm", "hmac-sha1-80"),
    "AES_CM_128_HMAC_SHA1_32": ("aes-128-icm", "hmac-sha1-32"),
    "AEAD_AES_128_GCM": ("aes-128-gcm", "null"),
}


def main():
    Gst.init(None)
    out = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
    failures = 0
    lines = out.split("\n")
    for line in filter(None, lines):
        suite, key_hex, b64 = line.split()
        sdp = ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=predrop\r\nt=0 0\r\n"
               "m=video 0 RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\n"
               f"a=key-mgmt:mikey {b64}\r\n")
        result, msg = GstSdp.SDPMessage.new_from_text(sdp)
        caps = Gst.Caps.new_empty_simple("application/x-srtp")
        ok = result == GstSdp.SDPResult.OK and \
            msg.get_media(0).attributes_to_caps(caps) == GstSdp.SDPResult.OK
        s = caps.get_structure(0)
        key = s.get_value("srtp-key") if ok else None
        got_key = key.extract_dup(0, key.get_size()).hex() if key else None
        got = (s.get_string("srtp-cipher"), s.get_string("srtp-auth"))
        good = ok and got_key == key_hex and got == EXPECTED[suite] and \
            (s.get_string("srtcp-cipher"), s.get_string("srtcp-auth")) == EXPECTED[suite]
        print(f"{suite}: GStreamer reads cipher={got[0]} auth={got[1]} key "
              f"{'matches' if got_key == key_hex else 'DIFFERS'}: {'ok' if good else 'FAILED'}")
        failures += 0 if good else 1
    if len([l for l in lines if l]) != len(EXPECTED):
        print("expected one line per suite")
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
