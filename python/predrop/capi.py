"""ctypes binding of the C ABI in ddl/capi/include/predrop/ddl/capi/predrop_ddl.h.

The library is found through ``PREDROP_DDL_CAPI`` (a path to libpredrop_ddl_capi.so), else in
the repository's build directories (build/release, then any build/*). The structures here must
match the header field for field; ``ABI_VERSION`` guards against a stale library.
"""

import ctypes

from . import _build

ABI_VERSION = 3


class StageInfo(ctypes.Structure):
    """predrop_ddl_stage_info: one closed stage."""

    _fields_ = [
        ("stage", ctypes.c_uint32),
        ("status", ctypes.c_int32),
        ("error", ctypes.c_char_p),
        ("received", ctypes.c_uint32),
        ("announced", ctypes.c_uint32),
        ("lost", ctypes.c_uint32),
        ("filled", ctypes.c_uint32),
        ("partial", ctypes.c_uint32),
        ("contributors", ctypes.c_uint32),
        ("chunks", ctypes.c_uint32),
        ("close_reason", ctypes.c_uint32),
        ("deadline_us", ctypes.c_uint64),
        ("reception_period_us", ctypes.c_double),
        ("stage_us", ctypes.c_uint64),
        # The stage's timeline, CLOCK_MONOTONIC us (time.monotonic_ns() // 1000), 0: not reached.
        ("submit_us", ctypes.c_uint64),
        ("begin_us", ctypes.c_uint64),
        ("uplink_sent_us", ctypes.c_uint64),
        ("pdsc_us", ctypes.c_uint64),
        ("first_chunk_us", ctypes.c_uint64),
        ("last_chunk_us", ctypes.c_uint64),
        ("closed_us", ctypes.c_uint64),
    ]

TIMELINE = ("submit_us", "begin_us", "uplink_sent_us", "pdsc_us", "first_chunk_us",
            "last_chunk_us", "closed_us")


STAGE_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(StageInfo))


class Options(ctypes.Structure):
    """predrop_ddl_options."""

    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("relay", ctypes.c_char_p),
        ("bind", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("rank", ctypes.c_int32),
        ("model_seed", ctypes.c_uint64),
        ("tensor_elements", ctypes.c_uint32),
        ("join_timeout_ms", ctypes.c_uint32),
        ("start_timeout_ms", ctypes.c_uint32),
        ("relay_silence_ms", ctypes.c_uint32),
        ("on_stage", STAGE_CALLBACK),
        ("user", ctypes.c_void_p),
        ("stages", ctypes.c_uint32),
        ("idle_close_ms", ctypes.c_uint32),
    ]


class Job(ctypes.Structure):
    """predrop_ddl_job."""

    _fields_ = [
        ("rank", ctypes.c_uint32),
        ("workers", ctypes.c_uint32),
        ("start_stage", ctypes.c_uint32),
        ("chunk_elements", ctypes.c_uint32),
        ("chunks", ctypes.c_uint32),
        ("fill_own", ctypes.c_uint32),
        ("stage_deadline_ms", ctypes.c_uint32),
    ]


class RelayError(RuntimeError):
    """A failure of the relay peer: join, start-up, or the job while running."""


def find_library():
    """Path of libpredrop_ddl_capi.so (PREDROP_DDL_CAPI, else the repository's build dirs)."""
    path = _build.find("PREDROP_DDL_CAPI", "ddl/capi/libpredrop_ddl_capi.so")
    if path:
        return path
    raise RelayError("libpredrop_ddl_capi.so not found: build the predrop_ddl_capi target "
                     "(cmake --build build/release --target predrop_ddl_capi) or set "
                     "PREDROP_DDL_CAPI to its path")


_lib = None


def load(path=None):
    """Loads the library once (CDLL: every call releases the GIL)."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(path or find_library())
    lib.predrop_ddl_open.restype = ctypes.c_void_p
    lib.predrop_ddl_open.argtypes = [ctypes.POINTER(Options), ctypes.c_char_p, ctypes.c_size_t]
    lib.predrop_ddl_job_info.restype = ctypes.c_int
    lib.predrop_ddl_job_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(Job)]
    lib.predrop_ddl_submit.restype = ctypes.c_int
    lib.predrop_ddl_submit.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint32)]
    lib.predrop_ddl_report.restype = ctypes.c_int
    lib.predrop_ddl_report.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_double]
    lib.predrop_ddl_error.restype = None
    lib.predrop_ddl_error.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.predrop_ddl_close.restype = None
    lib.predrop_ddl_close.argtypes = [ctypes.c_void_p]
    _lib = lib
    return lib


class Peer:
    """One relay peer (predrop_ddl_peer). ``on_stage(info)`` runs on the peer's own thread."""

    def __init__(self, relay, tensor_elements, on_stage, key=None, rank=-1, model_seed=1,
                 bind=None, join_timeout_ms=0, start_timeout_ms=0, relay_silence_ms=0,
                 library=None, stages=0, idle_close_ms=0):
        self._lib = load(library)
        self._user_cb = on_stage

        def trampoline(_user, info_ptr):
            # An exception must not unwind into C; ctypes would only print it.
            try:
                self._user_cb(info_ptr.contents)
            except BaseException as e:  # noqa: BLE001 - reported, never raised into C
                import sys
                print(f"predrop: stage callback failed: {e!r}", file=sys.stderr)

        self._cb = STAGE_CALLBACK(trampoline)  # kept alive as long as the peer
        o = Options()
        o.abi_version = ABI_VERSION
        o.relay = relay.encode()
        o.bind = bind.encode() if bind else None
        o.key = key.encode() if key else None
        o.rank = rank
        o.model_seed = model_seed
        o.tensor_elements = tensor_elements
        o.join_timeout_ms = join_timeout_ms
        o.start_timeout_ms = start_timeout_ms
        o.relay_silence_ms = relay_silence_ms
        o.on_stage = self._cb
        o.user = None
        o.stages = stages
        o.idle_close_ms = idle_close_ms
        err = ctypes.create_string_buffer(1024)
        self._h = self._lib.predrop_ddl_open(ctypes.byref(o), err, len(err))
        if not self._h:
            raise RelayError(f"predrop relay {relay}: {err.value.decode(errors='replace')}")
        job = Job()
        self._lib.predrop_ddl_job_info(self._h, ctypes.byref(job))
        self.job = job
        self.tensor_elements = tensor_elements

    def error(self):
        """The peer's last error text."""
        if not self._h:
            return "closed"
        buf = ctypes.create_string_buffer(1024)
        self._lib.predrop_ddl_error(self._h, buf, len(buf))
        return buf.value.decode(errors="replace")

    def submit(self, gradient_ptr, average_ptr, elements):
        """Starts the next stage; returns its id. Raises RelayError if the peer cannot."""
        if not self._h:
            raise RelayError("the relay peer is closed")
        stage = ctypes.c_uint32(0)
        if self._lib.predrop_ddl_submit(self._h, gradient_ptr, average_ptr, elements,
                                        ctypes.byref(stage)) != 0:
            raise RelayError(self.error())
        return stage.value

    def report(self, stage, performance):
        """P of a closed stage (sent to the relay with that stage's L)."""
        if not self._h:
            raise RelayError("the relay peer is closed")
        if self._lib.predrop_ddl_report(self._h, stage, float(performance)) != 0:
            raise RelayError(self.error())

    def close(self):
        """Leaves the job; an open stage fails with "closed". Idempotent."""
        if self._h:
            h, self._h = self._h, None
            self._lib.predrop_ddl_close(h)
