#!/usr/bin/env python3
"""The bed's capture parser and metrics (bench/testbed/bed_pcap.py, bed_metrics.py) on captures
written here with known packets: matching in to out, drops, queueing delay net of the
propagation delay, rates per 200 ms bin, water-filled targets, and hostile input."""
import json
import math
import os
import struct
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "testbed"))
import bed_metrics  # noqa: E402
import bed_pcap  # noqa: E402

SND = "198.18.0.1"
RCV0 = "198.18.1.2"
RCV1 = "198.18.1.3"
T0 = 1_000_000.0  # wall clock of the run's t0


def rtp(seq):
    return struct.pack("!BBHII", 0x80, 96, seq, seq * 3000, 0x1234)


class PcapTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_reads_back_what_it_wrote_in_both_stamp_resolutions(self):
        frame = bed_pcap.make_frame(SND, RCV0, 17, 5000, 6000, 7, rtp(1), 1200)
        for ns in (True, False):
            path = os.path.join(self.dir, f"x{ns}.pcap")
            bed_pcap.write_pcap(path, [(12.345678, frame)], nanosecond=ns)
            pk = bed_pcap.read_packets(path)
            self.assertEqual(len(pk), 1)
            self.assertAlmostEqual(pk[0].t, 12.345678, places=6)
            self.assertEqual(pk[0].wire_len, 14 + 20 + 8 + 1200)
            self.assertEqual((pk[0].sport, pk[0].dport, pk[0].proto, pk[0].ipid), (5000, 6000, 17, 7))
            self.assertEqual(bed_pcap.int_to_ip(pk[0].dst), RCV0)

    def test_big_endian_files_are_read_too(self):
        frame = bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 3, rtp(9))
        path = os.path.join(self.dir, "be.pcap")
        with open(path, "wb") as f:
            f.write(struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            f.write(struct.pack(">IIII", 5, 250000, len(frame), len(frame)) + frame)
        pk = bed_pcap.read_packets(path)
        self.assertEqual(len(pk), 1)
        self.assertAlmostEqual(pk[0].t, 5.25)

    def test_hostile_input_is_refused_or_skipped_never_a_crash(self):
        path = os.path.join(self.dir, "bad.pcap")
        with open(path, "wb") as f:
            f.write(b"not a pcap at all, no")
        with self.assertRaises(bed_pcap.PcapError):
            bed_pcap.read_packets(path)
        good = bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 3, rtp(1))
        frames = [(1.0, good[:20]),                       # cut inside the IP header
                  (1.1, good[:12] + b"\x86\xdd" + good[14:]),  # IPv6 ethertype
                  (1.2, good[:14] + b"\x65" + good[15:]),  # IP version 6 in an IPv4 frame
                  (1.3, good[:36]),                       # no room for the ports
                  (1.4, good)]
        bed_pcap.write_pcap(path, frames)
        with open(path, "ab") as f:
            f.write(struct.pack("<IIII", 2, 0, 500, 500) + b"\0" * 10)  # a record cut short
        pk = bed_pcap.read_packets(path)
        self.assertEqual([round(p.t, 1) for p in pk], [1.3, 1.4])
        self.assertEqual(pk[0].sport, 0)  # too short for ports: identified by IP header only

    def test_match_pairs_each_copy_and_names_the_drops(self):
        ins = [bed_pcap.parse_frame(1.0 + k * 0.01, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, k, rtp(k)))
               for k in range(5)]
        outs = [bed_pcap.parse_frame(p.t + 0.06, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, p.ipid, rtp(p.ipid)))
                for p in ins if p.ipid != 3]
        pairs, unmatched, stray = bed_pcap.match(ins, outs)
        self.assertEqual(len(pairs), 4)
        self.assertEqual([p.ipid for p in unmatched], [3])
        self.assertEqual(stray, [])
        for a, b in pairs:
            self.assertAlmostEqual(b.t - a.t, 0.06)

    def test_a_gso_super_packet_pairs_with_each_of_its_segments(self):
        # Two datagrams sent as one UDP GSO skb (IP ID 40) enter as one 2526-byte frame and leave
        # as two wire packets with IP IDs 40 and 41 and their own RTP headers.
        sup = bed_pcap.parse_frame(1.0, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 40, rtp(7), 2 * 1242))
        self.assertEqual(sup.wire_len, 2526)
        outs = [bed_pcap.parse_frame(1.05, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 40, rtp(7), 1242)),
                bed_pcap.parse_frame(1.06, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 41, rtp(8), 1242))]
        # A later ordinary packet whose IP ID lies inside the range must keep its own copy.
        other_in = bed_pcap.parse_frame(1.01, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 42, rtp(9), 300))
        other_out = bed_pcap.parse_frame(1.07, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 42, rtp(9), 300))
        pairs, unmatched, stray = bed_pcap.match([sup, other_in], outs + [other_out])
        self.assertEqual(len(pairs), 3)
        self.assertEqual([a.ipid for a, _b in pairs], [40, 40, 42])
        self.assertEqual((unmatched, stray), ([], []))

    def test_a_copy_out_before_its_packet_in_is_stray(self):
        a = bed_pcap.parse_frame(2.0, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 1, rtp(1)))
        b = bed_pcap.parse_frame(1.0, bed_pcap.make_frame(SND, RCV0, 17, 1, 2, 1, rtp(1)))
        pairs, unmatched, stray = bed_pcap.match([a], [b])
        self.assertEqual((len(pairs), len(unmatched), len(stray)), (0, 1, 1))


class WaterfillTest(unittest.TestCase):
    def test_small_demands_are_met_and_the_rest_shared(self):
        self.assertEqual(bed_metrics.waterfill(3000, [500, None, None]), [500, 1250, 1250])
        self.assertEqual(bed_metrics.waterfill(1000, [1230, 1230]), [500, 500])
        self.assertEqual(bed_metrics.waterfill(4000, [1230, 1230]), [1230, 1230])
        self.assertEqual(bed_metrics.waterfill(1000, []), [])


class RunMetricsTest(unittest.TestCase):
    """A 2 s run with two flows: flow 0 media at 50 ms one-way, 100 packets of 1250 bytes on the
    wire over 1 s, 10 dropped, queueing 8 ms; flow 1 TCP at 10 ms one-way, no queue."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.dir = self.tmp.name
        with open(os.path.join(d, "case.env"), "w") as f:
            f.write("case\tunit\nduration\t2\nscale\t1\nrate\t1000kbit\nback_rate\topen\npolicy\tnone\nclip\tx\nmedia\tpredrop\n")
        with open(os.path.join(d, "flows.tsv"), "w") as f:
            f.write(f"0\tmedia\t0\t2\t50\t50\t{RCV0}\t-\n1\ttcp\t0\t2\t10\t10\t{RCV1}\t-\n")
        with open(os.path.join(d, "t0"), "w") as f:
            f.write(f"{T0}\n")
        with open(os.path.join(d, "starts"), "w") as f:
            f.write("0 0 0.000\n1 0 0.000\n")
        with open(os.path.join(d, "events"), "w") as f:
            f.write("1 1.000 rate 500kbit\n")
        r0, r1 = [], []
        for k in range(100):
            t = T0 + 0.005 + k * 0.01
            fr = bed_pcap.make_frame(SND, RCV0, 17, 5000, 6000, k, rtp(k), 1250 - 42)
            r0.append((t, fr))
            if k % 10 != 5:
                r1.append((t + 0.050 + 0.008, fr))
        for k in range(50):
            t = T0 + 0.005 + k * 0.02
            fr = bed_pcap.make_frame(SND, RCV1, 6, 40000, 5201, 1000 + k, struct.pack("!II", k * 1000, 1) + b"\x50\x10", 1000)
            r0.append((t, fr))
            r1.append((t + 0.010, fr))
            # The ACK going back.
            ack = bed_pcap.make_frame(RCV1, SND, 6, 5201, 40000, 2000 + k, struct.pack("!II", 1, k * 1000) + b"\x50\x10", 0)
            r1.append((t + 0.011, ack))
            r0.append((t + 0.021, ack))
        r0.sort()
        r1.sort()
        bed_pcap.write_pcap(os.path.join(d, "r0.pcap"), r0)
        bed_pcap.write_pcap(os.path.join(d, "r1.pcap"), r1)

    def tearDown(self):
        self.tmp.cleanup()

    def test_loss_queue_rates_and_targets_per_flow(self):
        res = bed_metrics.analyse(self.dir, profile=[1230.0, 1230.0, 1230.0])
        flows = {f["index"]: f for f in res["flows"]}
        media, tcp = flows[0], flows[1]
        self.assertAlmostEqual(media["loss_pct"], 10.0)
        self.assertAlmostEqual(media["queue_p95_ms"], 8.0, places=3)
        self.assertAlmostEqual(media["queue_mean_ms"], 8.0, places=3)
        self.assertAlmostEqual(tcp["loss_pct"], 0.0)
        self.assertAlmostEqual(tcp["queue_p95_ms"], 0.0, places=3)
        # Media: 100 packets x 1250 bytes in the first second = 1000 kbit/s sent.
        send = res["bins"]["send"][0]
        self.assertAlmostEqual(sum(send[:5]) / 5, 1000.0, places=6)
        # Capacity 1000 then 500 kbit/s; TCP is unbounded, media wants 1230: equal halves while
        # both send, all of it to TCP once the media flow's last packet has gone (at 1 s).
        self.assertEqual(res["bins"]["cap"]["fwd"][0], 1000.0)
        self.assertEqual(res["bins"]["cap"]["fwd"][9], 500.0)
        self.assertAlmostEqual(res["bins"]["target"][0][0], 500.0)
        self.assertAlmostEqual(res["bins"]["target"][1][0], 500.0)
        self.assertAlmostEqual(res["bins"]["target"][0][9], 0.0)
        self.assertAlmostEqual(res["bins"]["target"][1][9], 500.0)
        self.assertTrue(res["bins"]["congested"]["fwd"][0])
        with open(os.path.join(self.dir, "metrics.json")) as f:
            saved = json.load(f)
        self.assertEqual(len(saved["flows"]), 2)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "bins.tsv")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
