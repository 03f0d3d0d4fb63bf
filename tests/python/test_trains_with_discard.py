"""With pre-discard (policy fixed, R = 0.25 of every peer's aggregate, priority discard, missing
chunks zero) the CNN still trains: test accuracy above 60 % after 150 stages on two ranks (from
about 10 %), the relay discarding about a quarter of the chunks of every stage."""

import csv
import os
import sys

import common

STAGES = 150
WORLD = 2
RATE = 0.25
THRESHOLD = 0.60


def main():
    common.require_torch()
    common.require_fmnist()
    out = common.out_dir("discard")
    ok, out, r, codes, _ = common.train_job(
        "discard", WORLD, STAGES,
        dict(policy="fixed", fixed_rate=RATE, trace_csv=os.path.join(out, "relay-trace.csv")), {},
        THRESHOLD)
    # What the peers saw: about RATE of the chunks not sent, and filled.
    with open(os.path.join(out, "rank-0.csv")) as f:
        rows = list(csv.DictReader(f))
    rates = [float(x["R"]) for x in rows]
    mean_r = sum(rates) / max(1, len(rates))
    filled = sum(int(x["filled"]) for x in rows)
    print(f"rank 0: mean observed R {mean_r:.3f}, {filled} chunks filled")
    ok &= abs(mean_r - RATE) < 0.03 and filled > 0
    if not ok:
        print(f"FAIL: exit codes {codes}\n{r.log()[-3000:]}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
