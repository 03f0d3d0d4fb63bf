"""A rank that loses the relay continues locally (RelayState(on_relay_loss="local"), issue 26
item 7); the fail-cleanly side is test_relay_killed. Two cases, each with two ranks and a relay
SIGKILLed once both ranks have closed stage 10 through it:

- rejoined: a relay restarted at the same address with the same key. Every rank's open stage
  completes with its own values once the relay is silent for 1.5 s (no error reaches
  loss.backward()), the following stages complete at once (close_reason 5), and the rank joins
  the restarted relay's new job and runs 15 more stages through it; the new relay counts both
  joined and chunks received.
- refused: a relay restarted with another key. The ranks keep training locally; their rejoin
  attempts fail with the reason ("no answer ... or it uses another key"), kept in
  rejoin_error; each rank stops after 30 local stages without error.

Functional: no timing is asserted beyond the test's own 90 s bound."""

import os
import re
import sys
import time

import common

WORLD = 2
KILL_AFTER = 10
AFTER_REJOIN = 15
LOCAL_STAGES = 30
SILENCE_MS = 1500
MAX_STAGES = 20000


def rank_main(rank, world, relay_address, key, port, lib, expect_rejoin, queue, progress):
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    import predrop.torch as pt
    torch.set_num_threads(1)
    common.init_gloo(rank, world, port)
    model = DDP(common.SmallCnn.make(seed=3))
    state = pt.RelayState(model.module, relay=relay_address, key=key, rank=rank, model_seed=3,
                          library=lib, relay_silence_ms=SILENCE_MS, join_timeout_ms=1000,
                          start_timeout_ms=20000, on_relay_loss="local", rejoin_every_s=0.5,
                          average="model")
    model.register_comm_hook(state, pt.relay_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    relay_stages = after = 0
    end = time.monotonic() + 80
    result = {"rank": rank, "error": None}
    try:
        for s in range(MAX_STAGES):
            x = torch.rand(16, 1, 28, 28, generator=g)
            y = torch.randint(0, 10, (16,), generator=g)
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            state.report(0.0)
            row = state.last()
            if not row.get("local"):
                relay_stages += 1
                if state.rejoins:
                    after += 1
            if relay_stages == KILL_AFTER and rank in progress:
                progress[rank].set()
            if expect_rejoin and after >= AFTER_REJOIN:
                break
            if not expect_rejoin and state.local_stages >= LOCAL_STAGES and state.rejoin_error:
                break
            if time.monotonic() > end:
                result["error"] = "the test's time bound passed"
                break
    except Exception as e:  # noqa: BLE001 - reported to the test
        result["error"] = f"stage {s}: {e}"
    result.update(stages=s + 1, relay_stages=relay_stages, after=after,
                  local_stages=state.local_stages, rejoins=state.rejoins,
                  lost_reason=state.lost_reason, rejoin_error=state.rejoin_error)
    state.close()
    queue.put(result)


def run_case(name, same_key):
    import torch.multiprocessing as mp
    from predrop import relay
    out, r = common.start_relay(name, WORLD, policy="history", stage_deadline_ms=400)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    progress = {k: ctx.Event() for k in range(WORLD)}
    procs = common.spawn_ranks(WORLD, rank_main,
                               (r.address, r.key, common.free_port(),
                                os.environ.get("PREDROP_DDL_CAPI"), same_key, queue, progress))
    ok = all(progress[k].wait(60) for k in progress)
    if not ok:
        print(f"FAIL {name}: the ranks did not reach stage {KILL_AFTER}")
    r.kill()
    # The restarted relay: same address; the same key (rejoined) or a fresh one (refused).
    r2 = relay.start(out, WORLD, key=r.key if same_key else None, name="relay-restarted",
                     listen=r.address, policy="history", stage_deadline_ms=400)
    codes = common.join_ranks(procs, 90)
    results = sorted(common.drain(queue, WORLD), key=lambda x: x["rank"])
    r2.stop(timeout=5 if same_key else 1)
    ok &= codes == [0] * WORLD and len(results) == WORLD
    for x in results:
        print(f"{name}: {x}")
        ok &= x["error"] is None and x["local_stages"] > 0
        ok &= x["lost_reason"] is not None and "relay is gone" in x["lost_reason"]
        if same_key:
            ok &= x["rejoins"] == 1 and x["after"] >= AFTER_REJOIN
        else:
            ok &= x["rejoins"] == 0 and x["rejoin_error"] is not None
            ok &= "another key" in x["rejoin_error"]
    m = re.search(r"(\d+) joined.*chunks (\d+) received", r2.log())
    print(f"{name}: restarted relay: {m.group(0) if m else 'no job summary'}")
    if same_key:
        ok &= m is not None and int(m.group(1)) == WORLD and int(m.group(2)) > 0
    print(f"{name}: {'ok' if ok else 'FAIL'}")
    return ok


def main():
    common.require_torch()
    ok = run_case("lost-rejoined", True)
    ok &= run_case("lost-refused", False)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
