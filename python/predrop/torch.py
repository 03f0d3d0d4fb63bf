"""A DDP communication hook that averages gradients through the predrop DDL relay.

    state = predrop.torch.RelayState(model, relay="127.0.0.1:9300")   # joins, waits for start
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(state, predrop.torch.relay_hook)
    for x, y in batches:
        loss = loss_fn(ddp(x), y); opt.zero_grad(); loss.backward(); opt.step()
        state.report_loss(probe_loss())   # P = loss reduction of the stage just applied

Stage = iteration. DDP calls the hook once per gradient bucket, in bucket order, the last one with
``bucket.is_last()``. The hook copies each bucket into one flat gradient and returns an
incomplete ``torch.futures.Future``; the last bucket submits the whole gradient to the relay as
one stage (one tensor, the relay's plan fixed at the join). The peer's thread completes every
bucket's future when the stage closes (complete, or at the stage deadline with the missing
chunks filled as the relay's job says), with that bucket's slice of the average. DDP waits for
the futures only at the end of backward, so nothing else waits; the price is that no bucket's
communication overlaps the rest of backward (the relay's plan covers the whole gradient).

Error feedback (``error_feedback=True``, for jobs whose missing chunks are filled with zeros):
each rank keeps, per chunk, what it submitted but got no average back for (the relay
pre-discarded that chunk for this rank, or it was lost), and adds it to its next stage's gradient,
as compressed/sparsified SGD does (EF-SGD, Karimireddy et al. 2019; Deep Gradient Compression).
The update is delayed, not dropped: chunks the priority discard leaves out stage after stage grow
until they are sent. docs/ddl-torch.md "Error feedback" says why this and not another fill.

Model averaging (``average="model"``): the stage carries the rank's parameters (before the
optimiser step) instead of its gradient; the relay's average replaces the parameters where it
arrived, the rank keeps its own where a chunk is missing, and the optimiser then steps with the
rank's local gradient. With SGD + momentum and every chunk delivered, the mean of the ranks'
models follows DDP's trajectory; a chunk that is missing stays at the rank's own value and is
pulled back to the mean the next time it arrives, so ranks behind a lossy path do not drift
apart (docs/ddl-torch.md "Missing chunks").

Sharded relays (``relay=["10.0.0.1:9300", "10.0.0.2:9300"]`` or ``"a:9300,b:9300"``): the flat
gradient is split into as many contiguous slices as there are relays (element ranges of
near-equal size), slice k joins relay k as a job of its own (its own plan, deadline, controllers
and pre-discard), and the stage closes when every slice's stage has closed. So no single relay
carries every rank's whole gradient. Every relay must run the same job (workers, chunk size,
missing-chunk fill); ``key`` is one key for all of them or a list, one per relay.
docs/ddl-torch.md "Sharded relays".

A failure (relay gone during a stage, removed, BYE) completes the futures with a RuntimeError,
which ``loss.backward()`` raises; every later stage fails at once with the same reason
(``on_relay_loss="fail"``, the default). With ``on_relay_loss="local"`` the rank continues
alone instead: the failed stage and every later one complete at once with the rank's own values
(its own gradient; under model averaging its own parameters stay), and a background thread
joins the same relay address(es) anew every ``rejoin_every_s``; once a relay restarted there and
every rank has rejoined (a new job), the next stage goes through it again. A rejoin that fails
(no answer: not running, another key; refused: its reason) is kept in ``rejoin_error`` and tried
again. docs/ddl-torch.md "Failures".
"""

import collections
import ctypes
import threading
import time

import torch

from . import capi

RelayError = capi.RelayError


def _grad_elements(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def relay_list(relay):
    """The relay addresses of ``relay``: one "host:port", a comma-separated list, or a list."""
    items = relay.split(",") if isinstance(relay, str) else list(relay)
    items = [a.strip() for a in items if a and a.strip()]
    if not items:
        raise ValueError("no relay address given")
    return items


def shard_bounds(elements, shards):
    """[lo, hi) of each of ``shards`` contiguous slices of ``elements`` (sizes differ by <= 1)."""
    return [(k * elements // shards, (k + 1) * elements // shards) for k in range(shards)]


# How the slices' stage rows combine into the stage's row: counts add up, times take the
# slowest slice (the stage is as late as its last slice), starts the earliest.
_SUM = ("received", "announced", "lost", "filled", "partial", "chunks")
_MAX = ("close_reason", "deadline_us", "reception_period_us", "stage_us", "uplink_sent_us",
        "pdsc_us", "last_chunk_us", "closed_us")
_MIN = ("contributors", "submit_us", "begin_us", "first_chunk_us")


class _Info:
    """A closed stage's info, copied off the C struct (valid only during the callback) and
    combined over the slices of sharded relays."""

    def __init__(self, infos):
        first = infos[0]
        self.stage = first.stage
        bad = [i for i in infos if i.status != 0]
        self.status = bad[0].status if bad else 0
        self.error = bad[0].error if bad else None
        for k in _SUM:
            setattr(self, k, sum(getattr(i, k) for i in infos))
        for k in _MAX:
            setattr(self, k, max(getattr(i, k) for i in infos))
        for k in _MIN:
            vals = [getattr(i, k) for i in infos if getattr(i, k)]
            setattr(self, k, min(vals) if vals else 0)
        self.complete = [i.received == i.chunks for i in infos]


class _Copy:
    def __init__(self, info):
        for name, _ in capi.StageInfo._fields_:
            setattr(self, name, getattr(info, name))


class RelayState:
    """The hook's state: one relay peer and the stage being assembled.

    ``model`` is the module (or an int: the number of gradient elements). Every rank must use the
    same ``model_seed``. The constructor blocks until every worker has joined and the job starts;
    it raises RelayError with the reason if the relay does not answer (not running, another key)
    or refuses. ``stages``: how many stages (iterations) the job runs, the same on every rank
    (0: not known); a rank that skipped ahead past the job's last stage then closes the stages
    its loop still runs at once (nothing received: the fill applies, ``close_reason`` 3) instead
    of waiting for a relay whose other ranks have left. ``idle_close_ms``: once a chunk of the
    stage's average came, nothing more for this long closes the stage before the deadline (the
    rest was lost on the way; ``close_reason`` 4); 0: wait for the deadline.
    ``on_relay_loss``: "fail" (a lost relay fails the stage) or "local" (continue alone and
    rejoin; ``close_reason`` 5 marks a stage completed locally).
    """

    def __init__(self, model, relay, key=None, rank=-1, model_seed=1, bind=None,
                 join_timeout_ms=10000, start_timeout_ms=60000, relay_silence_ms=5000,
                 history=1000, library=None, error_feedback=False, average="gradient",
                 stages=0, idle_close_ms=0, on_relay_loss="fail", rejoin_every_s=1.0):
        if on_relay_loss not in ("fail", "local"):
            raise ValueError(f"on_relay_loss must be 'fail' or 'local', not {on_relay_loss!r}")
        if average not in ("gradient", "model"):
            raise ValueError(f"average must be 'gradient' or 'model', not {average!r}")
        if average == "model" and isinstance(model, int):
            raise ValueError("average='model' needs the module, not a size")
        if average == "model" and error_feedback:
            raise ValueError("error_feedback applies to average='gradient' only")
        self.average = average
        self._params = ([p for p in model.parameters() if p.requires_grad]
                        if average == "model" else None)
        n = model if isinstance(model, int) else _grad_elements(model)
        self.elements = n
        self._flat = torch.empty(n, dtype=torch.float32)
        self._avg = torch.empty(n, dtype=torch.float32)
        self._offset = 0
        self._assembling = []    # (offset, count, future) of the buckets of the open stage
        self._inflight = []      # the same, handed over at submit
        self.stages = collections.deque(maxlen=history)  # dicts, one per closed stage
        self.last_stage = None   # id of the last closed stage
        self._reported = None
        self._prev_loss = None
        self._hook_us = 0        # the open stage's first bucket reached the hook
        self.error = None
        relays = relay_list(relay)
        keys = list(key) if isinstance(key, (list, tuple)) else [key] * len(relays)
        if len(keys) != len(relays):
            raise ValueError(f"{len(keys)} keys for {len(relays)} relays")
        if len(relays) > n:
            raise ValueError(f"{len(relays)} relays for {n} gradient elements")
        self.relays = relays
        self.shards = shard_bounds(n, len(relays))
        self._lock = threading.Lock()
        self._closed_infos = [None] * len(relays)  # the open stage's closed slices
        self.on_relay_loss = on_relay_loss
        self.rejoin_every_s = rejoin_every_s
        self.local = False          # the relay was lost: stages complete with own values
        self.local_stages = 0
        self.rejoins = 0
        self.lost_reason = None     # why the relay was lost (the failed stage's error)
        self.rejoin_error = None    # the last rejoin attempt's failure
        self._gen = 0               # callbacks of peers of an earlier generation are ignored
        self._new_peers = None      # peers of a rejoin, taken at the next submit
        self._rejoin_thread = None
        self._closing = threading.Event()
        self._peer_kw = dict(keys=keys, rank=rank, model_seed=model_seed, bind=bind,
                             join_timeout_ms=join_timeout_ms, start_timeout_ms=start_timeout_ms,
                             relay_silence_ms=relay_silence_ms, library=library,
                             idle_close_ms=idle_close_ms)
        self._peers = self._open_peers(0, stages)
        self._peer = self._peers[0]
        self._peer_stage = [None] * len(relays)  # each relay's id of the last closed stage
        self.job = self._peer.job
        if any(p.job.fill_own != self.job.fill_own or p.job.workers != self.job.workers
               for p in self._peers):
            for p in self._peers:
                p.close()
            raise RelayError("predrop relay: the sharded relays run different jobs (workers or "
                             "missing_chunk_fill differ)")
        self.error_feedback = bool(error_feedback)
        if self.error_feedback and self.job.fill_own:
            for p in self._peers:
                p.close()
            raise RelayError("predrop relay: error_feedback needs the job's missing chunks filled "
                             "with zeros (missing_chunk_fill = \"zero\"), not \"own\"")
        # The residual: gradient submitted whose average did not come back, per element.
        self._residual = torch.zeros(n, dtype=torch.float32) if self.error_feedback else None
        self._sent = torch.empty(n, dtype=torch.float32) if self.error_feedback else None
        self.residual_norm = 0.0

    def _open_peers(self, gen, stages):
        # One peer per relay; each blocks until its job starts. Raises RelayError.
        kw = dict(self._peer_kw)
        keys = kw.pop("keys")
        peers = []
        try:
            for k, (addr, (lo, hi)) in enumerate(zip(self.relays, self.shards)):
                peers.append(capi.Peer(
                    addr, hi - lo, lambda info, k=k, g=gen: self._on_shard_stage(g, k, info),
                    key=keys[k], stages=stages, **kw))
        except RelayError:
            for p in peers:
                p.close()
            raise
        return peers

    # ---- the transport's thread ----

    def _on_shard_stage(self, gen, k, info):
        # Each relay's peer calls back on its own thread; the last slice to close the stage
        # completes it.
        copy = _Copy(info)
        with self._lock:
            if gen != self._gen:
                return  # a peer left behind by a lost relay
            self._peer_stage[k] = copy.stage
            self._closed_infos[k] = copy
            if any(i is None for i in self._closed_infos):
                return
            infos, self._closed_infos = self._closed_infos, [None] * len(self._peers)
            self._on_stage(_Info(infos))

    def _on_stage(self, info):
        callback_us = time.monotonic_ns() // 1000
        pending, self._inflight = self._inflight, []
        row = {
            "stage": info.stage, "ok": info.status == 0,
            "received": info.received, "announced": info.announced, "lost": info.lost,
            "filled": info.filled, "partial": info.partial, "contributors": info.contributors,
            "chunks": info.chunks, "close_reason": info.close_reason,
            "deadline_ms": info.deadline_us / 1000.0,
            "L_ms": info.reception_period_us / 1000.0, "stage_ms": info.stage_us / 1000.0,
            # The relay's pre-discard for this peer, as seen here: chunks it did not send.
            "R": 1.0 - info.announced / info.chunks if info.chunks else 0.0,
            # The stage's timeline (us, CLOCK_MONOTONIC): docs/ddl-torch.md "Where a stage's
            # time goes".
            "hook_us": self._hook_us, "callback_us": callback_us,
        }
        for k in capi.TIMELINE:
            row[k] = getattr(info, k)
        if info.status == 0 and self.average == "model":
            self._apply_model(info)
        if info.status == 0:
            if self.error_feedback:
                self._feed_back(info)
                row["residual_norm"] = self.residual_norm
            self.stages.append(row)
            self.last_stage = info.stage
            for off, cnt, fut in pending:
                if self.average == "model":
                    fut.set_result(self._local[off:off + cnt])
                else:
                    fut.set_result(self._avg[off:off + cnt])
            row["done_us"] = time.monotonic_ns() // 1000
        else:
            why = info.error.decode(errors="replace") if info.error else "failed"
            reason = f"predrop relay: stage {info.stage} failed: {why}"
            if self.on_relay_loss == "local":
                self._go_local(reason)
                self._complete_locally(pending)
                return
            self.error = reason
            err = RelayError(self.error)
            for _, _, fut in pending:
                fut.set_exception(err)

    # ---- continuing without the relay (on_relay_loss="local") ----

    def _go_local(self, reason):
        # Under self._lock, or before any peer thread can call back.
        if self.local:
            return
        self.local = True
        self.lost_reason = reason
        self._gen += 1
        import sys
        print(f"{reason}; continuing locally, rejoining every {self.rejoin_every_s:g} s",
              file=sys.stderr, flush=True)
        self._rejoin_thread = threading.Thread(target=self._rejoin_loop, args=(self._gen,),
                                               name="predrop-rejoin", daemon=True)
        self._rejoin_thread.start()

    def _complete_locally(self, pending):
        # The rank's own values: its gradient (gradient averaging: this rank's update alone),
        # or under model averaging its local gradient with its parameters left as they are.
        row = {"stage": -1, "ok": False, "local": True, "close_reason": 5, "R": 0.0,
               "L_ms": 0.0, "deadline_ms": 0.0, "stage_ms": 0.0, "received": "",
               "announced": "", "lost": "", "filled": "", "partial": "", "contributors": "",
               "chunks": "", "hook_us": self._hook_us}
        self.local_stages += 1
        if self.error_feedback:
            self._residual.zero_()  # what was sent is applied here, in full
            self.residual_norm = 0.0
        self.stages.append(row)
        src = self._local if self.average == "model" else self._flat
        for off, cnt, fut in pending:
            fut.set_result(src[off:off + cnt].clone())
        row["done_us"] = time.monotonic_ns() // 1000

    def _rejoin_loop(self, gen):
        with self._lock:
            old = self._peers
        for p in old:
            p.close()  # not on a peer's own thread: this one
        while not self._closing.wait(self.rejoin_every_s):
            try:
                peers = self._open_peers(gen, 0)
            except RelayError as e:
                self.rejoin_error = str(e)
                continue
            with self._lock:
                if self._closing.is_set() or gen != self._gen:
                    for p in peers:
                        p.close()
                    return
                self._new_peers = peers
                self.rejoin_error = None
            return

    def _take_rejoined(self):
        with self._lock:
            peers, self._new_peers = self._new_peers, None
            if not peers:
                return
            self._peers = peers
            self._peer = peers[0]
            self._peer_stage = [None] * len(peers)
            self._closed_infos = [None] * len(peers)
            self.last_stage = None
            self._reported = None
            self.local = False
            self.rejoins += 1
        import sys
        print(f"predrop relay: rejoined {','.join(self.relays)} after {self.local_stages} local "
              "stages", file=sys.stderr, flush=True)

    def _apply_model(self, info):
        # The average replaces the parameters where it arrived; where a chunk is missing the
        # rank keeps its own (under own fill the peer already wrote them; under zero fill the
        # chunk is all zeros in the average). Chunks are counted from each slice's start.
        if not self.job.fill_own:
            for (lo, hi), complete in zip(self.shards, info.complete):
                if not complete:
                    self._keep_own(lo, hi)
        off = 0
        with torch.no_grad():
            for p in self._params:
                k = p.numel()
                p.copy_(self._avg[off:off + k].view_as(p))
                off += k

    def _keep_own(self, lo, hi):
        ce = self.job.chunk_elements
        full = ((hi - lo) // ce) * ce
        avg, own = self._avg[lo:hi], self._flat[lo:hi]
        missing = avg[:full].view(-1, ce).eq(0).all(dim=1, keepdim=True)
        avg[:full].view(-1, ce).copy_(torch.where(missing, own[:full].view(-1, ce),
                                                  avg[:full].view(-1, ce)))
        if full < hi - lo and bool(avg[full:].eq(0).all()):
            avg[full:] = own[full:]

    def _feed_back(self, info):
        # Under zero fill a chunk that did not come back is all zeros in the average; one that
        # came back all zeros carries no update either. Its part of what this rank sent stays
        # in the residual; every other chunk's residual was delivered.
        if all(info.complete):
            self._residual.zero_()
            self.residual_norm = 0.0
            return
        ce = self.job.chunk_elements
        for (lo, hi), complete in zip(self.shards, info.complete):
            avg, sent, res = self._avg[lo:hi], self._sent[lo:hi], self._residual[lo:hi]
            if complete:
                res.zero_()
                continue
            full = ((hi - lo) // ce) * ce
            missing = avg[:full].view(-1, ce).eq(0).all(dim=1, keepdim=True)
            res[:full].view(-1, ce).copy_(sent[:full].view(-1, ce) * missing)
            if full < hi - lo:
                res[full:] = sent[full:] if bool(avg[full:].eq(0).all()) else 0.0
        self.residual_norm = float(self._residual.norm())

    # ---- the autograd thread (the hook) ----

    def _add_bucket(self, buf, last):
        fut = torch.futures.Future()
        if buf.dtype != torch.float32:
            fut.set_exception(RelayError(f"predrop relay: gradients must be float32, not "
                                         f"{buf.dtype}"))
            return fut
        n = buf.numel()
        off = self._offset
        if off == 0:
            self._hook_us = time.monotonic_ns() // 1000
        if off + n > self.elements:
            fut.set_exception(RelayError(
                f"predrop relay: the buckets hold more than the {self.elements} gradient "
                "elements the job was joined with"))
            return fut
        self._flat[off:off + n].copy_(buf.view(-1))
        self._assembling.append((off, n, fut))
        self._offset = off + n
        if last:
            self._submit()
        return fut

    def _submit(self):
        pending, self._assembling = self._assembling, []
        filled, self._offset = self._offset, 0
        if filled != self.elements:
            err = RelayError(f"predrop relay: the stage's buckets hold {filled} elements, the job "
                             f"{self.elements} (parameters without gradient? use "
                             "find_unused_parameters=False and requires_grad consistently)")
            for _, _, fut in pending:
                fut.set_exception(err)
            return
        if self.local:
            self._take_rejoined()
        self._inflight = pending
        if self.average == "model":
            # This stage's gradient stays local (the optimiser steps with it); the parameters
            # go to the relay.
            self._local = self._flat.clone()
            off = 0
            with torch.no_grad():
                for p in self._params:
                    k = p.numel()
                    self._flat[off:off + k].copy_(p.reshape(-1))
                    off += k
        if self.error_feedback:
            self._flat.add_(self._residual)
            self._sent.copy_(self._flat)
        if self.local:
            self._inflight = []
            self._complete_locally(pending)
            return
        try:
            if self.error:
                raise RelayError(self.error)
            size = self._flat.element_size()
            for peer, (lo, hi) in zip(self._peers, self.shards):
                peer.submit(ctypes.c_void_p(self._flat.data_ptr() + lo * size),
                            ctypes.c_void_p(self._avg.data_ptr() + lo * size), hi - lo)
        except RelayError as e:
            if self.on_relay_loss == "local":
                with self._lock:
                    self._inflight = []
                    self._go_local(f"predrop relay: {e}")
                self._complete_locally(pending)
                return
            self._inflight = []
            self.error = f"predrop relay: {e}"
            err = RelayError(self.error)
            for _, _, fut in pending:
                fut.set_exception(err)

    # ---- the training loop ----

    def report(self, performance, stage=None):
        """P (loss reduction) of ``stage`` (default: the last closed one) to the relay."""
        s = self.last_stage if stage is None else stage
        if s is None or self.local:
            return
        # Each relay numbers its own stages (the same ids where the relays started together).
        try:
            for peer, last in zip(self._peers, self._peer_stage):
                if last is not None:
                    peer.report(last + (s - self.last_stage), performance)
        except RelayError:
            if self.on_relay_loss != "local":
                raise
            # The relay was lost meanwhile: the next stage continues locally.
        self._reported = s

    def report_loss(self, loss):
        """Reports P = previous loss - ``loss`` for the last closed stage (once per stage); the
        first call only sets the baseline. ``loss``: a float or a 0-d tensor, ideally on a fixed
        probe batch after the optimiser step."""
        loss = float(loss)
        if (self._prev_loss is not None and self.last_stage is not None
                and self.last_stage != self._reported):
            self.report(self._prev_loss - loss)
        self._prev_loss = loss

    def last(self):
        """The last closed stage's row (dict), or None."""
        return self.stages[-1] if self.stages else None

    def close(self):
        """Leaves the job (BYE), at every relay. Idempotent."""
        self._closing.set()
        with self._lock:
            peers = list(self._peers) + list(self._new_peers or [])
            self._new_peers = None
        for p in peers:
            p.close()


def average_models(model, group=None):
    """Replaces every rank's parameters by their exact mean over the torch.distributed process
    group (gloo, TCP: lossless), in one all-reduce of the flat parameters. For the end of a job
    trained with ``average="model"``, whose ranks' models differ where chunks were missing (or
    every so many stages): docs/ddl-torch.md "Final accuracy"."""
    import torch.distributed as dist
    params = [p for p in model.parameters() if p.requires_grad]
    with torch.no_grad():
        flat = torch.cat([p.reshape(-1) for p in params])
        dist.all_reduce(flat, group=group)
        flat /= dist.get_world_size(group)
        off = 0
        for p in params:
            k = p.numel()
            p.copy_(flat[off:off + k].view_as(p))
            off += k


def _unwrap(fut):
    # Runs on the thread that completed `fut`. Raising here marks the returned future as failed
    # in C++, so DDP's wait() throws our message (a future completed with set_exception holds
    # the exception as its value, which DDP would then fail to cast to a tensor).
    return fut.wait()


def relay_hook(state, bucket):
    """DDP communication hook: ``ddp.register_comm_hook(state, relay_hook)``."""
    return state._add_bucket(bucket.buffer(), bucket.is_last()).then(_unwrap)
