// The capacity policy on a deterministic model of the bed's bottleneck: a tbf-like fluid queue
// (capacity in link bytes per µs, a 100 ms queue limit, tail drop), paced VBR blocks of 1 s that
// start with a key-frame burst, the receiver's PDFB v1.1 path measurements (delivered bytes,
// dispersion rate when the burst queued, the burst's spans), and the report on block s fed while
// block s+1 is on the wire (docs/design.md §2.5). No clock, no sleep.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "predrop/core/capacity_policy.hpp"
#include "predrop/core/policy_factory.hpp"

namespace predrop::core {
namespace {

constexpr double kBlockUs = 1'000'000;
constexpr double kMeanBlockBytes = 150'000;  // 1.2 Mbit/s on the link
constexpr std::uint32_t kPacketsPerBlock = 125;
constexpr double kQueueLimitUs = 100'000;
constexpr int kSteps = 200;  // fluid steps per block
// The key frame: this many bytes sent in the first kBurstUs of every block (~8 Mbit/s), as the
// bed clip's I-frame; with it the receiver measures the bottleneck's rate by dispersion.
constexpr double kBurstBytes = 11'000;
constexpr double kBurstUs = 10'000;
// The shaper's token bucket (the bed's tbf: burst 32 kbit): this much leaves at once after idle.
constexpr double kBucketBytes = 4'000;

// Bytes of block i: +-20 % VBR with a period of 7 blocks (deterministic).
double vbr_bytes(std::uint32_t i) {
  return kMeanBlockBytes * (1.0 + 0.2 * std::sin(static_cast<double>(i) * 0.9));
}

/// What the receivers of a block report beyond the queue: PDFB v1.0 only, or v1.1.
enum class Receiver { kV10, kV11 };

/// A tbf-like bottleneck shared by any number of sessions: fluid, FIFO, tail drop at the limit.
/// Optionally unresponsive cross traffic (bytes per µs, by block).
class Bottleneck {
 public:
  Bottleneck(std::function<double(std::uint32_t)> capacity,
             std::function<double(std::uint32_t)> cross = {})
      : capacity_(std::move(capacity)), cross_(std::move(cross)) {}

  struct Sent {
    double bytes = 0;  ///< What the block sends at the R it started with.
    std::uint32_t packets = 0;
    /// From split_us on, the rest of the block goes at a re-planned R: its bytes per µs from
    /// then on (< 0: no re-plan).
    double rest_per_us = -1;
    double split_us = kBlockUs;
  };

  /// Bytes a session puts into the bottleneck in [from, to) of the block (key frame first).
  static double input(const Sent& x, double from, double to) {
    const double burst = std::fmin(kBurstBytes, x.bytes);
    const double in_burst =
        burst * std::fmax(0.0, std::fmin(to, kBurstUs) - std::fmin(from, kBurstUs)) / kBurstUs;
    const auto spread = [&](double a, double b) {
      return (x.bytes - burst) * std::fmax(0.0, std::fmax(b, kBurstUs) - std::fmax(a, kBurstUs)) /
             (kBlockUs - kBurstUs);
    };
    if (x.rest_per_us < 0.0 || to <= x.split_us) return in_burst + spread(from, to);
    if (from >= x.split_us) return in_burst + x.rest_per_us * (to - from);
    return in_burst + spread(from, x.split_us) + x.rest_per_us * (to - x.split_us);
  }

  /// One block of every session at once; returns each session's report.
  std::vector<StageReport> run_block(std::uint32_t block, const std::vector<Sent>& sent,
                                     Receiver receiver) {
    const double c = capacity_(block);  // bytes per µs
    const double y = cross_ ? cross_(block) : 0.0;
    // tbf's limit: rate x latency + burst.
    const double limit = c * kQueueLimitUs + kBucketBytes;
    const double dt = kBlockUs / kSteps;
    std::vector<double> dropped(sent.size(), 0.0);
    std::vector<double> total_in(sent.size(), 0.0);
    const double q_start_us = queue_ / c;
    double q_max = queue_;
    double q_min = queue_;
    for (int k = 0; k < kSteps; ++k) {
      // The key frame goes in the first kBurstUs; the rest of the block evenly over the rest.
      const double step_start = k * dt;
      double in_total = y * dt;
      std::vector<double> in(sent.size(), 0.0);
      for (std::size_t i = 0; i < sent.size(); ++i) {
        in[i] = input(sent[i], step_start, step_start + dt);
        in_total += in[i];
      }
      const double room = std::fmax(0.0, limit - queue_);
      const double taken = in_total > room ? room / in_total : 1.0;
      for (std::size_t i = 0; i < sent.size(); ++i) {
        dropped[i] += in[i] * (1.0 - taken);
        total_in[i] += in[i];
      }
      queue_ += in_total * taken;
      // Service: the rate plus what the bucket saved while the link was idle.
      const double can = tokens_ + c * dt;
      const double served = std::fmin(queue_, can);
      queue_ -= served;
      tokens_ = std::fmin(kBucketBytes, can - served);
      q_max = std::fmax(q_max, queue_);
      q_min = std::fmin(q_min, queue_);
    }
    const double q_end_us = queue_ / c;
    // Would the key frame queue at the bottleneck? Then its pairs disperse at c.
    const bool dispersed = c < kBurstBytes / kBurstUs;
    std::vector<StageReport> out(sent.size());
    for (std::size_t i = 0; i < sent.size(); ++i) {
      StageReport& r = out[i];
      r.stage = block;
      r.packets_announced = sent[i].packets;
      const double lost = total_in[i] > 0 ? dropped[i] / total_in[i] : 0.0;
      r.packets_received = static_cast<std::uint32_t>(
          std::lround(static_cast<double>(sent[i].packets) * (1.0 - lost)));
      // Paced over T with the last packet one frame interval (33 ms) before the block's end, as
      // on the bed; the first packet waits behind the queue at the start, the last one behind
      // the queue at the end.
      r.reception_period_us = std::fmax(1.0, kBlockUs - 33'000 + q_end_us - q_start_us);
      r.queue_delay_us = q_end_us;
      r.performance = 0.0;  // no PSNR at all
      if (receiver == Receiver::kV11) {
        PathMeasurement p;
        p.bytes_received = static_cast<std::uint64_t>(total_in[i] - dropped[i]);
        p.queue_max_us = q_max / c;
        p.queue_min_us = q_min / c;
        const double burst = std::fmin(kBurstBytes, sent[i].bytes);
        if (dispersed) {
          // The pairs of the key frame behind the first left back to back at the bottleneck's
          // rate (the aggregate one: other sessions' key frames need not overlap it).
          p.dispersion_bytes = static_cast<std::uint64_t>(burst * 0.8);
          p.dispersion_us = static_cast<std::uint64_t>(burst * 0.8 / c);
        }
        p.burst_bytes = static_cast<std::uint64_t>(burst * 0.9);
        p.burst_send_us = static_cast<std::uint64_t>(kBurstUs * 0.9);
        p.burst_arrival_us =
            dispersed ? static_cast<std::uint64_t>(burst * 0.9 / c) : p.burst_send_us;
        r.path = p;
      }
    }
    return out;
  }

 private:
  std::function<double(std::uint32_t)> capacity_;
  std::function<double(std::uint32_t)> cross_;
  double queue_ = 0;
  double tokens_ = kBucketBytes;
};

/// What one session did in one block.
struct Row {
  double rate = 0;     // effective: 1 - bytes sent / block bytes
  double planned = 0;  // R at the block's start (the sender's record)
  double minimum = 0;  // loss-free minimum R for this block's bytes and the session's share
  double loss = 0;
  double queue_us = 0;
  double estimate = 0;      // Ĉ when the block started, bytes per µs
  double predicted = 0;     // queue the model expected at the block's start, µs
  std::string_view reason;  // what the policy made of this block's report
};

struct Scenario {
  std::size_t sessions = 1;
  /// Block at which each session starts (default: all at 0); its stages count from there.
  std::vector<std::uint32_t> joins;
  CapacityParams params{};
  bool use_hook = true;
  Receiver receiver = Receiver::kV11;
  std::function<double(std::uint32_t)> cross;  // unresponsive cross traffic, bytes per µs
  /// Turns the true end-of-block queue of a block into what the receiver reports (bed noise).
  std::function<double(std::uint32_t, double)> reading;
  /// The sender re-plans the rest of the block in flight when a report arrives (rate_for_rest),
  /// this far into the block (on the bed the report on a block arrives 50-400 ms into the next).
  bool replan = true;
  double report_at_us = 100'000;
};

/// Runs capacity policies through one bottleneck for `blocks` blocks.
std::vector<std::vector<Row>> simulate(const std::function<double(std::uint32_t)>& capacity,
                                       std::uint32_t blocks, const Scenario& setup = {}) {
  Bottleneck net(capacity, setup.cross);
  const std::size_t sessions = setup.sessions;
  std::vector<std::unique_ptr<CapacityPolicy>> pol;
  for (std::size_t i = 0; i < sessions; ++i) {
    pol.push_back(std::make_unique<CapacityPolicy>(setup.params));
  }
  std::vector<std::vector<Row>> rows(sessions);
  std::vector<std::uint64_t> total(sessions, 0);
  std::vector<std::optional<StageReport>> pending(sessions);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    std::vector<Bottleneck::Sent> sent(sessions);
    const double bytes = vbr_bytes(b);
    for (std::size_t i = 0; i < sessions; ++i) {
      const std::uint32_t join = i < setup.joins.size() ? setup.joins[i] : 0;
      if (b < join) {
        rows[i].push_back(Row{1.0, 1.0, 1.0, 0, 0, 0, 0, "not started"});
        continue;
      }
      const std::uint32_t stage = b - join;
      const double r = setup.use_hook
                           ? pol[i]->rate_for_next(StageStart{
                                 stage, static_cast<std::uint64_t>(bytes), kBlockUs, total[i]})
                           : pol[i]->rate();
      // The report on the previous block arrives while this one is on the wire.
      if (pending[i]) {
        pending[i]->rate_used = rows[i].back().rate;  // what the server reports: effective R
        auto d = pol[i]->on_report(*pending[i]);
        EXPECT_TRUE(d.ok());
        if (d.ok()) rows[i].back().reason = d->reason;
      }
      sent[i].bytes = bytes * (1.0 - std::clamp(r, 0.0, 1.0));
      double effective = r;
      if (setup.replan && setup.use_hook) {
        // What the sender knows when the report arrives, report_at_us into this block.
        sent[i].split_us = setup.report_at_us;
        const double so_far = Bottleneck::input(sent[i], 0.0, setup.report_at_us);
        StageProgress p;
        p.stage = stage;
        p.elapsed_us = setup.report_at_us;
        p.duration_us = kBlockUs;
        p.sent_bytes = static_cast<std::uint64_t>(so_far);
        p.rest_bytes =
            static_cast<std::uint64_t>(bytes * (kBlockUs - setup.report_at_us) /
                                       (kBlockUs - kBurstUs) * (1.0 - kBurstBytes / bytes));
        p.rate = r;
        if (const auto rest = pol[i]->rate_for_rest(p)) {
          sent[i].rest_per_us = static_cast<double>(p.rest_bytes) *
                                (1.0 - std::clamp(*rest, 0.0, 1.0)) /
                                (kBlockUs - setup.report_at_us);
          effective = 1.0 - Bottleneck::input(sent[i], 0.0, kBlockUs) / bytes;
        }
      }
      const double block_sent = Bottleneck::input(sent[i], 0.0, kBlockUs);
      sent[i].packets =
          static_cast<std::uint32_t>(std::lround(kPacketsPerBlock * block_sent / bytes));
      total[i] += static_cast<std::uint64_t>(block_sent);
      const double cross = setup.cross ? setup.cross(b) : 0.0;
      const double share = (capacity(b) - cross) * kBlockUs / static_cast<double>(sessions);
      rows[i].push_back(Row{effective, r, std::fmax(0.0, 1.0 - share / bytes), 0, 0,
                            pol[i]->capacity_estimate(), pol[i]->predicted_queue_us()});
    }
    auto out = net.run_block(b, sent, setup.receiver);
    for (std::size_t i = 0; i < sessions; ++i) {
      const std::uint32_t join = i < setup.joins.size() ? setup.joins[i] : 0;
      if (b < join) continue;
      out[i].stage = b - join;
      if (setup.reading) out[i].queue_delay_us = setup.reading(b, *out[i].queue_delay_us);
      rows[i].back().loss = out[i].network_loss();
      rows[i].back().queue_us = *out[i].queue_delay_us;
      pending[i] = out[i];
    }
  }
  if (std::getenv("CAPACITY_TRACE") != nullptr) {
    for (std::size_t b = 0; b < blocks; ++b) {
      std::printf("%3zu", b);
      for (std::size_t i = 0; i < sessions; ++i) {
        std::printf("  R %.3f min %.3f loss %.3f q %5.1fms C^ %.0fk qp %5.1f", rows[i][b].rate,
                    rows[i][b].minimum, rows[i][b].loss, rows[i][b].queue_us / 1000,
                    rows[i][b].estimate * 8e3, rows[i][b].predicted / 1000);
        std::printf("  %.*s", static_cast<int>(rows[i][b].reason.size()), rows[i][b].reason.data());
      }
      std::printf("\n");
    }
  }
  return rows;
}

double per_us(double bits_per_s) {
  return bits_per_s / 8.0 / 1e6;
}

// The stream is 1.2 Mbit/s on the link; 800 kbit/s makes it 1.5x the bottleneck.
const double kStream = per_us(1.2e6);
// margin 0.97 leaves 3 % of the block idle: R sits that much above the loss-free minimum.
constexpr double kNear = 0.03;

/// First block at or after `from` from which R stays <= 0.02 to the end.
std::size_t zero_from(const std::vector<Row>& rows, std::size_t from) {
  std::size_t z = rows.size();
  for (std::size_t b = rows.size(); b-- > from;) {
    if (rows[b].rate > 0.02) break;
    z = b;
  }
  return z;
}

TEST(CapacityPolicy, OpenPathKeepsRateZero) {
  const auto rows = simulate([](std::uint32_t) { return per_us(200e6); }, 40)[0];
  for (const Row& r : rows) {
    EXPECT_EQ(r.rate, 0.0);
  }
}

TEST(CapacityPolicy, SteadyBottleneckConvergesNearTheLossFreeMinimum) {
  const auto rows = simulate([](std::uint32_t) { return kStream / 1.5; }, 60)[0];
  // The first report arrives during block 1 and acts on block 2, which drains the queue that
  // blocks 0 and 1 (sent at R = 0) left; from block 3 on R follows the minimum block by block.
  double lo = 1.0;
  double hi = -1.0;
  for (std::size_t b = 3; b < rows.size(); ++b) {
    EXPECT_GE(rows[b].rate, rows[b].minimum - 0.005) << "block " << b;
    EXPECT_LE(rows[b].rate, rows[b].minimum + kNear) << "block " << b;
    lo = std::fmin(lo, rows[b].rate - rows[b].minimum);
    hi = std::fmax(hi, rows[b].rate - rows[b].minimum);
  }
  EXPECT_LE(hi - lo, 0.05) << "oscillation around the minimum";
  // Loss only in the blocks sent before the first report could act; the queue at the blocks'
  // ends is then empty (the margin leaves the end of every block idle).
  for (std::size_t b = 3; b < rows.size(); ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
    EXPECT_LE(rows[b].queue_us, 5'000) << "block " << b;
  }
}

TEST(CapacityPolicy, ReplanningTheBlockInFlightShortensTheOnset) {
  // From the start at 1/1.5 of the stream. Without re-planning, blocks 0 and 1 go whole and
  // block 2, planned on block 0's report, starts on the full queue they left and loses its key
  // frame's tail. With it, block 0's report (100 ms into block 1) re-plans block 1's rest: its
  // queue drains, block 2 is clean, and block 1 loses less.
  Scenario without;
  without.replan = false;
  const auto a = simulate([](std::uint32_t) { return kStream / 1.5; }, 6, without)[0];
  const auto b = simulate([](std::uint32_t) { return kStream / 1.5; }, 6)[0];
  EXPECT_GT(a[2].loss, 0.05);
  EXPECT_LE(b[2].loss, 0.002);
  EXPECT_LT(b[1].loss, a[1].loss - 0.1);
  EXPECT_GT(b[1].rate, 0.3) << "block 1's rest discarded";
}

TEST(CapacityPolicy, FastBackOffOnACapacityDrop) {
  // 1000 kbit/s, then 500 kbit/s from block 20.
  const auto rows =
      simulate([](std::uint32_t b) { return b < 20 ? per_us(1e6) : per_us(0.5e6); }, 40)[0];
  // The report on block 20 arrives during 21 (re-planning its rest), so block 22 is the first
  // planned whole with it. Not below the minimum by more than the bucket's 4 kB (~0.01).
  for (std::size_t b = 22; b < rows.size(); ++b) {
    EXPECT_GE(rows[b].rate, rows[b].minimum - 0.01) << "block " << b;
  }
  // Loss only in the blocks already on the way (20, and 21 until its rest is re-planned) and in
  // 22, whose key frame meets what is left of the queue; from 23 on none.
  for (std::size_t b = 23; b < rows.size(); ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
  }
  for (std::size_t b = 23; b < rows.size(); ++b) {
    EXPECT_LE(rows[b].rate, rows[b].minimum + kNear) << "block " << b;
    EXPECT_LE(rows[b].queue_us, 5'000) << "block " << b;
  }
}

TEST(CapacityPolicy, TracksCapacityUpAtOnceFromTheDispersionRate) {
  // 600 kbit/s, then 1000 kbit/s from block 20 (the staircase): the key frame of block
  // 20 disperses at the new rate; its report (during 21) moves the estimate for block 22.
  const auto rows =
      simulate([](std::uint32_t b) { return b < 20 ? per_us(0.6e6) : per_us(1e6); }, 40)[0];
  for (std::size_t b = 22; b < rows.size(); ++b) {
    EXPECT_NEAR(rows[b].rate, rows[b].minimum + kNear / 2, kNear / 2 + 0.005) << "block " << b;
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
  }
}

TEST(CapacityPolicy, BackToZeroWithinThreeBlocksWhenTheBottleneckOpens) {
  // Capacity opens at block 20. Its key frame crosses undispersed; the report (during 21)
  // proves the path carries ~8 Mbit/s, so block 22 goes whole: two blocks after the end (the
  // bed's rate change lands a few ms into its block, so there it is the next block's key frame:
  // three).
  const auto rows =
      simulate([](std::uint32_t b) { return b < 20 ? kStream / 1.5 : per_us(200e6); }, 40)[0];
  EXPECT_LE(zero_from(rows, 20), 22u);
  for (std::size_t b = 20; b < rows.size(); ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
  }
}

TEST(CapacityPolicy, WidensAboveTheStreamWithoutLoss) {
  // 1/1.5 of the stream, then 1.4x the stream's mean (a bottleneck the key frame still queues
  // at): the dispersion rate says so in the first report, R = 0 from there, without loss.
  const auto rows =
      simulate([](std::uint32_t b) { return b < 20 ? kStream / 1.5 : 1.4 * kStream; }, 40)[0];
  EXPECT_LE(zero_from(rows, 20), 22u);
  for (std::size_t b = 20; b < rows.size(); ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
  }
}

TEST(CapacityPolicy, NoisyEmptyReadingsInCongestionCostNoLoss) {
  // The bed's end-of-block reading: every third block reads ~0 although a queue stands. With
  // the dispersion rate known, an idle reading buys no probe beyond it: no loss.
  const auto noisy = [](std::uint32_t b, double q) { return b % 3 == 2 ? 200.0 : q; };
  Scenario s;
  s.reading = noisy;
  const auto rows = simulate([](std::uint32_t) { return kStream / 1.5; }, 60, s)[0];
  for (std::size_t b = 3; b < rows.size(); ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
    EXPECT_NEAR(rows[b].rate, rows[b].minimum + kNear / 2, kNear / 2 + 0.005) << "block " << b;
  }
}

TEST(CapacityPolicy, StaircaseStaysNearTheMinimumInEveryPhase) {
  // The bed's staircase: above the stream, 1/2 of it, 1/1.2 of it, 1/3 of it, above it again.
  const auto cap = [](std::uint32_t b) {
    if (b < 10) return 1.3 * kStream;
    if (b < 25) return kStream / 2;
    if (b < 40) return kStream / 1.2;
    if (b < 55) return kStream / 3;
    return 1.3 * kStream;
  };
  const auto rows = simulate(cap, 70)[0];
  for (std::size_t b = 0; b < 10; ++b) {
    EXPECT_EQ(rows[b].rate, 0.0) << "block " << b;
  }
  // Every phase: near the minimum and loss-free from the third block on (the first two were
  // planned before the step was reported).
  for (std::size_t start : {10u, 25u, 40u}) {
    for (std::size_t b = start + 3; b < start + 15; ++b) {
      EXPECT_NEAR(rows[b].rate, rows[b].minimum + kNear / 2, kNear / 2 + 0.01) << "block " << b;
      EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
    }
  }
  // A step up costs nothing at all (25: 1/2 -> 1/1.2).
  for (std::size_t b = 25; b < 28; ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
  }
  // Back above the stream: R = 0 two blocks after the step.
  EXPECT_LE(zero_from(rows, 55), 57u);
}

TEST(CapacityPolicy, ThreeSessionsShareFairlyWithoutOscillation) {
  // Every session measures the aggregate rate by dispersion (3x its share): the received rate
  // under tail drop, not the dispersion, must set each one's estimate.
  Scenario s;
  s.sessions = 3;
  const auto rows = simulate([](std::uint32_t) { return 3 * kStream / 1.5; }, 80, s);
  // Jain's index over the bytes each session sent (1 - R) in the second half.
  std::vector<double> x(3, 0.0);
  int lossy = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t b = 40; b < 80; ++b) {
      x[i] += 1.0 - rows[i][b].rate;
      if (rows[i][b].loss > 0.002) ++lossy;
    }
  }
  double sum = 0;
  double sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  EXPECT_GE(sum * sum / (3 * sq), 0.95);
  // Probing finds the shared bottleneck busy and stops. The sessions here are synchronized, the
  // worst case: they probe in the same blocks, and their three key frames arrive together (33 kB
  // into a queue of 34 kB), so any queue left at a block's start costs a key frame's tail. At
  // most one lossy block in 5 per session (on the bed the sessions' blocks are offset).
  EXPECT_LE(lossy, 24) << "lossy blocks of 3 x 40";
}

TEST(CapacityPolicy, ALateJoinerGetsItsShare) {
  // Two sessions share 2 x 800 kbit/s; a third joins at block 20 and the bottleneck grows to
  // 3 x 800 kbit/s with it (as the bed's shared scenario, where the three sessions' onset blocks
  // see the congestion for different parts of the block and start from unequal estimates). The
  // newcomer starts from its own onset; over the next 40 blocks the three converge.
  Scenario s;
  s.sessions = 3;
  s.joins = {0, 0, 20};
  const auto rows =
      simulate([](std::uint32_t b) { return (b < 20 ? 2 : 3) * kStream / 1.5; }, 80, s);
  std::vector<double> x(3, 0.0);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t b = 60; b < 80; ++b) {
      x[i] += 1.0 - rows[i][b].rate;
    }
  }
  double sum = 0;
  double sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  EXPECT_GE(sum * sum / (3 * sq), 0.95) << x[0] << " " << x[1] << " " << x[2];
}

TEST(CapacityPolicy, UnresponsiveCrossTrafficIsGivenRoom) {
  // 1640 kbit/s shared with 800 kbit/s of unresponsive traffic in blocks 10-19 (the bed's
  // cross scenario): the estimate converges to the residual 840 kbit/s, and after the burst the
  // stream goes back to R = 0.
  Scenario s;
  s.cross = [](std::uint32_t b) { return b >= 10 && b < 20 ? per_us(0.8e6) : 0.0; };
  const auto rows = simulate([](std::uint32_t) { return per_us(1.64e6); }, 45, s)[0];
  for (std::size_t b = 0; b < 10; ++b) {
    EXPECT_EQ(rows[b].rate, 0.0) << "block " << b;
  }
  // Settled (the received rate converges geometrically): loss-free from the 6th block on.
  for (std::size_t b = 16; b < 20; ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
    EXPECT_GE(rows[b].rate, rows[b].minimum - 0.005) << "block " << b;
  }
  // After the burst: capped probes, then doubling ones, bounded by the dispersion rate. Nothing
  // in the reports tells an unresponsive flow that left from responsive peers that keep their
  // share, so this takes ~10 blocks, not 3 (bench/README.md).
  EXPECT_LE(zero_from(rows, 20), 32u);
  for (std::size_t b = 22; b < rows.size(); ++b) {
    EXPECT_LE(rows[b].loss, 0.002) << "block " << b;
  }
}

TEST(CapacityPolicy, WithoutPathMeasurementsItProbesAndReleases) {
  // A v1.0 receiver (or RTCP RR): no dispersion, no burst proof. Standing congestion is still
  // found from the received rate; an opened bottleneck by doubling probes.
  Scenario s;
  s.receiver = Receiver::kV10;
  const auto rows =
      simulate([](std::uint32_t b) { return b < 30 ? kStream / 1.5 : per_us(200e6); }, 60, s)[0];
  int lossy = 0;
  double mean_excess = 0;
  for (std::size_t b = 5; b < 30; ++b) {
    if (rows[b].loss > 0.002) ++lossy;
    mean_excess += (rows[b].rate - rows[b].minimum) / 25.0;
  }
  EXPECT_LE(lossy, 5) << "probes into the bottleneck";
  EXPECT_NEAR(mean_excess, 0.0, 0.06);
  EXPECT_LE(zero_from(rows, 30), 45u);
}

TEST(CapacityPolicy, WorksWithoutTheSenderHook) {
  // rate() only (as the DDL relay asks): blocks count as one unit, T is the base period.
  Scenario s;
  s.use_hook = false;
  const auto rows = simulate([](std::uint32_t) { return kStream / 1.5; }, 60, s)[0];
  // Block sizes are unknown to it, so it cannot follow the VBR block by block; on average it
  // sits within 0.1 above the minimum.
  double mean_rate = 0;
  double mean_min = 0;
  for (std::size_t b = 10; b < rows.size(); ++b) {
    mean_rate += rows[b].rate / static_cast<double>(rows.size() - 10);
    mean_min += rows[b].minimum / static_cast<double>(rows.size() - 10);
  }
  EXPECT_NEAR(mean_rate, mean_min, 0.1);
}

TEST(CapacityPolicy, ReceivedRateOnLoss) {
  CapacityPolicy c(CapacityParams{});
  (void)c.rate_for_next(StageStart{0, 150'000, kBlockUs, 0});
  (void)c.rate_for_next(StageStart{1, 150'000, kBlockUs, 150'000});
  StageReport r;
  r.stage = 0;
  r.packets_announced = 100;
  r.packets_received = 60;
  r.reception_period_us = 1'100'000;
  r.queue_delay_us = 100'000;
  r.performance = 20.0;
  r.rate_used = 0.0;
  ASSERT_TRUE(c.on_report(r).ok());
  EXPECT_TRUE(c.limited());
  // Delivered 60 % of 150 kB; the queue grew by 100 ms in the block: D / (T + growth).
  EXPECT_NEAR(c.capacity_estimate(), 150'000 * 0.6 / 1'100'000, 1e-9);
}

TEST(CapacityPolicy, DispersionCapsTheEstimateAndAloneTakesIt) {
  CapacityPolicy c(CapacityParams{});
  (void)c.rate_for_next(StageStart{0, 150'000, kBlockUs, 0});
  (void)c.rate_for_next(StageStart{1, 150'000, kBlockUs, 150'000});
  StageReport r;
  r.stage = 0;
  r.packets_announced = 100;
  r.packets_received = 70;
  r.reception_period_us = 1'000'000;
  r.queue_delay_us = 60'000;
  r.rate_used = 0.0;
  PathMeasurement p;
  p.bytes_received = 100'000;   // 100 kB over T + 60 ms: 0.0943 bytes/µs
  p.dispersion_bytes = 10'000;  // 0.1 bytes/µs = 800 kbit/s
  p.dispersion_us = 100'000;
  r.path = p;
  ASSERT_TRUE(c.on_report(r).ok());
  // Received 94 % of the dispersion rate: alone on the bottleneck, whose rate is the estimate.
  EXPECT_NEAR(c.bottleneck_rate(), 0.1, 1e-12);
  EXPECT_NEAR(c.capacity_estimate(), 0.1, 1e-12);
}

TEST(CapacityPolicy, TheDiscardCurveTurnsTheByteBudgetIntoR) {
  // Make it limited at a known estimate (alone: the dispersion rate, 0.1 bytes/µs), then plan a
  // 150 kB block of 100 packets whose priority order removes 300 bytes per packet for the first
  // 60 (disposable frames), 3000 after: 0.97 x 100 kB may be sent, 53 kB must go: 60 small
  // packets (18 kB) + 12 large (36 kB) = 72 packets, R = 0.72 (beta would say otherwise).
  CapacityPolicy c(CapacityParams{});
  (void)c.rate_for_next(StageStart{0, 150'000, kBlockUs, 0});
  (void)c.rate_for_next(StageStart{1, 150'000, kBlockUs, 150'000});
  StageReport r;
  r.stage = 0;
  r.packets_announced = 100;
  r.packets_received = 67;
  r.reception_period_us = 1'000'000;
  r.queue_delay_us = 60'000;  // a queue standing through the block: overuse, received rate
  PathMeasurement p;
  p.bytes_received = 100'000;
  p.queue_min_us = 60'000;
  p.dispersion_bytes = 10'000;
  p.dispersion_us = 100'000;
  r.path = p;
  ASSERT_TRUE(c.on_report(r).ok());
  ASSERT_NEAR(c.capacity_estimate(), 0.1, 1e-9);
  std::vector<std::uint64_t> removable(101, 0);
  for (std::size_t k = 1; k <= 100; ++k) {
    removable[k] = removable[k - 1] + (k <= 60 ? 300 : 3'000);
  }
  StageStart next{2, 150'000, kBlockUs, 300'000};
  next.packets = 100;
  next.removable = removable;
  // The queue the model expects at the start: block 1's bytes at Ĉ over T, capped.
  const double r2 = c.rate_for_next(next);
  const double keep = 0.97 * 0.1 * kBlockUs - 0.1 * c.predicted_queue_us();
  std::size_t k = 0;
  while (k < 100 && static_cast<double>(removable[k]) < 150'000 - keep) {
    ++k;
  }
  EXPECT_DOUBLE_EQ(r2, std::min(0.9, static_cast<double>(k) / 100.0));
}

TEST(CapacityPolicy, AnUndispersedKeyFrameEndsTheEpisode) {
  CapacityPolicy c(CapacityParams{});
  (void)c.rate_for_next(StageStart{0, 150'000, kBlockUs, 0});
  (void)c.rate_for_next(StageStart{1, 150'000, kBlockUs, 150'000});
  (void)c.rate_for_next(StageStart{2, 150'000, kBlockUs, 300'000});
  StageReport lossy;
  lossy.stage = 0;
  lossy.packets_announced = 100;
  lossy.packets_received = 70;
  lossy.reception_period_us = 1'000'000;
  lossy.queue_delay_us = 100'000;
  ASSERT_TRUE(c.on_report(lossy).ok());
  ASSERT_TRUE(c.limited());
  StageReport open = lossy;
  open.stage = 1;
  open.packets_received = 100;
  open.queue_delay_us = 0;
  PathMeasurement p;
  p.bytes_received = 150'000;
  p.burst_bytes = 4'000;  // below proof_bytes: a token bucket could have passed it
  p.burst_send_us = 9'000;
  p.burst_arrival_us = 9'000;
  open.path = p;
  ASSERT_TRUE(c.on_report(open).ok());
  EXPECT_TRUE(c.limited());
  open.stage = 2;
  open.path->burst_bytes = 10'000;   // ~8.9 Mbit/s, 7x the stream
  open.path->queue_max_us = 40'000;  // ... but something in the block queued: not conclusive
  ASSERT_TRUE(c.on_report(open).ok());
  EXPECT_TRUE(c.limited());
  open.stage = 3;
  open.path->queue_max_us = 3'000;  // conclusive
  (void)c.rate_for_next(StageStart{3, 150'000, kBlockUs, 450'000});
  ASSERT_TRUE(c.on_report(open).ok());
  EXPECT_FALSE(c.limited());
  EXPECT_EQ(c.rate_for_next(StageStart{4, 150'000, kBlockUs, 600'000}), 0.0);
}

TEST(CapacityPolicy, QualityFloorForcesAProbeOnlyWithoutNetworkLoss) {
  CapacityParams params;
  params.quality_floor = 30.0;
  const auto base = [&] {
    auto c = std::make_unique<CapacityPolicy>(params);
    (void)c->rate_for_next(StageStart{0, 150'000, kBlockUs, 0});
    (void)c->rate_for_next(StageStart{1, 150'000, kBlockUs, 150'000});
    StageReport r;
    r.stage = 0;
    r.packets_announced = 100;
    r.packets_received = 70;
    r.reception_period_us = 1'000'000;
    r.queue_delay_us = 100'000;
    r.performance = 20.0;
    EXPECT_TRUE(c->on_report(r).ok());
    return c;
  };
  // A busy, lossless block with P below the floor: the next block carries a probe.
  auto c = base();
  StageReport low;
  low.stage = 1;
  low.packets_announced = 100;
  low.packets_received = 100;
  low.reception_period_us = 1'000'000;
  low.queue_delay_us = 5'000;
  low.performance = 20.0;
  const double without = [&] {
    auto d = base();
    low.performance = 40.0;
    EXPECT_TRUE(d->on_report(low).ok());
    return d->rate_for_next(StageStart{2, 300'000, kBlockUs, 300'000});
  }();
  low.performance = 20.0;
  ASSERT_TRUE(c->on_report(low).ok());
  EXPECT_GT(without, 0.0);
  EXPECT_LT(c->rate_for_next(StageStart{2, 300'000, kBlockUs, 300'000}), without);
}

TEST(CapacityPolicy, MissingReportsBackOff) {
  CapacityPolicy c(CapacityParams{});
  (void)c.rate_for_next(StageStart{0, 150'000, kBlockUs, 0});
  (void)c.rate_for_next(StageStart{1, 150'000, kBlockUs, 150'000});
  StageReport r;
  r.stage = 0;
  r.packets_announced = 100;
  r.packets_received = 80;
  r.reception_period_us = 1'050'000;
  r.queue_delay_us = 100'000;
  ASSERT_TRUE(c.on_report(r).ok());
  const double before = c.capacity_estimate();
  (void)c.on_report_missing(1);
  EXPECT_EQ(c.capacity_estimate(), before);  // the first one is ignored
  (void)c.on_report_missing(2);
  EXPECT_NEAR(c.capacity_estimate(), before * 0.85, 1e-12);
}

TEST(CapacityPolicy, FactoryBuildsItAndValidatesParameters) {
  PolicyConfig cfg;
  cfg.policy = "capacity";
  auto made = make_rate_controller(cfg);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->name(), "capacity");
  cfg.capacity.margin = 1.5;
  auto bad = make_rate_controller(cfg);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("control.margin"), std::string::npos);
  cfg.capacity.margin = 0.97;
  cfg.capacity.probe_step_us = 105'000;  // beyond the 100 ms queue
  bad = make_rate_controller(cfg);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("control.probe_step_ms"), std::string::npos);
  cfg.capacity.probe_step_us = 50'000;
  cfg.capacity.initial_rate = 0.95;
  bad = make_rate_controller(cfg);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("control.r0"), std::string::npos);
}

TEST(CapacityPolicy, DefaultHookOfOtherPoliciesIsRate) {
  PolicyConfig cfg;
  cfg.policy = "fixed";
  cfg.fixed_rate = 0.3;
  auto made = make_rate_controller(cfg);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->rate_for_next(StageStart{0, 1000, kBlockUs, 0}), 0.3);
}

}  // namespace
}  // namespace predrop::core
