"""Four ranks through one relay on loopback (issue 26 item 2), functional only: every rank
completes the job's stages without error (fixed R = 0.25 with random discard, so the relay's
pre-discard acts on four peers), the relay ran a job of four workers, all four joined and chunks
arrived, and the ranks learn something (test accuracy above chance, 0.1, by a margin: > 0.3 after 40 stages).
No timing is checked."""

import re
import sys

import common

STAGES = 40
WORLD = 4
THRESHOLD = 0.30


def main():
    common.require_torch()
    common.require_fmnist()
    ok, _, r, codes, results = common.train_job(
        "four-ranks", WORLD, STAGES,
        dict(policy="fixed", fixed_rate=0.25, discard="random", missing_fill="own"),
        dict(average="model"), THRESHOLD)
    ok &= all(s["stages"] == STAGES for s in results)
    log = r.log()
    m = re.search(r"job over after \d+ stages: (\d+) joined.*chunks (\d+) received", log)
    print(f"relay: {m.group(0) if m else 'no job summary in its log'}")
    ok &= "for 4 workers" in log and m is not None
    ok &= m is not None and int(m.group(1)) == WORLD and int(m.group(2)) > 0
    if not ok:
        print(f"FAIL: exit codes {codes}\n{log[-3000:]}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
