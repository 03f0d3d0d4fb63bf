"""At R = 0 (policy fixed, fixed_rate 0) the relay hook's averaged gradients are allclose to
DDP's default all-reduce over gloo, on the same batches, for every rank and stage."""

import os
import sys

import common

STAGES = 6
WORLD = 2


def rank_main(rank, world, relay_address, key, port, lib, queue):
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    import predrop.torch as pt
    torch.set_num_threads(1)
    common.init_gloo(rank, world, port)
    ref = DDP(common.SmallCnn.make(seed=3))
    mine = DDP(common.SmallCnn.make(seed=3))
    state = pt.RelayState(mine.module, relay=relay_address, key=key, rank=rank, model_seed=3,
                          library=lib, relay_silence_ms=10000)
    mine.register_comm_hook(state, pt.relay_hook)
    g = torch.Generator().manual_seed(100 + rank)
    worst = 0.0
    try:
        for s in range(STAGES):
            x = torch.rand(16, 1, 28, 28, generator=g)
            y = torch.randint(0, 10, (16,), generator=g)
            for m in (ref, mine):
                m.zero_grad()
                F.cross_entropy(m(x), y).backward()
            for a, b in zip(ref.parameters(), mine.parameters()):
                if not torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-6):
                    d = (a.grad - b.grad).abs().max().item()
                    queue.put((rank, f"stage {s}: gradient differs by {d:g}"))
                    return
                worst = max(worst, (a.grad - b.grad).abs().max().item())
            row = state.last()
            if row["R"] != 0.0 or row["filled"] != 0 or row["close_reason"] != 0:
                queue.put((rank, f"stage {s}: not a complete R = 0 stage: {row}"))
                return
            # The stage's timeline (one clock, in order): hook, submit, the peer's thread, the
            # average's chunks, the close, the callback.
            t = [row[k] for k in ("hook_us", "submit_us", "begin_us", "first_chunk_us",
                                  "last_chunk_us", "closed_us", "callback_us")]
            if min(t) <= 0 or t != sorted(t) or row["uplink_sent_us"] < row["begin_us"]:
                queue.put((rank, f"stage {s}: timeline out of order: {t}"))
                return
            # The same SGD step on both keeps them on the same parameters.
            with torch.no_grad():
                for a, b in zip(ref.parameters(), mine.parameters()):
                    a -= 0.1 * a.grad
                    b -= 0.1 * a.grad
            state.report(0.0)
        queue.put((rank, f"ok max |diff| {worst:g} over {STAGES} stages"))
    finally:
        state.close()


def main():
    common.require_torch()
    import torch.multiprocessing as mp
    _, r = common.start_relay("allclose", WORLD, policy="fixed", fixed_rate=0.0,
                              stage_deadline_ms=5000)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    try:
        codes = common.run_ranks(WORLD, rank_main,
                                 (r.address, r.key, common.free_port(),
                                  os.environ.get("PREDROP_DDL_CAPI"), queue), timeout=90)
        results = common.drain(queue, WORLD)
    finally:
        rc = r.stop(timeout=10)
    for rank, msg in sorted(results):
        print(f"rank {rank}: {msg}")
    ok = codes == [0] * WORLD and len(results) == WORLD and all(
        m.startswith("ok") for _, m in results)
    if not ok:
        print(f"FAIL: exit codes {codes}, relay exit {rc}\n{r.log()[-3000:]}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
