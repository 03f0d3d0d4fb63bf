// The relay client's join rules (ddl/include/predrop/ddl/relay_client_join.hpp) on plain numbers
// as the clock: retries every 250 ms and the join time-out; the challenge and the answers that
// are not this worker's; waiting with the PDJN as keep-alive, the start and its time-out, the
// relay's silence; keep-alives while running; refusals and removals.
#include <gtest/gtest.h>

#include <cstdint>

#include "predrop/ddl/relay_client_join.hpp"

using namespace predrop::ddl;

namespace {

constexpr std::uint64_t kMs = 1000;
constexpr std::uint64_t kT0 = 1'000 * kMs;
constexpr std::uint64_t kWorkerNonce = 0x1111;
constexpr std::uint64_t kJobNonce = 0x2222;
constexpr std::uint32_t kRelaySsrc = 0xabcd;

JoinLimits limits(std::uint64_t start_timeout_ms = 0) {
  JoinLimits l;
  l.join_timeout_us = 1'000 * kMs;
  l.start_timeout_us = start_timeout_ms * kMs;
  l.relay_silence_us = 600 * kMs;
  return l;  // retries and keep-alives every 250 ms (the defaults)
}

JoinAnswer answer(JoinStatus status, std::uint64_t job_nonce = kJobNonce,
                  std::uint64_t worker_nonce = kWorkerNonce) {
  JoinAnswer a;
  a.status = status;
  a.rank = 1;
  a.workers = 2;
  a.job_nonce = job_nonce;
  a.worker_nonce = worker_nonce;
  return a;
}

// A worker that was challenged at kT0 and sent its echoing PDJN then.
JoinState challenged() {
  JoinState s = begin_join(kWorkerNonce, kT0);
  const AnswerVerdict v = judge_answer(s, answer(JoinStatus::kChallenge), kRelaySsrc);
  EXPECT_TRUE(v.send_join);
  note_join_sent(s, kT0);
  return s;
}

TEST(RelayClientJoin, RetriesEvery250MsThenGivesUpJustPastTheTimeout) {
  const JoinLimits l = limits();
  JoinState s = begin_join(kWorkerNonce, kT0);
  int joins = 1;  // the first PDJN went with begin_join
  std::uint64_t now = kT0;
  std::optional<JoinFailure> failure;
  while (!failure) {
    const auto due = join_due_us(s, l);
    ASSERT_TRUE(due);
    ASSERT_GT(*due, now);
    now = *due;
    const JoinCheck c = check_join(s, now, l);
    failure = c.failure;
    if (c.send_join) {
      ++joins;
      note_join_sent(s, now);
    }
  }
  // PDJN at 0, 250, 500, 750 and 1000 ms; the time-out 1 µs after 1000 ms.
  EXPECT_EQ(joins, 5);
  EXPECT_EQ(now, kT0 + 1'000 * kMs + 1);
  EXPECT_EQ(*failure, JoinFailure::kNoAnswer);
  EXPECT_NE(join_failure_text(*failure, "127.0.0.1:9", l)
                .find("no answer from the relay at "
                      "127.0.0.1:9 within 1000 ms"),
            std::string::npos);
}

TEST(RelayClientJoin, TheChallengeNamesTheJobAndTheRelay) {
  JoinState s = begin_join(kWorkerNonce, kT0);
  const AnswerVerdict v = judge_answer(s, answer(JoinStatus::kChallenge), kRelaySsrc);
  EXPECT_TRUE(v.send_join);
  EXPECT_FALSE(v.stale || v.joined || v.started || v.failure);
  EXPECT_EQ(s.job_nonce, kJobNonce);
  EXPECT_EQ(s.relay_ssrc, kRelaySsrc);
  EXPECT_EQ(s.phase, JoinPhase::kJoining);
}

TEST(RelayClientJoin, AnswersToAnotherJoinOrJobAreStale) {
  JoinState s = begin_join(kWorkerNonce, kT0);
  // Before the challenge only a challenge is taken.
  EXPECT_TRUE(judge_answer(s, answer(JoinStatus::kWaiting), kRelaySsrc).stale);
  // Another worker's challenge.
  EXPECT_TRUE(judge_answer(s, answer(JoinStatus::kChallenge, kJobNonce, 0x9999), kRelaySsrc).stale);
  EXPECT_EQ(s.job_nonce, 0U);
  s = challenged();
  // An answer recorded in another job, and a removal from it.
  EXPECT_TRUE(judge_answer(s, answer(JoinStatus::kStart, 0x3333), kRelaySsrc).stale);
  EXPECT_TRUE(judge_answer(s, answer(JoinStatus::kRemoved, 0x3333), kRelaySsrc).stale);
  EXPECT_EQ(s.phase, JoinPhase::kJoining);
}

TEST(RelayClientJoin, WaitingKeepsJoiningAsKeepAliveUntilTheStart) {
  const JoinLimits l = limits();
  JoinState s = challenged();
  AnswerVerdict v = judge_answer(s, answer(JoinStatus::kWaiting), kRelaySsrc);
  EXPECT_TRUE(v.joined);
  EXPECT_FALSE(v.started);
  EXPECT_EQ(s.phase, JoinPhase::kWaiting);
  // Heard at 100 ms; the PDJN goes on every 250 ms.
  s.last_heard_us = kT0 + 100 * kMs;
  EXPECT_EQ(*join_due_us(s, l), kT0 + 250 * kMs);
  JoinCheck c = check_join(s, kT0 + 249 * kMs, l);
  EXPECT_FALSE(c.send_join || c.send_keepalive || c.failure);
  c = check_join(s, kT0 + 250 * kMs, l);
  EXPECT_TRUE(c.send_join);
  EXPECT_FALSE(c.send_keepalive);
  note_join_sent(s, kT0 + 250 * kMs);
  // A repeated "waiting" changes nothing; the start does.
  v = judge_answer(s, answer(JoinStatus::kWaiting), kRelaySsrc);
  EXPECT_FALSE(v.joined || v.started || v.stale || v.failure);
  v = judge_answer(s, answer(JoinStatus::kStart), kRelaySsrc);
  EXPECT_TRUE(v.started);
  EXPECT_FALSE(v.joined);
  EXPECT_EQ(s.phase, JoinPhase::kRunning);
}

TEST(RelayClientJoin, AStartWhileJoiningJoinsAndStartsAtOnce) {
  JoinState s = challenged();
  const AnswerVerdict v = judge_answer(s, answer(JoinStatus::kStart), kRelaySsrc);
  EXPECT_TRUE(v.joined);
  EXPECT_TRUE(v.started);
  EXPECT_EQ(s.phase, JoinPhase::kRunning);
}

TEST(RelayClientJoin, TheRelaysSilenceWhileWaitingEndsTheWait) {
  const JoinLimits l = limits();
  JoinState s = challenged();
  (void)judge_answer(s, answer(JoinStatus::kWaiting), kRelaySsrc);
  s.last_heard_us = kT0 + 10 * kMs;
  // Due 1 µs past 600 ms of silence unless a retry comes first; the retries come first.
  std::uint64_t now = kT0;
  JoinCheck c;
  int joins = 0;
  while (!c.failure) {
    now = *join_due_us(s, l);
    c = check_join(s, now, l);
    if (c.send_join) {
      ++joins;
      note_join_sent(s, now);
    }
  }
  EXPECT_EQ(joins, 2);  // at 250 and 500 ms
  EXPECT_EQ(now, kT0 + 610 * kMs + 1);
  EXPECT_EQ(*c.failure, JoinFailure::kSilent);
}

TEST(RelayClientJoin, AStartTimeoutCountsFromTheFirstJoin) {
  const JoinLimits l = limits(400);
  JoinState s = challenged();
  (void)judge_answer(s, answer(JoinStatus::kWaiting), kRelaySsrc);
  s.last_heard_us = kT0 + 390 * kMs;
  EXPECT_FALSE(check_join(s, kT0 + 400 * kMs, l).failure);
  EXPECT_EQ(*check_join(s, kT0 + 400 * kMs + 1, l).failure, JoinFailure::kNotStarted);
  EXPECT_EQ(*join_due_us(s, limits(400)), kT0 + 250 * kMs);
  note_join_sent(s, kT0 + 250 * kMs);
  EXPECT_EQ(*join_due_us(s, l), kT0 + 400 * kMs + 1);
}

TEST(RelayClientJoin, RunningSendsAKeepAliveOnlyAfter250MsWithoutAControlMessage) {
  const JoinLimits l = limits();
  JoinState s = challenged();
  (void)judge_answer(s, answer(JoinStatus::kStart), kRelaySsrc);
  // The last control message was the PDJN at 0 ms; a report goes at 200 ms.
  note_control_sent(s, kT0 + 200 * kMs);
  EXPECT_EQ(*join_due_us(s, l), kT0 + 450 * kMs);
  EXPECT_FALSE(check_join(s, kT0 + 449 * kMs, l).send_keepalive);
  const JoinCheck c = check_join(s, kT0 + 450 * kMs, l);
  EXPECT_TRUE(c.send_keepalive);
  EXPECT_FALSE(c.send_join || c.failure);
  // One keep-alive a period over a second of nothing else: 4.
  int keepalives = 0;
  std::uint64_t now = kT0 + 450 * kMs;
  note_control_sent(s, now);
  ++keepalives;
  while (now < kT0 + 1'450 * kMs) {
    now = *join_due_us(s, l);
    if (check_join(s, now, l).send_keepalive) {
      ++keepalives;
      note_control_sent(s, now);
    }
  }
  EXPECT_EQ(keepalives, 5);  // 450, 700, 950, 1200, 1450 ms
  // Running, the relay's silence is the stage's business (StagePeer): no failure here.
  EXPECT_FALSE(check_join(s, kT0 + 100'000 * kMs, l).failure);
}

TEST(RelayClientJoin, RefusedOnlyWhileJoiningRemovedAlways) {
  JoinState s = challenged();
  AnswerVerdict v = judge_answer(s, answer(JoinStatus::kRefused), kRelaySsrc);
  EXPECT_EQ(*v.failure, JoinFailure::kRefused);
  EXPECT_EQ(s.phase, JoinPhase::kEnded);
  EXPECT_FALSE(check_join(s, kT0 + 5'000 * kMs, limits()).failure);
  EXPECT_FALSE(join_due_us(s, limits()));

  s = challenged();
  (void)judge_answer(s, answer(JoinStatus::kStart), kRelaySsrc);
  v = judge_answer(s, answer(JoinStatus::kRefused), kRelaySsrc);
  EXPECT_FALSE(v.failure) << "a late refusal does not end a running worker";
  v = judge_answer(s, answer(JoinStatus::kRemoved), kRelaySsrc);
  EXPECT_EQ(*v.failure, JoinFailure::kRemoved);
  EXPECT_EQ(join_failure_text(JoinFailure::kRemoved, "r", limits(), "evicted"),
            "removed from the job by the relay: evicted");
}

TEST(RelayClientJoin, AChallengeForAnotherJobWhileWaitingMeansTheRelayRestarted) {
  JoinState s = challenged();
  (void)judge_answer(s, answer(JoinStatus::kWaiting), kRelaySsrc);
  // The same job's challenge again (a retry crossed the join): nothing.
  EXPECT_FALSE(judge_answer(s, answer(JoinStatus::kChallenge), kRelaySsrc).failure);
  const AnswerVerdict v = judge_answer(s, answer(JoinStatus::kChallenge, 0x4444), kRelaySsrc);
  EXPECT_EQ(*v.failure, JoinFailure::kAnotherJob);
}

}  // namespace
