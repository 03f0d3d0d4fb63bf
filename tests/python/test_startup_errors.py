"""A relay that is not there, a wrong key and a malformed key give a clear error at start-up
(RelayState raises RelayError naming the cause), within the join time-out, without a hang."""

import base64
import os
import sys
import time

import common


def expect_error(what, fn, needle, max_s):
    from predrop.capi import RelayError
    t0 = time.monotonic()
    try:
        fn()
    except RelayError as e:
        took = time.monotonic() - t0
        msg = str(e)
        if needle not in msg:
            print(f"FAIL {what}: the error does not say '{needle}': {msg}")
            return False
        if took > max_s:
            print(f"FAIL {what}: took {took:.1f} s (> {max_s} s)")
            return False
        print(f"ok   {what} ({took:.2f} s): {msg}")
        return True
    print(f"FAIL {what}: no error")
    return False


def main():
    common.require_torch()
    import predrop.torch as pt
    lib = os.environ.get("PREDROP_DDL_CAPI")
    ok = True
    port = common.free_port()
    ok &= expect_error(
        "absent relay",
        lambda: pt.RelayState(1000, relay=f"127.0.0.1:{port}", key="none", library=lib,
                              join_timeout_ms=800),
        "no answer from the relay", 5)
    _, r = common.start_relay("startup", 1)
    try:
        wrong = "a=crypto:1 AEAD_AES_128_GCM inline:" + base64.b64encode(os.urandom(28)).decode()
        ok &= expect_error(
            "wrong key",
            lambda: pt.RelayState(1000, relay=r.address, key=wrong, library=lib,
                                  join_timeout_ms=800),
            "another key", 5)
        ok &= expect_error(
            "malformed key",
            lambda: pt.RelayState(1000, relay=r.address, key="a=crypto:1 NOSUCH inline:xx",
                                  library=lib),
            "job key", 1)
        ok &= expect_error(
            "bad address",
            lambda: pt.RelayState(1000, relay="127.0.0.1", key=r.key, library=lib),
            "relay address", 1)
        # The right key: joins (a job of one worker starts at once), then leaves.
        s = pt.RelayState(1000, relay=r.address, key=r.key, library=lib)
        print(f"ok   right key: rank {s.job.rank} of {s.job.workers}, {s.job.chunks} chunks")
        s.close()
    finally:
        r.stop(timeout=10)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
