#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_chunk, fuzz_idx, fuzz_ddl_control and fuzz_ddl_relay
(tests/fuzz/corpus/<name>/).

Run from anywhere: python3 tests/ddl/make_fuzz_seeds.py. Deterministic output."""
import gzip
import math
import pathlib
import random
import struct

ROOT = pathlib.Path(__file__).resolve().parents[1] / "fuzz" / "corpus"
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


def chunk(values, tensor, offset, flags=0, tensor_id=0):
    # Tensor chunk payload v1: see ddl/include/predrop/ddl/chunk.hpp.
    head = struct.pack(">BBHHHII", 1, 1, flags, tensor_id, len(values), tensor, offset)
    return head + struct.pack("<%df" % len(values), *values)


def record(delta, contributor, announced, step_ms, payload):
    return struct.pack(">bBBBH", delta, contributor, announced, step_ms, len(payload)) + payload


def write(name, files):
    d = ROOT / name
    d.mkdir(parents=True, exist_ok=True)
    for fname, data in files.items():
        (d / fname).write_bytes(data)


def chunk_seeds():
    rnd = random.Random(7)
    files = {
        "fixture": chunk([1.0, -2.5], 10, 4, flags=1, tensor_id=2),
        "one_value": chunk([0.0], 1, 0),
        "default_256": chunk([rnd.uniform(-1, 1) * 1e-3 for _ in range(256)], 101770, 768),
        "last_short": chunk([rnd.gauss(0, 1) for _ in range(138)], 101770, 397 * 256),
        "specials": chunk([math.inf, -0.0, 1e-45, -3.4e38], 4, 0),
    }
    # Scripts for the StageCollector (2 workers, 64 elements in chunks of 8).
    full = b""
    for c in range(8):
        for w in range(2):
            full += record(0, w, 8, 1, chunk([w + 0.5] * 8, 64, 8 * c))
    files["script_complete_stage"] = full
    partial = full[: len(full) // 2] + record(0, 0, 8, 200, b"")  # then time passes
    partial += record(-1, 1, 8, 1, chunk([1.0] * 8, 64, 0))  # a late chunk
    partial += record(1, 0, 8, 1, chunk([2.0] * 8, 64, 8))   # next stage
    files["script_deadline_late"] = partial
    nan = record(0, 0, 2, 1, chunk([math.nan] * 8, 64, 16)) + record(0, 1, 2, 1, chunk([1.0] * 8, 64, 16))
    nan += record(-128, 0, 0, 1, b"") + record(5, 0, 1, 1, chunk([3.0] * 8, 64, 56))
    files["script_nan_force_far"] = nan
    write("fuzz_chunk", files)


def idx_images(count, rows, cols, seed=1):
    rnd = random.Random(seed)
    return struct.pack(">IIII", 0x803, count, rows, cols) + bytes(
        rnd.randrange(256) for _ in range(count * rows * cols))


def idx_labels(labels):
    return struct.pack(">II", 0x801, len(labels)) + bytes(labels)


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def idx_seeds():
    img = idx_images(2, 3, 3)
    lab = idx_labels([0, 9, 3, 3, 7])
    files = {
        "images_plain": img,
        "images_gz": gz(img),
        "images_two_members_gz": gz(img[:10]) + gz(img[10:]),
        "images_truncated": img[:-1],
        "labels_plain": lab,
        "labels_gz": gz(lab),
        "labels_out_of_range": idx_labels([0, 10, 255]),
        "labels_gz_truncated": gz(lab)[:-5],
    }
    real = FASHION / "t10k-labels-idx1-ubyte.gz"
    if real.exists():
        files["t10k_labels_gz"] = real.read_bytes()
    write("fuzz_idx", files)


# DDL control compounds (ddl/include/predrop/ddl/protocol.hpp): RR without blocks, then APP packets.
def rr(ssrc):
    return struct.pack(">BBHI", 0x80, 201, 1, ssrc)


def app(ssrc, name, data):
    assert len(data) % 4 == 0
    return struct.pack(">BBHI", 0x80, 204, (12 + len(data)) // 4 - 1, ssrc) + name + data


def pdjn(rank, elements, seed, job_nonce, worker_nonce, version=2):
    return struct.pack(">BBHIQQQ", version, 0, rank, elements, seed, job_nonce, worker_nonce)


def pdja(status, rank, workers, joined, start, downlink, chunk, fill, flags, deadline_ms,
         job_nonce, worker_nonce, reason=b""):
    pad = (4 - len(reason) % 4) % 4
    return struct.pack(">BBHHHIIHBBIQQB3x", 2, status, rank, workers, joined, start, downlink,
                       chunk, fill, flags, deadline_ms, job_nonce, worker_nonce,
                       len(reason)) + reason + b"\0" * pad


def control_seeds():
    reason = b"the job is already running (stage 17)"
    files = {
        "join": rr(0x11223344) + app(0x11223344, b"PDJN",
                                     pdjn(2, 101770, 7, 0x0102030405060708, 0xA1A2A3A4A5A6A7A8)),
        # Version 1 (no nonces): rejected by name.
        "join_v1": rr(0x11223344) + app(0x11223344, b"PDJN",
                                        struct.pack(">BBHIQ", 1, 0, 2, 101770, 7)),
        "answer_refused": rr(0xDEADBEEF) + app(0xDEADBEEF, b"PDJA", pdja(
            2, 0xFFFF, 4, 3, 17, 0x01020304, 256, 1, 3, 500, 0x1122334455667788,
            0x99AABBCCDDEEFF00, reason)),
        "answer_start": rr(1) + app(1, b"PDJA", pdja(1, 0, 2, 2, 0, 0x0A0B0C0D, 256, 0, 0, 0,
                                                     0x1122334455667788, 42)),
        "answer_challenge": rr(1) + app(1, b"PDJA", pdja(4, 0xFFFF, 2, 0, 0, 0, 256, 0, 0, 0,
                                                         0x1122334455667788, 42)),
    }
    write("fuzz_ddl_control", files)


# fuzz_ddl_relay scripts (the record layout is in tests/ddl/fuzz_ddl_relay.cpp).
def header(flags, chunk_byte, max_word):
    return struct.pack(">BBH", flags, chunk_byte, max_word)


def join(peer, rank=0xFF, tensor=60, seed=7, nonce=0, other_ssrc=0):
    return struct.pack(">BBBHBBB", 0, peer, rank, tensor, seed, nonce, other_ssrc)


def chunks(peer, delta, first, n, announced=0, mode=0, value=16):
    return struct.pack(">BBbBBBBB", 1, peer, delta, first, n, announced, mode, value)


def stage(peer, value=16):
    return struct.pack(">BBB", 2, peer, value)


def report(peer, back=0, period=1500, received=6, announced=6, perf=0.01, flags=1):
    return struct.pack(">BBBIHHdB", 3, peer, back, period, received, announced, perf, flags)


def bye(peer):
    return struct.pack(">BB", 4, peer)


def raw(peer, data):
    return struct.pack(">BBB", 5, peer, len(data)) + data


def advance(ms):
    return struct.pack(">BBH", 6, 0, ms)


def tamper(peer, pos):
    return struct.pack(">BBB", 7, peer, pos)


def relay_seeds():
    # chunk byte 9: 10 values per chunk; max word 99: at most 100 elements; tensor 60: 6 chunks.
    two = header(0x01, 9, 99)
    files = {}
    s = two + join(0, nonce=1) + join(0) + join(1)
    for _ in range(3):
        s += stage(0) + stage(1) + report(0) + report(1)
    files["two_workers_three_stages"] = s + bye(0) + bye(1)
    # AES-GCM, paced, basic rule: rank 1 goes silent after stage 0, stages close at the 50 ms
    # deadline, then it is evicted (3 missed stages and 1 s of silence).
    s = header(0x35, 9, 99) + join(0) + join(1) + stage(0) + stage(1)
    for _ in range(4):
        s += stage(0) + advance(60) + report(0, period=60000)
    files["gcm_paced_deadline_evict"] = s + advance(1100) + stage(0) + advance(60) + stage(0)
    # One worker: a join of 2^32 - 1 elements is refused, then a sane one starts the job.
    files["huge_tensor_then_sane"] = header(0x00, 9, 99) + join(0, tensor=0xFFFF) + join(0) + \
        stage(0) + stage(0) + report(0)
    # Peer 6 is peer 0's address with another SSRC; tampered and raw datagrams.
    s = two + join(0) + join(6) + join(1) + stage(6) + stage(0) + stage(1) + tamper(0, 30)
    s += raw(0, bytes([0x80, 0xC9, 0, 1, 0, 1, 0, 0])) + raw(1, bytes(range(40)))
    files["foreign_ssrc_tamper_raw"] = s + chunks(1, 0, 0, 8, mode=3) + chunks(0, 5, 2, 3)
    # Nonces of another job and none; then the right one; a BYE before the start frees the rank.
    s = two + join(0, nonce=2) + join(0, nonce=1) + join(0, rank=1) + bye(0) + join(2, rank=1)
    files["nonces_and_leave_before_start"] = s + join(3, rank=0) + stage(2) + stage(3)
    # Mismatched tensors and seeds, out-of-range ranks, misaligned chunks, adaptive deadline.
    s = header(0x0B, 3, 63) + join(0, tensor=40) + join(1, tensor=41) + join(2, seed=8)
    s += join(3, rank=7) + join(4, rank=0) + join(5) + join(2) + join(1, tensor=40)
    s += stage(0) + chunks(1, 0, 0, 5, mode=1) + chunks(2, 0, 0, 5, mode=2) + advance(2000)
    files["admission_refusals_adaptive"] = s + stage(0) + stage(1) + advance(30) + bye(0)
    write("fuzz_ddl_relay", files)


if __name__ == "__main__":
    chunk_seeds()
    idx_seeds()
    control_seeds()
    relay_seeds()
