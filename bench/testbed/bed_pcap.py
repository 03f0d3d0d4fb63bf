"""Packet captures of the test bed's router, read by hand (standard library only).

The bed captures both router ports (bed.sh bed_capture_start): r0 faces the senders, r1 the
receivers. A packet from a sender enters on r0 and, unless the bottleneck drops it, leaves on r1
after the delay line and the tbf queue; the reverse direction enters on r1 and leaves on r0.
match() pairs each packet in with its copy out, so every packet has its time in the router and
every packet in without a copy out is a drop. Packets are told apart by their 5-tuple, IP ID and
the first bytes of their transport payload (the RTP header, which SRTP leaves in clear; TCP's
sequence and acknowledgement numbers), none of which the router changes.

pcap format: https://www.tcpdump.org/manpages/pcap-savefile.5.html (classic pcap, microsecond or
nanosecond magic, either byte order; link type 1 = Ethernet).
"""
import collections
import struct

LINKTYPE_ETHERNET = 1
ETH_HEADER = 14
# Bytes of transport payload that identify a packet (RTP: V/P/X/CC, M/PT, seq, timestamp, SSRC).
KEY_PAYLOAD = 12

Packet = collections.namedtuple(
    "Packet", "t src dst proto sport dport ipid wire_len key")
"""t: seconds (float, capture clock); src/dst: IPv4 as int; proto: 6 TCP / 17 UDP / other;
wire_len: IP total length + Ethernet header (what the tbf counts); key: identity for matching."""


class PcapError(ValueError):
    pass


def read_pcap(path):
    """Yields (t_seconds, frame_bytes) for every record of a classic pcap file."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise PcapError(f"{path}: no pcap header")
        magic = struct.unpack("<I", head[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            endian = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            endian = ">"
            magic = struct.unpack(">I", head[:4])[0]
        else:
            raise PcapError(f"{path}: not a classic pcap file (magic {magic:#x})")
        frac = 1e-9 if magic == 0xA1B23C4D else 1e-6
        linktype = struct.unpack(endian + "I", head[20:24])[0]
        if linktype != LINKTYPE_ETHERNET:
            raise PcapError(f"{path}: link type {linktype}, expected Ethernet (1)")
        rec = struct.Struct(endian + "IIII")
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            sec, sub, incl, _orig = rec.unpack(h)
            data = f.read(incl)
            if len(data) < incl:
                return  # a capture cut short at the end
            yield sec + sub * frac, data


def parse_frame(t, data):
    """An IPv4 frame as a Packet, or None (not IPv4, or too short to say)."""
    if len(data) < ETH_HEADER + 20 or data[12:14] != b"\x08\x00":
        return None
    ip = ETH_HEADER
    ver_ihl = data[ip]
    if ver_ihl >> 4 != 4:
        return None
    ihl = (ver_ihl & 0x0F) * 4
    total_len, ipid = struct.unpack_from("!HH", data, ip + 2)
    proto = data[ip + 9]
    src, dst = struct.unpack_from("!II", data, ip + 12)
    l4 = ip + ihl
    sport = dport = 0
    ident = b""
    if proto in (6, 17) and len(data) >= l4 + 4:
        sport, dport = struct.unpack_from("!HH", data, l4)
        if proto == 17:
            ident = data[l4 + 8:l4 + 8 + KEY_PAYLOAD]
        else:
            ident = data[l4 + 4:l4 + 14]  # sequence, acknowledgement, offset, flags
    key = (src, dst, proto, sport, dport, ipid, ident)
    return Packet(t, src, dst, proto, sport, dport, ipid, total_len + ETH_HEADER, key)


def read_packets(path):
    """Every IPv4 packet of a capture, in capture order."""
    out = []
    for t, data in read_pcap(path):
        p = parse_frame(t, data)
        if p is not None:
            out.append(p)
    return out


# Frames longer than this came in as one GSO super-packet (several UDP datagrams in one skb,
# UDP_SEGMENT) and leave as several: the tbf segments them.
MAX_WIRE = 1514
# A segment of a super-packet leaves within this long of the super-packet's arrival.
GSO_WINDOW_S = 3.0
# Segments per super-packet at most (the server sends one video frame's packets per GSO call).
GSO_MAX_SEGS = 64


def match(ins, outs):
    """Pairs packets in with their copies out. Returns (pairs, unmatched_in, unmatched_out):
    pairs = [(packet_in, packet_out)], in the order of the packets out. A packet out matches the
    earliest packet in with the same key that entered before it left (duplicates of a key, e.g. a
    TCP retransmission with the same IP ID, pair first in, first out). A packet in longer than a
    wire frame is a GSO super-packet: its first segment matches by key, the others (their own
    RTP headers, the same 5-tuple and the next IP IDs) pair with it too, each as a pair of its own."""
    waiting = collections.defaultdict(collections.deque)
    supers = collections.defaultdict(list)  # loose key -> super-packets in
    for p in ins:
        waiting[p.key].append(p)
        if p.wire_len > MAX_WIRE:
            supers[p.key[:5]].append(p)
    pairs, stray = [], []
    used = set()
    for q in outs:
        d = waiting.get(q.key)
        if d and d[0].t <= q.t:
            a = d.popleft()
            pairs.append((a, q))
            used.add(id(a))
            continue
        # Segments of one super-packet carry consecutive IP IDs from the super-packet's own.
        cands = [a for a in supers.get(q.key[:5], ())
                 if a.t <= q.t <= a.t + GSO_WINDOW_S and 0 < (q.ipid - a.ipid) % 65536 < GSO_MAX_SEGS]
        if cands:
            # The super-packet whose first IP ID is closest below this segment's.
            a = min(cands, key=lambda c: ((q.ipid - c.ipid) % 65536, -c.t))
            pairs.append((a, q))
            if id(a) not in used:
                used.add(id(a))
                dq = waiting[a.key]
                if a in dq:
                    dq.remove(a)
        else:
            stray.append(q)
    unmatched = [p for d in waiting.values() for p in d if id(p) not in used]
    unmatched.sort(key=lambda p: p.t)
    return pairs, unmatched, stray


def ip_to_int(text):
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def int_to_ip(v):
    return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))


def write_pcap(path, frames, nanosecond=True):
    """Writes (t_seconds, frame_bytes) records as a classic pcap (tests)."""
    with open(path, "wb") as f:
        magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
        f.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        scale = 1e9 if nanosecond else 1e6
        for t, data in frames:
            sec = int(t)
            sub = int(round((t - sec) * scale))
            f.write(struct.pack("<IIII", sec, sub, len(data), len(data)))
            f.write(data)


def make_frame(src, dst, proto, sport, dport, ipid, payload, wire_payload_len=None):
    """An Ethernet + IPv4 + UDP/TCP frame (tests). `wire_payload_len` sets the IP total length as
    if the payload were that long (the capture keeps only headers)."""
    l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) if proto == 17 else \
        struct.pack("!HH", sport, dport) + payload[:10].ljust(10, b"\0") + b"\0" * 6
    body = l4 + (payload if proto == 17 else b"")
    n = len(body) if wire_payload_len is None else wire_payload_len + (8 if proto == 17 else 20)
    ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + n, ipid, 0x4000, 64, proto, 0) + \
        struct.pack("!II", ip_to_int(src), ip_to_int(dst))
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + body
