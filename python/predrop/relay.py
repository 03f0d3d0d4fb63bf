"""Starts the relay (``predrop-server --mode ddl``) for one job on this machine.

The relay makes a fresh job key and prints it (``PREDROP_DDL_KEY=a=crypto:...``); its log says
where it listens. ``start()`` waits for both and returns a ``Relay`` with ``address`` and ``key``.
"""

import os
import re
import socket
import subprocess
import time

from . import _build


def find_server():
    """Path of predrop-server (PREDROP_SERVER, else build/release, else any build/*)."""
    path = _build.find("PREDROP_SERVER", "server/predrop-server")
    if path:
        return path
    raise FileNotFoundError("predrop-server not found: build it or set PREDROP_SERVER")


def free_port(host="127.0.0.1"):
    """A TCP port free on `host` now (for gloo's rendezvous)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def job_config(workers, listen="127.0.0.1:0", policy="history", fixed_rate=0.0,
               stage_deadline_ms="adaptive", missing_fill="zero", trace_csv="",
               rmax=0.3, rp=0.05, t1=0.01, t2="10%", k=3, srtp="AEAD_AES_128_GCM",
               session_timeout_s=60, missing_report="increase", pacing="paced",
               discard="priority", chunk_bytes=1024):
    """The TOML of a torch job (configs/README.md has every key)."""
    deadline = (f'"{stage_deadline_ms}"' if isinstance(stage_deadline_ms, str)
                else str(int(stage_deadline_ms)))
    control = [f'policy = "{policy}"']
    if policy == "fixed":
        control += [f"fixed_rate = {fixed_rate}", f"rmax = {max(rmax, fixed_rate)}"]
    else:
        control += ["r0 = 0.0", f"rp = {rp}", f"rp1 = {rp}", f"rp2 = {rp}", f"rmax = {rmax}",
                    f"t1 = {t1}", f't2 = "{t2}"' if isinstance(t2, str) else f"t2 = {t2}"]
        if policy == "history":
            control.append(f"k = {k}")
        control.append(f'missing_report = "{missing_report}"')
    control.append("report_timeout_stages = 2")
    return "\n".join([
        "[server]", 'mode = "ddl"', f"max_sessions = {max(16, workers)}",
        f"session_timeout_s = {session_timeout_s}", f'srtp = "{srtp}"',
        f'trace_csv = "{trace_csv}"', 'log_level = "info"', "",
        "[ddl]", f'listen = "{listen}"', f"workers = {workers}",
        f"stage_deadline_ms = {deadline}", f'missing_chunk_fill = "{missing_fill}"',
        f"chunk_bytes = {chunk_bytes}", "worker_egress_discard = false", f'pacing = "{pacing}"', "",
        "[control]", *control, "",
        "[discard]", f'policy = "{discard}"', "seed = 1", ""])


class Relay:
    """A running relay process."""

    def __init__(self, proc, address, key, log_path):
        self.proc = proc
        self.address = address
        self.key = key
        self.log_path = log_path

    def kill(self):
        """SIGKILL, as if the host died."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self, timeout=10.0):
        """Waits for the job's end (the relay exits when every worker has left), else SIGTERM."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                return self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def start(out_dir, workers, server=None, timeout=10.0, key=None, name="relay", **config):
    """Writes out_dir/<name>.toml and starts the relay; returns a Relay once it listens.
    ``key``: the job key to use (PREDROP_DDL_KEY of the relay: sharded relays share one);
    default: the relay makes a fresh one. Its output goes to out_dir/<name>.log and .out."""
    os.makedirs(out_dir, exist_ok=True)
    cfg = os.path.join(out_dir, "job.toml" if name == "relay" else f"{name}.toml")
    with open(cfg, "w") as f:
        f.write(job_config(workers, **config))
    log_path = os.path.join(out_dir, f"{name}.log")
    out_path = os.path.join(out_dir, f"{name}.out")
    env = dict(os.environ)
    env.pop("PREDROP_DDL_KEY", None)
    if key:
        env["PREDROP_DDL_KEY"] = key
    with open(out_path, "w") as out, open(log_path, "w") as err:
        proc = subprocess.Popen([server or find_server(), "-c", cfg], stdout=out, stderr=err,
                                env=env)
    deadline = time.monotonic() + timeout
    address = None
    given = key
    while time.monotonic() < deadline:
        with open(out_path, errors="replace") as f:
            m = re.search(r"^PREDROP_DDL_KEY=(.*)$", f.read(), re.M)
            key = m.group(1) if m else given
        with open(log_path, errors="replace") as f:
            m = re.search(r"listening on ([0-9.]+:[0-9]+)", f.read())
            address = m.group(1) if m else None
        if key and address:
            return Relay(proc, address, key, log_path)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    with open(log_path, errors="replace") as f:
        raise RuntimeError(f"the relay did not start: {f.read()[-2000:]}")
