// Fuzzes the sender's RR arithmetic (wire::RrTracker) with hostile report blocks: the first 8
// bytes choose the track's initial sequence, packets sent and arrival time, the rest is parsed
// as an RTCP compound whose RR/SR blocks go to one tracker in order (committing every other
// interval). Properties: an accepted interval never loses more than it expected, never covers a
// packet beyond those sent, RTT and queueing delay are finite and not negative, and the queue
// never exceeds the RTT.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "predrop/wire/rr_tracker.hpp"
#include "predrop/wire/rtcp.hpp"

namespace {
using namespace predrop::wire;

class Feeder : public RtcpVisitor {
 public:
  Feeder(RrTracker& t, std::uint64_t sent, std::uint32_t now)
      : tracker_(t), sent_(sent), now_(now) {}
  void on_sender_report(const SenderReport& sr) override { feed(sr.blocks); }
  void on_receiver_report(const ReceiverReport& rr) override { feed(rr.blocks); }

 private:
  void feed(const ReportBlocks& blocks) {
    for (const ReportBlock& b : blocks) {
      // Let some LSRs be known: the tracker remembers what it is told was sent.
      if ((b.ssrc & 1U) != 0) tracker_.note_sender_report(b.last_sr);
      auto iv = tracker_.measure(b, sent_, now_);
      if (!iv) continue;
      PREDROP_FUZZ_CHECK(iv->lost <= iv->expected);
      PREDROP_FUZZ_CHECK(iv->highest_index < sent_);
      PREDROP_FUZZ_CHECK(std::isfinite(iv->jitter_us) && iv->jitter_us >= 0.0);
      if (iv->rtt_us) {
        PREDROP_FUZZ_CHECK(std::isfinite(*iv->rtt_us) && *iv->rtt_us >= 0.0);
        PREDROP_FUZZ_CHECK(iv->queue_delay_us && *iv->queue_delay_us >= 0.0 &&
                           *iv->queue_delay_us <= *iv->rtt_us);
      }
      if ((++n_ & 1U) != 0) tracker_.commit(*iv);
      now_ += 65'536;
    }
  }
  RrTracker& tracker_;
  std::uint64_t sent_;
  std::uint32_t now_;
  unsigned n_ = 0;
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  const auto u16 = [&](std::size_t i) {
    return static_cast<std::uint16_t>((data[i] << 8) | data[i + 1]);
  };
  RrTracker tracker(u16(0), u16(2));
  const std::uint64_t sent = u16(4) * 7ULL;  // up to ~460000 packets: several sequence wraps
  Feeder feeder(tracker, sent, static_cast<std::uint32_t>(u16(6)) << 16);
  (void)parse_rtcp_compound(std::span<const std::uint8_t>(data + 8, size - 8), feeder);
  return 0;
}
