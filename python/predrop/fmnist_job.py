"""One rank of a Fashion-MNIST training job with DDP, gradients averaged either through the
predrop relay (``backend="relay"``, the hook of predrop.torch) or by DDP's own all-reduce over
gloo (``backend="gloo"``). Used by python/examples/train_fmnist.py and tests/python.

Every rank: the same seeded model and probe batch, the rank-th strided shard of a seeded subset
of the training set, its own seeded batches, SGD. gloo serves the rendezvous and DDP's start-up
broadcast (and, for backend gloo, the all-reduce). Every rank evaluates the same test subset at
the same stages, so that no rank becomes a straggler the relay's deadline leaves out.
"""

import csv
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from . import fmnist

COLUMNS = ["stage", "rank", "R", "L_ms", "loss", "probe_loss", "P", "test_acc", "close_reason",
           "received", "announced", "filled", "partial", "chunks", "lost", "deadline_ms",
           "stage_ms", "wall_s", "residual_norm",
           # The stage's timeline, CLOCK_MONOTONIC us (docs/ddl-torch.md "Where a stage's time
           # goes"): the loop's own points, then the hook's and the relay peer's.
           "iter_us", "backward_us", "backward_end_us", "step_end_us", "hook_us", "submit_us",
           "begin_us", "uplink_sent_us", "pdsc_us", "first_chunk_us", "last_chunk_us",
           "closed_us", "callback_us", "done_us"]

TIMELINE_HOOK = ("hook_us", "submit_us", "begin_us", "uplink_sent_us", "pdsc_us",
                 "first_chunk_us", "last_chunk_us", "closed_us", "callback_us", "done_us")


def now_us():
    """CLOCK_MONOTONIC in us, the clock of the relay's and the peer's timelines."""
    return time.monotonic_ns() // 1000


class TimedAllreduce:
    """gloo's all-reduce as a comm hook that notes when the stage's first bucket reached it and
    when the last all-reduce completed (``timeline=True`` with backend gloo only: the default
    run uses DDP's built-in all-reduce, which has no Python in its path)."""

    def __init__(self):
        self.hook_us = 0
        self.done_us = 0

    @staticmethod
    def hook(state, bucket):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        if bucket.index() == 0:
            state.hook_us = now_us()

        def done(fut):
            state.done_us = now_us()
            return fut.value()
        return default_hooks.allreduce_hook(None, bucket).then(done)


def make_model(seed):
    """The small CNN (20 490 parameters): two 5x5 conv layers, two linear layers."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10))


def perturb_model(model, eps, seed):
    """Multiplies every parameter by 1 + eps * N(0, 1) (a generator of its own, so every rank
    draws the same): the same job from a start that differs at the level of float rounding
    (eps 1e-6), to measure how far such a difference carries to the final accuracy
    (bench/README.md "How much the final accuracy moves"). eps 0 leaves the model as it is."""
    if not eps:
        return
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1 + eps * torch.randn(p.shape, generator=g))


DEFAULTS = dict(backend="relay", stages=200, batch=32, lr=0.05, momentum=0.9, seed=1,
                train_subset=12000, test_subset=2000, probe=128, eval_every=25, out=None,
                relay=None, key=None, gloo_addr="127.0.0.1", gloo_port=None,
                relay_silence_ms=5000,
                join_timeout_ms=10000, print_rows=True, library=None, target_acc=None,
                feedback=False, average="gradient", save_params=False, final_sync=False,
                sync_every=0, final_test_subset=0, idle_close_ms=0, timeline=False,
                on_relay_loss="fail", rejoin_every_s=1.0, perturb=0.0, perturb_seed=1)


def run_rank(rank, world, cfg, queue=None, progress=None):
    """Trains; puts a summary dict on ``queue``; sets ``progress[stage]`` events if given.
    Exits the process with 0, or 3 after a relay error (the summary says which)."""
    c = dict(DEFAULTS)
    c.update(cfg)
    torch.set_num_threads(1)
    # Under torchrun (no gloo port given) the launcher's MASTER_ADDR / MASTER_PORT, else ours.
    init = "env://" if c["gloo_port"] is None else f"tcp://{c['gloo_addr']}:{c['gloo_port']}"
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    x_train, y_train = fmnist.load(split="train")
    x_test, y_test = fmnist.load(split="t10k")
    g = torch.Generator().manual_seed(c["seed"] * 7919 + 1)
    pick = torch.randperm(x_train.shape[0], generator=g)[:c["train_subset"]]
    shard = pick[rank::world]
    probe_idx = pick[:c["probe"]]
    px, py = x_train[probe_idx], y_train[probe_idx]
    tx, ty = x_test[:c["test_subset"]], y_test[:c["test_subset"]]
    # The final accuracy may be taken on more test images than the periodic one (s.e. of one
    # accuracy on 2 000 images is 1 point, on 10 000 0.45).
    fx, fy = (x_test[:c["final_test_subset"]], y_test[:c["final_test_subset"]]) \
        if c["final_test_subset"] else (tx, ty)

    model = make_model(c["seed"])
    perturb_model(model, c["perturb"], c["perturb_seed"])
    ddp = DDP(model)
    state = None
    if c["backend"] == "relay":
        import predrop.torch as pt
        state = pt.RelayState(model, relay=c["relay"], key=c["key"], rank=rank,
                              model_seed=c["seed"], relay_silence_ms=c["relay_silence_ms"],
                              join_timeout_ms=c["join_timeout_ms"], library=c["library"],
                              error_feedback=c["feedback"], average=c["average"],
                              stages=c["stages"], idle_close_ms=c["idle_close_ms"],
                              on_relay_loss=c["on_relay_loss"],
                              rejoin_every_s=c["rejoin_every_s"])
        ddp.register_comm_hook(state, pt.relay_hook)
    timed = None
    if c["backend"] == "gloo" and c["timeline"]:
        timed = TimedAllreduce()
        ddp.register_comm_hook(timed, TimedAllreduce.hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=c["lr"], momentum=c["momentum"])

    def probe_loss():
        with torch.no_grad():
            return F.cross_entropy(model(px), py).item()

    def accuracy(x=tx, y=ty):
        with torch.no_grad():
            return (model(x).argmax(1) == y).float().mean().item()

    def save_params(s):
        if c["save_params"] and c["out"]:
            flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            torch.save(flat, os.path.join(c["out"], f"params-r{rank}-s{s}.pt"))

    bg = torch.Generator().manual_seed(c["seed"] * 104729 + rank)
    order, pos = torch.randperm(len(shard), generator=bg), 0
    prev_probe = probe_loss()
    if state:
        state.report_loss(prev_probe)
    rows = []
    summary = {"rank": rank, "stages": 0, "final_acc": None, "error": None, "time_to_target": None}
    t0 = time.monotonic()
    # Time spent measuring the test accuracy: the same stages on every rank and backend, but not
    # training; time_to_target_train leaves it out (wall time at the target minus it).
    eval_s = 0.0
    writer = None
    fcsv = None
    if c["out"]:
        os.makedirs(c["out"], exist_ok=True)
        fcsv = open(os.path.join(c["out"], f"rank-{rank}.csv"), "w", newline="")
        writer = csv.DictWriter(fcsv, fieldnames=COLUMNS)
        writer.writeheader()
    if rank == 0 and c["print_rows"]:
        print(f"{'stage':>6} {'R':>6} {'L ms':>7} {'loss':>7} {'probe':>7} {'P':>8} "
              f"{'acc':>6} {'fill':>5} {'close':>8}", flush=True)
    code = 0
    try:
        for s in range(c["stages"]):
            if pos + c["batch"] > len(order):
                order, pos = torch.randperm(len(shard), generator=bg), 0
            idx = shard[order[pos:pos + c["batch"]]]
            pos += c["batch"]
            times = {"iter_us": now_us()}
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x_train[idx]), y_train[idx])
            t_back = time.monotonic()
            times["backward_us"] = now_us()
            try:
                loss.backward()
            except RuntimeError as e:
                summary["error"] = str(e).splitlines()[0] if str(e) else repr(e)
                for line in str(e).splitlines():
                    if "predrop relay" in line:
                        summary["error"] = line.strip()
                        break
                summary["failed_stage"] = s
                summary["fail_after_s"] = time.monotonic() - t_back
                code = 3
                break
            times["backward_end_us"] = now_us()
            opt.step()
            times["step_end_us"] = now_us()
            pl = probe_loss()
            if state:
                state.report_loss(pl)
            last = s + 1 == c["stages"]
            if state and ((last and c["final_sync"])
                          or (c["sync_every"] and (s + 1) % c["sync_every"] == 0)):
                if last:
                    summary["final_acc_unsynced"] = accuracy(fx, fy)
                t_sync = time.monotonic()
                pt.average_models(model)
                summary["sync_s"] = summary.get("sync_s", 0.0) + time.monotonic() - t_sync
            t_eval = time.monotonic()
            acc = accuracy() if (last or (c["eval_every"] and (s + 1) % c["eval_every"] == 0)) \
                else None
            if acc is not None:
                eval_s += time.monotonic() - t_eval
            if acc is not None:
                save_params(s)
            info = state.last() if state else None
            row = {"stage": s, "rank": rank, "loss": round(loss.item(), 5),
                   "probe_loss": round(pl, 5), "P": round(prev_probe - pl, 6),
                   "test_acc": "" if acc is None else round(acc, 4),
                   "wall_s": round(time.monotonic() - t0, 3)}
            prev_probe = pl
            row.update(times)
            if timed:
                row.update(hook_us=timed.hook_us, done_us=timed.done_us)
            if info:
                row.update({k: info.get(k, "") for k in TIMELINE_HOOK})
            if info:
                row.update({"R": round(info["R"], 4), "L_ms": round(info["L_ms"], 3),
                            "close_reason": info["close_reason"], "received": info["received"],
                            "announced": info["announced"], "filled": info["filled"],
                            "partial": info["partial"], "chunks": info["chunks"],
                            "lost": info["lost"],
                            "deadline_ms": round(info["deadline_ms"], 1),
                            "stage_ms": round(info["stage_ms"], 3)})
                if "residual_norm" in info:
                    row["residual_norm"] = round(info["residual_norm"], 6)
            rows.append(row)
            if writer:
                writer.writerow(row)
            if acc is not None:
                summary["final_acc"] = accuracy(fx, fy) if last and c["final_test_subset"] else acc
                if (c["target_acc"] is not None and summary["time_to_target"] is None
                        and acc >= c["target_acc"]):
                    summary["time_to_target"] = row["wall_s"]
                    summary["time_to_target_train"] = round(
                        time.monotonic() - t0 - eval_s, 3)
                    summary["stage_at_target"] = s
            summary["stages"] = s + 1
            if progress is not None and s in progress:
                progress[s].set()
            if rank == 0 and c["print_rows"] and (acc is not None or s % 10 == 0):
                close = {0: "complete", 1: "deadline", 2: "forced", 3: "ended",
                         4: "idle", 5: "local"}.get(row.get("close_reason"), "-")
                print(f"{s:>6} {row.get('R', 0):>6.3f} {row.get('L_ms', 0):>7.2f} "
                      f"{row['loss']:>7.4f} {pl:>7.4f} {row['P']:>8.4f} "
                      f"{'' if acc is None else f'{acc:.4f}':>6} {row.get('filled', 0):>5} "
                      f"{close:>8}", flush=True)
    finally:
        summary["wall_s"] = time.monotonic() - t0
        summary["eval_s"] = eval_s
        if state and state.on_relay_loss == "local":
            summary.update(local_stages=state.local_stages, rejoins=state.rejoins,
                           lost_reason=state.lost_reason, rejoin_error=state.rejoin_error)
        if fcsv:
            fcsv.close()
        if state:
            state.close()
        if queue is not None:
            queue.put(summary)
            # os._exit below would drop what the feeder thread has not written yet.
            queue.close()
            queue.join_thread()
        if code == 0:
            dist.destroy_process_group()
    sys.stdout.flush()
    if code:
        os._exit(code)  # the process group's peers may be gone; do not wait for them


def main():
    """One rank as its own process (for ranks on several hosts or namespaces):
    python3 -m predrop.fmnist_job --rank R --world N --gloo-addr HOST --gloo-port P
    [--backend relay --relay HOST:PORT[,HOST:PORT...]] (several: sharded relays) ..., or under
    torchrun without --rank / --world / the gloo address (torchrun ... -m predrop.fmnist_job
    --relay HOST:PORT ...); the job key comes from PREDROP_DDL_KEY. Prints the summary as one JSON line and exits 0, or 3 after a relay
    error."""
    import argparse
    import json
    ap = argparse.ArgumentParser(description=main.__doc__)
    # Without them (torchrun), RANK and WORLD_SIZE from the environment.
    ap.add_argument("--rank", type=int, default=None)
    ap.add_argument("--world", type=int, default=None)
    for k, v in DEFAULTS.items():
        if k in ("key", "library", "print_rows"):
            continue
        typ = type(v) if v is not None else str
        if k in ("gloo_port", "target_acc"):
            typ = int if k == "gloo_port" else float
        if isinstance(v, bool):
            def typ(x):
                return x.lower() in ("1", "true", "yes", "on")
        ap.add_argument("--" + k.replace("_", "-"), type=typ, default=v)
    a = vars(ap.parse_args())
    rank, world = a.pop("rank"), a.pop("world")
    if rank is None or world is None:
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            ap.error("--rank and --world, or RANK and WORLD_SIZE (as torchrun sets them)")
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        a["gloo_port"] = None

    class Printer:
        def put(self, summary):
            print("SUMMARY " + json.dumps(summary), flush=True)

        def close(self):
            pass

        def join_thread(self):
            pass

    run_rank(rank, world, a, Printer())


if __name__ == "__main__":
    main()
