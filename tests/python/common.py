"""Shared set-up of the torch hook tests (ctest runs them with /usr/bin/python3).

Exit code 77 is ctest's SKIP_RETURN_CODE: torch missing, or the data set missing.
Paths come from the environment ctest sets: PREDROP_DDL_CAPI (the library), PREDROP_SERVER
(predrop-server); PREDROP_TEST_OUT is where relay logs go.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

SKIP = 77


def require_torch():
    try:
        import torch  # noqa: F401
        import torch.distributed  # noqa: F401
    except ImportError as e:
        print(f"SKIP: PyTorch is not installed for {sys.executable} ({e}); "
              "Debian: apt-get install python3-torch", flush=True)
        sys.exit(SKIP)
    if not torch.distributed.is_available():
        print("SKIP: this PyTorch has no torch.distributed", flush=True)
        sys.exit(SKIP)


def require_fmnist():
    from predrop import fmnist
    if not os.path.exists(os.path.join(fmnist.DEFAULT_DIR, "train-images-idx3-ubyte.gz")):
        print("SKIP: Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)",
              flush=True)
        sys.exit(SKIP)


def out_dir(name):
    base = os.environ.get("PREDROP_TEST_OUT", "/tmp/predrop-torch-tests")
    d = os.path.join(base, name)
    os.makedirs(d, exist_ok=True)
    return d


def free_port():
    from predrop import relay
    return relay.free_port()


def start_relay(name, workers, **config):
    """A relay for one test's job (predrop-server from PREDROP_SERVER or the build dirs), its
    logs in out_dir(name); returns (out_dir, relay)."""
    from predrop import relay
    out = out_dir(name)
    return out, relay.start(out, workers, **config)


def rank_config(r, **kw):
    """The fmnist_job configuration of a relay job on the running relay `r`."""
    cfg = dict(backend="relay", relay=r.address, key=r.key, gloo_port=free_port(),
               print_rows=False)
    cfg.update(kw)
    return cfg


def init_gloo(rank, world, port):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)


class SmallCnn:
    """Factory of the tests' CNN (a function so that torch is imported late)."""

    @staticmethod
    def make(seed=1):
        import torch
        import torch.nn as nn
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10))


def spawn_ranks(world, target, args):
    """Starts target(rank, world, *args) in `world` spawned processes."""
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=(r, world, *args)) for r in range(world)]
    for p in procs:
        p.start()
    return procs


def join_ranks(procs, timeout):
    """Waits up to `timeout` s for all; returns their exit codes (None for one still running,
    which is then killed)."""
    import time
    end = time.monotonic() + timeout
    for p in procs:
        p.join(max(0.0, end - time.monotonic()))
    codes = []
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
            codes.append(None)
        else:
            codes.append(p.exitcode)
    return codes


def run_ranks(world, target, args, timeout):
    """Runs target(rank, world, *args) in `world` spawned processes; returns their exit codes
    (None for one still running at the timeout, which is then killed)."""
    return join_ranks(spawn_ranks(world, target, args), timeout)


def drain(queue, n, timeout=2.0):
    """Up to n results from a multiprocessing queue."""
    import queue as q
    out = []
    for _ in range(n):
        try:
            out.append(queue.get(timeout=timeout))
        except q.Empty:
            break
    return out


def train_job(name, world, stages, relay_config, rank_cfg, threshold, timeout=100):
    """The training job the trains_* tests share: a relay with `relay_config`, `world` ranks
    running fmnist_job for `stages` stages (6000 training and 1000 test images) with `rank_cfg`.
    Prints each rank's result; returns (ok, out_dir, relay, exit codes, results by rank), where
    ok means every rank exited 0 without error above `threshold` test accuracy."""
    import torch.multiprocessing as mp
    from predrop import fmnist_job
    out, r = start_relay(name, world, **relay_config)
    cfg = rank_config(r, stages=stages, train_subset=6000, test_subset=1000, eval_every=0,
                      out=out, **rank_cfg)
    queue = mp.get_context("spawn").Queue()
    try:
        codes = run_ranks(world, fmnist_job.run_rank, (cfg, queue), timeout=timeout)
        results = sorted(drain(queue, world), key=lambda x: x["rank"])
    finally:
        rc = r.stop(timeout=10)
    print(f"relay exit {rc}")
    ok = codes == [0] * world and len(results) == world
    for s in results:
        print(f"rank {s['rank']}: {s['stages']} stages, accuracy {s['final_acc']}, "
              f"error {s['error']}")
        ok &= s["error"] is None and s["final_acc"] is not None and s["final_acc"] > threshold
    return ok, out, r, codes, results
