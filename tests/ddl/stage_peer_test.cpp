// ddl::StagePeer, the stage engine of both worker kinds (the C++ trainer and the external
// trainer's peer), on plain numbers as the clock: completion on I/O, the deadline's one grace
// pass, the PDSC without packets and the PDSC whose chunks never come, the relay's silence judged
// per stage, an aggregate that waited in the window, skipping ahead when too far behind,
// stopping at the job's last stage, and the idle close of a stage whose tail was lost.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "predrop/ddl/stage_peer.hpp"

using namespace predrop::ddl;

namespace {

constexpr std::uint64_t kMs = 1000;

// A 4-element tensor in 2 chunks of 2; the aggregate's chunk c of stage s holds s + c + 1.
class Harness {
 public:
  explicit Harness(std::uint32_t deadline_ms = 100, std::uint64_t silence_us = 1000 * kMs,
                   std::uint64_t idle_us = 0)
      : plan_(chunk_tensor(4, 2).value()),
        peer_(plan_, StagePeerConfig{deadline_ms, 8, silence_us, idle_us}) {}

  StagePeer& peer() { return peer_; }

  ChunkOutcome chunk(std::uint32_t stage, std::size_t c, std::uint64_t now,
                     std::uint16_t flags = 0) {
    const ChunkRange r = plan_[c];
    std::vector<float> values(r.count, static_cast<float>(stage + c + 1));
    auto& b = bytes_[c];
    b.assign(chunk_payload_size(r.count), 0);
    EXPECT_TRUE(encode_chunk({flags, 0, r.count, 4, r.offset}, values, b).ok());
    return peer_.on_chunk(stage, 2, parse_chunk(b).value(), now);
  }

 private:
  ChunkPlan plan_;
  StagePeer peer_;
  std::array<std::vector<std::uint8_t>, 2> bytes_;
};

TEST(StagePeer, CompleteStageClosesOnIoWithTheAverage) {
  Harness h;
  StagePeer& p = h.peer();
  EXPECT_FALSE(p.timer_due_us());
  EXPECT_EQ(p.begin(0, 0), 0U);
  EXPECT_TRUE(p.open());
  EXPECT_EQ(h.chunk(0, 0, 1 * kMs, kChunkFlagPartial), ChunkOutcome::kAccepted);
  EXPECT_FALSE(p.poll_io(1 * kMs));
  EXPECT_EQ(*p.timer_due_us(), 101 * kMs);  // the fixed D from the first chunk
  EXPECT_EQ(h.chunk(0, 1, 3 * kMs), ChunkOutcome::kAccepted);
  const auto r = p.poll_io(3 * kMs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stage, 0U);
  EXPECT_EQ(r->reason, CloseReason::kComplete);
  EXPECT_FALSE(p.open());
  EXPECT_FALSE(p.timer_due_us());
  EXPECT_EQ(p.partial(), 1U);
  EXPECT_EQ(std::vector<float>(p.aggregate().begin(), p.aggregate().end()),
            (std::vector<float>{1, 1, 2, 2}));
}

TEST(StagePeer, DeadlineGivesOneIoPassOfGraceThenCloses) {
  Harness h;
  StagePeer& p = h.peer();
  p.begin(0, 0);
  h.chunk(0, 0, 1 * kMs);
  // The timer fires at the deadline: first only one more I/O pass.
  auto c = p.on_timer(101 * kMs, true);
  EXPECT_FALSE(c.closed);
  EXPECT_FALSE(c.silent);
  EXPECT_EQ(*p.timer_due_us(), 101 * kMs + StagePeer::kGraceUs);
  // That pass finds the last chunk (read late, stamped late): the stage is complete.
  h.chunk(0, 1, 101 * kMs + 500);
  const auto r = p.poll_io(101 * kMs + 500);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, CloseReason::kComplete);

  // Next stage: nothing in the grace pass, so it closes at the deadline with one chunk missing.
  p.begin(1, 200 * kMs);
  h.chunk(1, 1, 201 * kMs);
  EXPECT_FALSE(p.on_timer(301 * kMs, true).closed);
  c = p.on_timer(302 * kMs, true);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.closed->stage, 1U);
  EXPECT_EQ(c.closed->reason, CloseReason::kDeadline);
  EXPECT_EQ(std::vector<std::uint16_t>(p.received().begin(), p.received().end()),
            (std::vector<std::uint16_t>{0, 1}));
  EXPECT_EQ(p.aggregate()[0], 0.0F);
  EXPECT_EQ(p.aggregate()[2], 3.0F);
}

TEST(StagePeer, PollWithoutGraceJudgesTheDeadlineAtOnce) {
  Harness h;
  StagePeer& p = h.peer();
  p.begin(0, 0);
  h.chunk(0, 0, 1 * kMs);
  EXPECT_FALSE(p.on_timer(100 * kMs, false).closed);
  const auto c = p.on_timer(101 * kMs, false);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.closed->reason, CloseReason::kDeadline);
}

TEST(StagePeer, PdscWithoutPacketsClosesAtOnce) {
  Harness h;
  StagePeer& p = h.peer();
  p.begin(0, 0);
  const auto r = p.on_stage_closed(StageClosed{0, 0, 0, 2}, 5 * kMs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stage, 0U);
  EXPECT_EQ(r->received, 0U);
  EXPECT_FALSE(p.open());
  EXPECT_EQ(p.relay_closed(), 0U);
}

TEST(StagePeer, PdscWhoseChunksNeverComeClosesAfterDeadlinePlusSlack) {
  Harness h;
  StagePeer& p = h.peer();
  p.begin(0, 0);
  EXPECT_FALSE(p.on_stage_closed(StageClosed{0, 0, 2, 2}, 10 * kMs));
  ASSERT_TRUE(p.closed_info());
  const std::uint64_t due = 10 * kMs + 100 * kMs + StagePeer::kNoChunkSlackUs;
  EXPECT_EQ(*p.timer_due_us(), due);
  EXPECT_FALSE(p.on_timer(due - 1, true).closed);
  const auto c = p.on_timer(due, true);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.closed->reason, CloseReason::kForced);
  EXPECT_EQ(c.closed->received, 0U);
}

TEST(StagePeer, SilenceIsJudgedPerStageAndSaysWhetherTheRelayWasHeard) {
  Harness h(100, 1000 * kMs);
  StagePeer& p = h.peer();
  p.begin(0, 0);
  EXPECT_EQ(*p.timer_due_us(), 1000 * kMs);
  EXPECT_FALSE(p.on_timer(999 * kMs, true).silent);
  auto c = p.on_timer(1000 * kMs, true);
  EXPECT_TRUE(c.silent);
  EXPECT_FALSE(c.heard_other_stages);
  EXPECT_FALSE(c.closed);

  // The relay's word about other stages (it moved on) is no progress of this one.
  Harness g(100, 1000 * kMs);
  StagePeer& q = g.peer();
  q.begin(0, 0);
  EXPECT_FALSE(q.on_stage_closed(StageClosed{3, 0, 2, 2}, 600 * kMs));
  c = q.on_timer(1000 * kMs, true);
  EXPECT_TRUE(c.silent);
  EXPECT_TRUE(c.heard_other_stages);

  // A later stage's chunk starts the open stage's clock: it closes, empty, at its deadline.
  Harness e(100, 1000 * kMs);
  StagePeer& u = e.peer();
  u.begin(0, 0);
  EXPECT_EQ(e.chunk(3, 0, 500 * kMs), ChunkOutcome::kAccepted);  // held in the window
  EXPECT_FALSE(u.poll_io(500 * kMs));
  c = u.on_timer(*u.timer_due_us(), false);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.closed->stage, 0U);
  EXPECT_EQ(c.closed->received, 0U);
  EXPECT_FALSE(c.silent);

  // A chunk of the open stage moves the bound.
  Harness k(0, 1000 * kMs);
  StagePeer& r = k.peer();
  r.begin(0, 0);
  k.chunk(0, 0, 700 * kMs);
  EXPECT_FALSE(r.on_timer(1000 * kMs, false).silent);
}

TEST(StagePeer, AggregateThatWaitedInTheWindowClosesAtBegin) {
  Harness h;
  StagePeer& p = h.peer();
  p.begin(0, 0);
  // The relay closed stage 1 without this peer's stage 0 being done yet: its chunks wait.
  h.chunk(1, 0, 2 * kMs);
  h.chunk(1, 1, 3 * kMs);
  h.chunk(0, 0, 4 * kMs);
  h.chunk(0, 1, 5 * kMs);
  ASSERT_TRUE(p.poll_io(5 * kMs));
  EXPECT_EQ(p.begin(1, 6 * kMs), 1U);
  const auto r = p.poll_io(6 * kMs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stage, 1U);
  EXPECT_EQ(r->reason, CloseReason::kComplete);
  EXPECT_EQ(p.aggregate()[0], 2.0F);
}

TEST(StagePeer, SkipsToTheRelaysStageWhenAWindowBehind) {
  Harness h;
  StagePeer& p = h.peer();
  p.begin(0, 0);
  ASSERT_TRUE(p.on_stage_closed(StageClosed{0, 0, 0, 2}, 1 * kMs));
  // The relay went on to close stage 6: 6 behind, within the window (8) - 1.
  EXPECT_FALSE(p.on_stage_closed(StageClosed{6, 1, 2, 2}, 2 * kMs));
  EXPECT_EQ(p.begin(1, 3 * kMs), 1U);
  EXPECT_EQ(p.skipped(), 0U);
  ASSERT_TRUE(p.on_stage_closed(StageClosed{1, 0, 0, 2}, 4 * kMs));
  // Stage 9 closed at the relay: stage 2 is 7 behind, its aggregate is gone; skip to 10.
  EXPECT_FALSE(p.on_stage_closed(StageClosed{9, 1, 2, 2}, 5 * kMs));
  EXPECT_EQ(p.begin(2, 6 * kMs), 10U);
  EXPECT_EQ(p.skipped(), 8U);
  EXPECT_EQ(p.stage(), 10U);
  EXPECT_EQ(h.chunk(10, 0, 7 * kMs), ChunkOutcome::kAccepted);
  EXPECT_EQ(h.chunk(10, 1, 8 * kMs), ChunkOutcome::kAccepted);
  ASSERT_TRUE(p.poll_io(8 * kMs));
}

// The job runs stages 0..9. The peer fell behind after stage 0 while the relay closed every stage
// to the last one without it (the others then leave). Skipping ahead lands past the job's end:
// that stage, and every later one the trainer's loop still submits, closes at once with nothing
// received, instead of waiting for aggregates nobody will send until the relay's silence.
TEST(StagePeer, StopsAtTheJobsLastStageAfterSkippingAhead) {
  Harness h(100, 1000 * kMs);
  StagePeer& p = h.peer();
  p.set_last_stage(9);
  p.begin(0, 0);
  ASSERT_TRUE(p.on_stage_closed(StageClosed{0, 0, 0, 2}, 1 * kMs));
  for (std::uint32_t s = 1; s <= 9; ++s) {
    EXPECT_FALSE(p.on_stage_closed(StageClosed{s, 1, 2, 2}, (1 + s) * kMs));
  }
  EXPECT_EQ(p.begin(1, 20 * kMs), 10U);  // 8 behind: skipped to the stage after 9
  EXPECT_EQ(p.skipped(), 9U);
  EXPECT_TRUE(p.ended());
  EXPECT_EQ(*p.timer_due_us(), 20 * kMs);  // due now, not at the silence
  const auto r = p.poll_io(20 * kMs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stage, 10U);
  EXPECT_EQ(r->reason, CloseReason::kEnded);
  EXPECT_EQ(r->received, 0U);
  EXPECT_FALSE(p.open());
  // The loop's remaining iterations: each closes at once, on I/O or on the timer.
  EXPECT_EQ(p.begin(11, 21 * kMs), 11U);
  const StageCheck c = p.on_timer(2000 * kMs, true);
  EXPECT_FALSE(c.silent);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.closed->reason, CloseReason::kEnded);
}

TEST(StagePeer, RunsTheLastStageItselfAndNoFurther) {
  Harness h;
  StagePeer& p = h.peer();
  p.set_last_stage(1);
  EXPECT_EQ(p.begin(1, 0), 1U);
  EXPECT_FALSE(p.ended());
  EXPECT_FALSE(p.poll_io(0));  // the last stage waits for its aggregate as any other
  h.chunk(1, 0, 1 * kMs);
  h.chunk(1, 1, 2 * kMs);
  const auto r = p.poll_io(2 * kMs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, CloseReason::kComplete);
  EXPECT_EQ(p.begin(2, 3 * kMs), 2U);
  EXPECT_TRUE(p.ended());
  ASSERT_TRUE(p.poll_io(3 * kMs));
}

// Behind a queue that overflowed, the end of the aggregate's burst never comes: with an idle time
// the stage closes that long after its last chunk (one I/O pass of grace first, as at D), not at
// D; a chunk within the idle time moves the close.
TEST(StagePeer, IdleTimeClosesBeforeTheDeadlineWhenTheRestIsLost) {
  Harness h(400, 1000 * kMs, 30 * kMs);
  StagePeer& p = h.peer();
  p.begin(0, 0);
  EXPECT_EQ(*p.timer_due_us(), 1000 * kMs);  // no chunk yet: only the silence
  h.chunk(0, 0, 10 * kMs);
  EXPECT_FALSE(p.poll_io(10 * kMs));
  EXPECT_EQ(*p.timer_due_us(), 40 * kMs);  // 30 ms after the last chunk, before D (410 ms)
  EXPECT_FALSE(p.on_timer(39 * kMs, true).closed);
  EXPECT_FALSE(p.on_timer(40 * kMs, true).closed);  // the grace pass
  EXPECT_EQ(*p.timer_due_us(), 41 * kMs);
  const StageCheck c = p.on_timer(41 * kMs, true);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.closed->reason, CloseReason::kIdle);
  EXPECT_EQ(c.closed->received, 1U);
  EXPECT_EQ(p.received()[0], 1U);
  EXPECT_EQ(p.received()[1], 0U);

  // Stage 1: its second chunk comes within the idle time of the first and completes it.
  p.begin(1, 50 * kMs);
  h.chunk(1, 0, 60 * kMs);
  EXPECT_FALSE(p.on_timer(85 * kMs, true).closed);
  h.chunk(1, 1, 89 * kMs);
  const auto r = p.poll_io(89 * kMs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, CloseReason::kComplete);
}

TEST(StagePeer, WithoutAnIdleTimeALostTailWaitsForTheDeadline) {
  Harness h(400);
  StagePeer& p = h.peer();
  p.begin(0, 0);
  h.chunk(0, 0, 10 * kMs);
  EXPECT_EQ(*p.timer_due_us(), 410 * kMs);
  EXPECT_FALSE(p.on_timer(200 * kMs, false).closed);
}

TEST(StagePeer, RejectsAWindowOfOne) {
  const ChunkPlan plan = chunk_tensor(4, 2).value();
  EXPECT_THROW(StagePeer(plan, StagePeerConfig{100, 1, 1000}), std::invalid_argument);
}

}  // namespace
