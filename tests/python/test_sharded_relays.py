"""Sharded relays (issue 26 item 6): two relay processes with one job key, each rank's gradient
split into two contiguous slices, slice k through relay k (RelayState(relay="a,b")). Training
completes on two ranks (every stage, no error, test accuracy above 0.5 after 80 stages), each
relay carries a share of the chunks (between 30 % and 70 % of all), and every stage row of the
ranks counts the chunks of both slices (the model's whole gradient)."""

import csv
import os
import re
import sys

import common

STAGES = 80
WORLD = 2
THRESHOLD = 0.50


def received(log):
    m = re.search(r"job over after \d+ stages: (\d+) joined.*chunks (\d+) received", log)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def main():
    common.require_torch()
    common.require_fmnist()
    import torch.multiprocessing as mp
    from predrop import fmnist_job, relay
    out = common.out_dir("sharded")
    relay_cfg = dict(policy="history", stage_deadline_ms=400)
    r0 = relay.start(out, WORLD, **relay_cfg)
    try:
        r1 = relay.start(out, WORLD, key=r0.key, name="relay1", **relay_cfg)
    except RuntimeError:
        r0.kill()
        raise
    cfg = common.rank_config(r0, relay=f"{r0.address},{r1.address}", stages=STAGES,
                             train_subset=6000, test_subset=1000, eval_every=0, out=out)
    queue = mp.get_context("spawn").Queue()
    try:
        codes = common.run_ranks(WORLD, fmnist_job.run_rank, (cfg, queue), timeout=100)
        results = sorted(common.drain(queue, WORLD), key=lambda x: x["rank"])
    finally:
        rc = (r0.stop(timeout=10), r1.stop(timeout=10))
    print(f"relay exits {rc}")
    ok = codes == [0] * WORLD and len(results) == WORLD
    for s in results:
        print(f"rank {s['rank']}: {s['stages']} stages, accuracy {s['final_acc']}, "
              f"error {s['error']}")
        ok &= (s["error"] is None and s["stages"] == STAGES and s["final_acc"] is not None
               and s["final_acc"] > THRESHOLD)
    (j0, c0), (j1, c1) = received(r0.log()), received(r1.log())
    print(f"relay 0: {j0} joined, {c0} chunks; relay 1: {j1} joined, {c1} chunks")
    ok &= j0 == WORLD and j1 == WORLD and c0 + c1 > 0
    ok &= 0.3 <= c0 / max(1, c0 + c1) <= 0.7
    # The ranks' rows count both slices' chunks: the model's 20 490 float32 in 1024-byte chunks
    # (256 elements) are 81 chunks in one job, 41 + 41 in two (each slice ends in a short one).
    from predrop.torch import shard_bounds
    want = sum(-(-(hi - lo) // 256) for lo, hi in shard_bounds(20490, 2))
    with open(os.path.join(out, "rank-1.csv")) as f:
        chunks = {int(x["chunks"]) for x in csv.DictReader(f) if x["chunks"]}
    print(f"rank 1: chunks per stage {sorted(chunks)}, expected {want}")
    ok &= chunks == {want}
    if not ok:
        print(f"FAIL: exit codes {codes}\n{r0.log()[-2000:]}\n{r1.log()[-2000:]}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
