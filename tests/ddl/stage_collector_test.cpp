// StageCollector and DeadlineEstimator with a scripted clock: completion, the adaptive deadline
// (initial, median, floor, cap, extrapolation), late and too-early chunks, the look-ahead window,
// an empty stage whose peers moved on, forced closing and stage-id wrap-around.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "predrop/ddl/stage_collector.hpp"

using namespace predrop::ddl;
using Bytes = std::vector<std::uint8_t>;

namespace {

// Two contributors, a 12-element tensor in 3 chunks of 4; contributor w's values are w + 1.
class Harness {
 public:
  static constexpr std::uint32_t kWorkers = 2;

  explicit Harness(DeadlineConfig cfg = {10'000, 100'000, 50'000, 2.0, 5})
      : plan_(chunk_tensor(12, 4).value()), rx_(plan_, kWorkers, cfg) {
    for (std::uint32_t w = 0; w < kWorkers; ++w) {
      for (std::size_t c = 0; c < plan_.size(); ++c) {
        const ChunkRange r = plan_[c];
        std::vector<float> values(r.count, static_cast<float>(w + 1));
        Bytes b(chunk_payload_size(r.count));
        EXPECT_TRUE(encode_chunk({0, 0, r.count, 12, r.offset}, values, b).ok());
        bytes_[w][c] = b;
      }
    }
  }

  ChunkOutcome send(std::uint32_t stage, std::uint32_t w, std::size_t c, std::uint64_t now,
                    std::uint16_t announced = 3) {
    return rx_.on_chunk(stage, w, announced, parse_chunk(bytes_[w][c]).value(), now);
  }
  // All chunks of a stage from every worker, `step` us apart starting at `t0`.
  std::uint64_t send_all(std::uint32_t stage, std::uint64_t t0, std::uint64_t step) {
    std::uint64_t t = t0;
    for (std::size_t c = 0; c < plan_.size(); ++c) {
      for (std::uint32_t w = 0; w < kWorkers; ++w) {
        EXPECT_EQ(send(stage, w, c, t), ChunkOutcome::kAccepted);
        t += step;
      }
    }
    return t - step;
  }
  std::optional<ClosedStage> poll(std::uint64_t now) { return rx_.poll(now, avg_, counts_); }

  ChunkPlan plan_;
  StageCollector rx_;
  Bytes bytes_[kWorkers][3];
  std::vector<float> avg_ = std::vector<float>(12);
  std::vector<std::uint16_t> counts_ = std::vector<std::uint16_t>(3);
};

class StageCollectorTest : public ::testing::Test, public Harness {};

}  // namespace

TEST(DeadlineEstimator, InitialThenMedianWithFloorAndCap) {
  DeadlineEstimator d({10'000, 100'000, 50'000, 2.0, 5});
  EXPECT_EQ(d.deadline_us(), 50'000u);
  d.record(20'000);
  EXPECT_EQ(d.deadline_us(), 40'000u);  // 2 x 20 ms
  d.record(30'000);
  EXPECT_EQ(d.deadline_us(), 60'000u);  // upper median of {20, 30} ms
  d.record(1'000'000);                  // one outlier does not move the median far
  EXPECT_EQ(d.deadline_us(), 60'000u);
  for (int i = 0; i < 5; ++i)
    d.record(1'000);
  EXPECT_EQ(d.deadline_us(), 10'000u);  // floor: 2 x 1 ms < 10 ms
  for (int i = 0; i < 3; ++i)
    d.record(80'000);
  EXPECT_EQ(d.deadline_us(), 100'000u);  // cap: 2 x 80 ms > 100 ms
  EXPECT_EQ(d.samples(), 5u);
}

TEST(DeadlineEstimator, ConfigValidation) {
  EXPECT_TRUE(DeadlineConfig{}.validate().ok());
  EXPECT_TRUE(DeadlineConfig::fixed(7'000).validate().ok());
  EXPECT_FALSE((DeadlineConfig{10, 5, 7, 2.0, 5}.validate().ok()));    // min > max
  EXPECT_FALSE((DeadlineConfig{10, 50, 70, 2.0, 5}.validate().ok()));  // initial > max
  EXPECT_FALSE((DeadlineConfig{10, 50, 20, 0.0, 5}.validate().ok()));  // multiplier
  EXPECT_FALSE((DeadlineConfig{10, 50, 20, 2.0, 0}.validate().ok()));  // history
  EXPECT_FALSE((DeadlineConfig{10, 50, 20, 2.0, 65}.validate().ok()));
  EXPECT_THROW(DeadlineEstimator(DeadlineConfig{10, 5, 7, 2.0, 5}), std::invalid_argument);
  DeadlineEstimator fixed(DeadlineConfig::fixed(7'000));
  fixed.record(1);
  EXPECT_EQ(fixed.deadline_us(), 7'000u);
  fixed.record(1'000'000);
  EXPECT_EQ(fixed.deadline_us(), 7'000u);
}

TEST_F(StageCollectorTest, CompleteStageClosesAtItsLastChunk) {
  rx_.start(0);
  EXPECT_FALSE(rx_.deadline_at_us().has_value());
  send(0, 0, 0, 1'000);
  send(0, 1, 0, 1'500);
  EXPECT_EQ(*rx_.deadline_at_us(), 1'000u + 50'000u);  // initial D from the first arrival
  send(0, 0, 1, 2'000);
  send(0, 1, 1, 2'500);
  send(0, 0, 2, 3'000);
  EXPECT_FALSE(poll(3'000).has_value());
  send(0, 1, 2, 4'000);
  auto r = poll(4'000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stage, 0u);
  EXPECT_EQ(r->reason, CloseReason::kComplete);
  EXPECT_EQ(r->period_us(), 3'000u);
  EXPECT_EQ(r->received, 6u);
  EXPECT_EQ(r->expected, 6u);
  EXPECT_EQ(r->missing, 0u);
  EXPECT_EQ(r->lost, 0u);
  EXPECT_EQ(r->chunks_full, 3u);
  ASSERT_EQ(r->contributors.size(), 2u);
  EXPECT_EQ(r->contributors[1].period_us(), 2'500u);
  EXPECT_EQ(avg_, std::vector<float>(12, 1.5f));
  EXPECT_EQ(counts_, (std::vector<std::uint16_t>{2, 2, 2}));
  EXPECT_EQ(rx_.current_stage(), 1u);
  EXPECT_EQ(rx_.deadline_budget_us(), 10'000u);  // max(10 ms floor, 2 x 3 ms)
  EXPECT_FALSE(poll(4'000).has_value());
}

TEST_F(StageCollectorTest, PreDiscardedChunksDoNotDelayCompletion) {
  rx_.start(0);
  // Worker 0 pre-discarded one chunk and announces 2 sent; worker 1 sends all 3.
  send(0, 0, 0, 100, 2);
  send(0, 0, 2, 200, 2);
  send(0, 1, 0, 300);
  send(0, 1, 1, 400);
  EXPECT_FALSE(poll(400).has_value());
  send(0, 1, 2, 500);
  auto r = poll(500);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->reason, CloseReason::kComplete);
  EXPECT_EQ(r->expected, 5u);
  EXPECT_EQ(r->missing, 1u);  // the pre-discarded plan slot
  EXPECT_EQ(r->lost, 0u);     // nothing lost in the network
  EXPECT_EQ(r->chunks_partial, 1u);
  EXPECT_EQ(counts_, (std::vector<std::uint16_t>{2, 1, 2}));
  // Chunk 1 is worker 1's alone: average over the one contributor that arrived.
  EXPECT_EQ(avg_[4], 2.0f);
  EXPECT_EQ(avg_[0], 1.5f);
}

TEST_F(StageCollectorTest, DeadlineClosesAnIncompleteStage) {
  rx_.start(7);
  send(7, 0, 0, 10'000);
  send(7, 0, 1, 11'000);
  send(7, 1, 0, 12'000);
  // Worker 1's chunks 1, 2 and worker 0's chunk 2 never arrive.
  EXPECT_EQ(*rx_.deadline_at_us(), 60'000u);
  EXPECT_FALSE(poll(59'999).has_value());
  auto r = poll(60'000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stage, 7u);
  EXPECT_EQ(r->reason, CloseReason::kDeadline);
  EXPECT_EQ(r->deadline_budget_us, 50'000u);
  EXPECT_EQ(r->received, 3u);
  EXPECT_EQ(r->lost, 3u);
  EXPECT_EQ(r->missing, 3u);
  EXPECT_EQ(r->chunks_full, 1u);
  EXPECT_EQ(r->chunks_partial, 1u);
  EXPECT_EQ(r->chunks_empty, 1u);
  EXPECT_EQ(avg_, (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f, 1, 1, 1, 1, 0, 0, 0, 0}));
  // The incomplete stage's period 2 ms is extrapolated by expected / received = 6 / 3 to 4 ms,
  // so D = max(floor 10 ms, 2 x 4 ms).
  EXPECT_EQ(rx_.estimator().samples(), 1u);
  EXPECT_EQ(rx_.deadline_budget_us(), 10'000u);
  EXPECT_EQ(rx_.counters().stages_deadline, 1u);
  EXPECT_EQ(rx_.counters().lost, 3u);
}

TEST_F(StageCollectorTest, SteadyLossStillAdaptsTheDeadline) {
  // Every stage loses worker 1's last chunk: without extrapolation no stage would ever be complete
  // and D would stay at its initial 50 ms.
  Harness f(DeadlineConfig{1'000, 100'000, 50'000, 2.0, 5});
  f.rx_.start(0);
  std::uint64_t t = 0;
  for (std::uint32_t s = 0; s < 6; ++s) {
    const std::uint64_t t0 = t;
    for (std::size_t c = 0; c < 3; ++c) {
      f.send(s, 0, c, t0 + c * 2'000);
      if (c < 2) f.send(s, 1, c, t0 + c * 2'000 + 1'000);
    }
    // Last arrival at t0 + 4 ms; 5 of 6 arrived.
    const std::uint64_t close_at = *f.rx_.deadline_at_us();
    auto r = f.poll(close_at);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->reason, CloseReason::kDeadline);
    t = close_at + 1'000;
  }
  // Period 4 ms x 6 / 5 = 4.8 ms; D = 2 x 4.8 = 9.6 ms.
  EXPECT_EQ(f.rx_.deadline_budget_us(), 9'600u);
}

TEST_F(StageCollectorTest, AnAlwaysLateContributorGrowsTheDeadlineUntilItIsIn) {
  // Worker 0 sends its chunks at once; worker 1 (behind a slower path) always starts 30 ms after
  // the stage's first chunk. A stage closed by the deadline without worker 1 contributes no
  // extrapolated period (worker 1 sent nothing in it); its first late chunk contributes 30 ms.
  // D grows to 2 x 30 ms and from then on every stage waits for worker 1 and closes complete.
  Harness f(DeadlineConfig{1'000, 1'000'000, 5'000, 2.0, 5});
  f.rx_.start(0);
  std::vector<CloseReason> reasons;
  std::uint64_t t0 = 0;
  for (std::uint32_t s = 0; s < 12; ++s) {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> events;  // (time, worker), chunk c
    for (std::uint64_t c = 0; c < 3; ++c) {
      events.emplace_back(t0 + c * 1'000, 0);
      events.emplace_back(t0 + 30'000 + c * 1'000, 1);
    }
    std::sort(events.begin(), events.end());
    std::size_t next_chunk[2] = {0, 0};
    for (const auto& [t, w] : events) {
      if (const auto at = f.rx_.deadline_at_us(); at && *at <= t) {
        if (auto r = f.poll(*at)) reasons.push_back(r->reason);
      }
      (void)f.send(s, w, next_chunk[w]++, t);
      if (auto r = f.poll(t)) reasons.push_back(r->reason);
    }
    if (const auto at = f.rx_.deadline_at_us(); at && reasons.size() == s) {
      if (auto r = f.poll(*at)) reasons.push_back(r->reason);
    }
    ASSERT_EQ(reasons.size(), s + 1U) << "stage " << s;
    t0 += 100'000;
  }
  EXPECT_EQ(reasons.front(), CloseReason::kDeadline);
  EXPECT_GE(f.rx_.counters().late_periods, 1U);
  for (std::size_t s = 8; s < reasons.size(); ++s) {
    EXPECT_EQ(reasons[s], CloseReason::kComplete) << "stage " << s;
  }
  EXPECT_GE(f.rx_.deadline_budget_us(), 60'000U);
}

TEST_F(StageCollectorTest, AOneOffLateChunkHoldsTheDeadlineUpFor32Stages) {
  // Both workers send at once (L = 1 ms, D at the 5 ms floor) until, in stage 10, worker 1 is
  // 40 ms late (an evaluation, a preemption): the stage closes at the deadline without it, and
  // its late chunk holds D at 1.25 x 40 ms = 50 ms for 32 stages, though the median of the short
  // periods alone would give 5 ms again; after that D falls back.
  Harness f(DeadlineConfig{5'000, 1'000'000, 5'000, 2.0, 5});
  f.rx_.start(0);
  std::uint64_t t = 0;
  auto on_time = [&](std::uint32_t s) {
    for (std::uint32_t w = 0; w < 2; ++w) {
      for (std::size_t c = 0; c < 3; ++c) {
        (void)f.send(s, w, c, t + c * 200 + w * 100);
      }
    }
    auto r = f.poll(t + 1'000);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->reason, CloseReason::kComplete) << "stage " << s;
    t += 20'000;
  };
  for (std::uint32_t s = 0; s < 10; ++s)
    on_time(s);
  EXPECT_EQ(f.rx_.deadline_budget_us(), 5'000U);
  // Stage 10: worker 0 only; the deadline closes it; worker 1's chunks come 40 ms after base.
  for (std::size_t c = 0; c < 3; ++c)
    (void)f.send(10, 0, c, t + c * 200);
  auto r = f.poll(*f.rx_.deadline_at_us());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->reason, CloseReason::kDeadline);
  EXPECT_EQ(f.send(10, 1, 0, t + 40'000), ChunkOutcome::kLate);
  EXPECT_EQ(f.rx_.counters().late_periods, 1U);
  EXPECT_EQ(f.rx_.deadline_budget_us(), 50'000U);
  t += 60'000;
  for (std::uint32_t s = 11; s < 42; ++s) {
    on_time(s);
    EXPECT_EQ(f.rx_.deadline_budget_us(), 50'000U) << "after stage " << s;
  }
  on_time(42);  // stage 43 is the 33rd after the late one: the hold is over
  EXPECT_EQ(f.rx_.deadline_budget_us(), 5'000U);
}

TEST_F(StageCollectorTest, LateAndTooEarlyChunksAreCountedAndDropped) {
  rx_.start(0);
  send_all(0, 0, 10);
  ASSERT_TRUE(poll(100).has_value());
  EXPECT_EQ(send(0, 0, 0, 200), ChunkOutcome::kLate);      // stage 0 is closed
  EXPECT_EQ(send(3, 0, 0, 200), ChunkOutcome::kTooEarly);  // current 1, window 2: 1..2 held
  EXPECT_EQ(send(2, 0, 0, 200), ChunkOutcome::kAccepted);  // next-but-current: buffered
  EXPECT_EQ(send(2, 0, 0, 201), ChunkOutcome::kDuplicate);
  EXPECT_EQ(rx_.on_chunk(1, 5, 3, parse_chunk(bytes_[0][0]).value(), 202),
            ChunkOutcome::kRejected);  // no contributor 5
  const auto& n = rx_.counters();
  EXPECT_EQ(n.late, 1u);
  EXPECT_EQ(n.too_early, 1u);
  EXPECT_EQ(n.duplicate, 1u);
  EXPECT_EQ(n.rejected, 1u);
  EXPECT_EQ(n.received, 7u);
}

TEST_F(StageCollectorTest, NextStageIsBufferedAndMayCloseRightAfter) {
  rx_.start(0);
  send(0, 0, 0, 0);
  send_all(1, 100, 10);  // stage 1 complete before stage 0
  EXPECT_FALSE(poll(200).has_value());
  for (std::size_t c = 1; c < 3; ++c)
    send(0, 0, c, 300);
  for (std::size_t c = 0; c < 3; ++c)
    send(0, 1, c, 400);
  auto r0 = poll(400);
  ASSERT_TRUE(r0.has_value());
  EXPECT_EQ(r0->stage, 0u);
  auto r1 = poll(400);
  ASSERT_TRUE(r1.has_value());
  EXPECT_EQ(r1->stage, 1u);
  EXPECT_EQ(r1->reason, CloseReason::kComplete);
  EXPECT_EQ(r1->first_us, 100u);
  EXPECT_EQ(avg_, std::vector<float>(12, 1.5f));
  EXPECT_FALSE(poll(400).has_value());
  EXPECT_EQ(rx_.current_stage(), 2u);
}

TEST_F(StageCollectorTest, EmptyStageTimesOutOnceThePeersMoveOn) {
  rx_.start(4);
  EXPECT_FALSE(poll(1'000'000).has_value());  // nothing at all: no clock, no close
  send(5, 0, 0, 2'000'000);                   // somebody is already on stage 5
  EXPECT_EQ(*rx_.deadline_at_us(), 2'050'000u);
  EXPECT_FALSE(poll(2'049'999).has_value());
  auto r = poll(2'050'000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stage, 4u);
  EXPECT_EQ(r->received, 0u);
  EXPECT_EQ(r->chunks_empty, 3u);
  EXPECT_EQ(avg_, std::vector<float>(12, 0.0f));
  EXPECT_EQ(rx_.estimator().samples(), 0u);  // nothing learned from an empty stage
  EXPECT_EQ(rx_.current_stage(), 5u);
  EXPECT_EQ(*rx_.deadline_at_us(), 2'050'000u);  // stage 5's clock started at its first chunk
}

TEST_F(StageCollectorTest, ForceCloseWorksWithNothingReceived) {
  std::vector<float> avg(12, 9.0f);
  std::vector<std::uint16_t> counts(3, 9);
  EXPECT_FALSE(rx_.force_close(0, avg, counts).has_value());  // no stage known yet
  rx_.start(10);
  auto r = rx_.force_close(5, avg, counts);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stage, 10u);
  EXPECT_EQ(r->reason, CloseReason::kForced);
  EXPECT_EQ(avg, std::vector<float>(12, 0.0f));
  EXPECT_EQ(counts, std::vector<std::uint16_t>(3, 0));
  EXPECT_EQ(rx_.counters().stages_forced, 1u);
  EXPECT_EQ(rx_.current_stage(), 11u);
}

TEST_F(StageCollectorTest, FirstChunkSetsTheStageWithoutStart) {
  EXPECT_FALSE(rx_.current_stage().has_value());
  EXPECT_EQ(send(42, 1, 2, 5), ChunkOutcome::kAccepted);
  EXPECT_EQ(rx_.current_stage(), 42u);
  EXPECT_EQ(send(41, 1, 1, 6), ChunkOutcome::kLate);
}

TEST_F(StageCollectorTest, StageIdsWrapAround) {
  rx_.start(0xffffffffu);
  EXPECT_EQ(send(0, 0, 0, 10), ChunkOutcome::kAccepted);  // 0 is one after 0xffffffff
  EXPECT_EQ(send(0xfffffffeu, 0, 0, 10), ChunkOutcome::kLate);
  send_all(0xffffffffu, 20, 1);
  auto r = poll(100);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stage, 0xffffffffu);
  EXPECT_EQ(rx_.current_stage(), 0u);
}
