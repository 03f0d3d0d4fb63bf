"""The relay killed (SIGKILL) mid-run: every rank's open stage ends within the peer's relay
silence bound (1.5 s here) and loss.backward() raises a RelayError that says the relay is gone;
every rank process exits (code 3) instead of hanging."""

import os
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
    from predrop import fmnist_job, relay
    out = common.out_dir("killed")
    r = relay.start(out, WORLD, server=os.environ.get("PREDROP_SERVER"), policy="history")
    cfg = dict(backend="relay", stages=100000, relay=r.address, key=r.key,
               gloo_port=common.free_port(), library=os.environ.get("PREDROP_DDL_CAPI"),
               train_subset=3000, test_subset=500, eval_every=0, print_rows=False,
               relay_silence_ms=SILENCE_MS)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    progress = {KILL_AT: ctx.Event()}
    procs = [ctx.Process(target=fmnist_job.run_rank, args=(k, WORLD, cfg, queue, progress))
             for k in range(WORLD)]
    for p in procs:
        p.start()
    ok = True
    if not progress[KILL_AT].wait(60):
        print("FAIL: rank 0 did not reach the stage to kill the relay at")
        ok = False
    r.kill()
    killed_at = time.monotonic()
    for p in procs:
        p.join(max(0.1, killed_at + 30 - time.monotonic()))
    codes = []
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
            codes.append(None)
        else:
            codes.append(p.exitcode)
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
