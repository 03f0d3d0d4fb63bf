"""The relay killed (SIGKILL) mid-run: every rank's open stage ends within the peer's relay
silence bound (1.5 s here) and loss.backward() raises a RelayError that says the relay is gone;
every rank process exits (code 3) instead of hanging."""

import sys
import time

import common

WORLD = 2
KILL_AT = 15
SILENCE_MS = 1500


def main():
    common.require_torch()
    common.require_fmnist()
    import torch.multiprocessing as mp
    from predrop import fmnist_job
    _, r = common.start_relay("killed", WORLD, policy="history")
    cfg = common.rank_config(r, stages=100000, train_subset=3000, test_subset=500, eval_every=0,
                             relay_silence_ms=SILENCE_MS)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    progress = {KILL_AT: ctx.Event()}
    procs = common.spawn_ranks(WORLD, fmnist_job.run_rank, (cfg, queue, progress))
    ok = True
    if not progress[KILL_AT].wait(60):
        print("FAIL: rank 0 did not reach the stage to kill the relay at")
        ok = False
    r.kill()
    killed_at = time.monotonic()
    codes = common.join_ranks(procs, max(0.1, killed_at + 30 - time.monotonic()))
    took = time.monotonic() - killed_at
    results = common.drain(queue, WORLD)
    for s in sorted(results, key=lambda x: x["rank"]):
        print(f"rank {s['rank']}: {s['stages']} stages done, failed in stage "
              f"{s.get('failed_stage')} after {s.get('fail_after_s', -1):.2f} s: {s['error']}")
        ok &= s["error"] is not None and "relay is gone" in s["error"]
        ok &= s.get("fail_after_s", 99) < SILENCE_MS / 1000 + 1.5
    print(f"rank exit codes {codes}, all ended {took:.1f} s after the kill")
    ok &= codes == [3] * WORLD and len(results) == WORLD
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
