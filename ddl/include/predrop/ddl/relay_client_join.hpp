#pragma once
// The worker side of joining a DDL job and of staying in it (docs/ddl-mode.md "Join handshake"),
// as rules over plain numbers: which relay answers are this worker's, what each one does, when to
// say something again and when to give up. The relay client (relay_client.hpp) owns the socket
// and the timer and applies the verdicts, the way the relay applies relay_eviction.hpp's.
//
//   joining   a PDJN every `retry_us` until an answer; none within `join_timeout_us`: give up.
//             The relay's challenge names its job nonce (and its control SSRC): the PDJN that
//             echoes it goes out at once and is the join.
//   waiting   joined, the others are missing: the PDJN goes on every `retry_us` as a keep-alive
//             (every answer repeats the job's state); nothing from the relay for
//             `relay_silence_us`, or no start within `start_timeout_us` of the first PDJN
//             (0: no limit): give up.
//   running   a control message at least every `keepalive_us` (an empty RR when there is nothing
//             else to say), so that the relay hears a worker that computes, evaluates or fell
//             behind between two stages; the relay's silence is judged per stage (StagePeer).
//
// Only answers that echo this worker's nonce, and, after the challenge, this job's nonce, are
// taken; others are stale (recorded, or to another worker) and only counted.
#include <cstdint>
#include <optional>
#include <string>

#include "predrop/ddl/protocol.hpp"

namespace predrop::ddl {

/// Time limits of joining and staying (µs).
struct JoinLimits {
  std::uint64_t join_timeout_us = 10'000'000;  ///< No answer at all.
  std::uint64_t start_timeout_us = 0;          ///< Joined, no start (0: none).
  std::uint64_t relay_silence_us = 5'000'000;  ///< Nothing from the relay while waiting.
  std::uint64_t retry_us = 250'000;            ///< PDJN again after this long.
  std::uint64_t keepalive_us = 250'000;        ///< Running: a control message at least this often.
};

/// Where the worker is in the job.
enum class JoinPhase : std::uint8_t { kJoining, kWaiting, kRunning, kEnded };

/// Why joining or waiting failed (join_failure_text() words it).
enum class JoinFailure : std::uint8_t {
  kNoAnswer,    ///< No answer within the join time-out.
  kNotStarted,  ///< Joined, but the job did not start in time.
  kSilent,      ///< The relay went silent while the worker waited.
  kAnotherJob,  ///< A challenge with another job nonce while waiting: the relay restarted.
  kRefused,     ///< The relay refused the join (the answer's reason says why).
  kRemoved,     ///< The relay removed the worker (the answer's reason says why).
};

/// One worker's joining state; the relay client updates the times as it sends and hears.
struct JoinState {
  JoinPhase phase = JoinPhase::kJoining;
  std::uint64_t worker_nonce = 0;           ///< This worker's; every answer to it echoes it.
  std::uint64_t job_nonce = 0;              ///< The relay's, from its challenge (0: not yet).
  std::optional<std::uint32_t> relay_ssrc;  ///< The relay's control SSRC, from that challenge.
  std::uint64_t started_us = 0;             ///< The first PDJN.
  std::uint64_t last_join_sent_us = 0;
  std::uint64_t last_control_sent_us = 0;  ///< Any control message (PDJN, report, keep-alive).
  std::uint64_t last_heard_us = 0;         ///< The last authenticated datagram of the relay.
};

/// What an answer (PDJA) means to this worker.
struct AnswerVerdict {
  bool stale = false;      ///< Not an answer to this worker's join in this job: ignored.
  bool send_join = false;  ///< A challenge: join at once, echoing the job nonce.
  bool joined = false;     ///< The job is set up (the host prepares its side); now kWaiting.
  bool started = false;    ///< The job started; now kRunning.
  std::optional<JoinFailure> failure;  ///< End with this.
};

/// What the timer found at `now`.
struct JoinCheck {
  std::optional<JoinFailure> failure;  ///< End with this.
  bool send_join = false;              ///< A PDJN (retry, or keep-alive while waiting).
  bool send_keepalive = false;         ///< Running: an empty RR.
};

/// A fresh state for a worker that sends its first PDJN at `now`.
JoinState begin_join(std::uint64_t worker_nonce, std::uint64_t now_us);

/// Judges an answer from control SSRC `sender_ssrc` and moves the phase. The caller records
/// last_heard_us only for answers that are not stale.
AnswerVerdict judge_answer(JoinState& state, const JoinAnswer& answer, std::uint32_t sender_ssrc);

/// Judges the time at `now` (ended: nothing).
JoinCheck check_join(const JoinState& state, std::uint64_t now_us, const JoinLimits& limits);

/// When check_join() has something to do next (absolute µs), nullopt once ended.
std::optional<std::uint64_t> join_due_us(const JoinState& state, const JoinLimits& limits);

/// Records a PDJN sent at `now` (also a control message).
void note_join_sent(JoinState& state, std::uint64_t now_us);
/// Records any other control message sent at `now` (a report, a keep-alive, a BYE).
void note_control_sent(JoinState& state, std::uint64_t now_us);

/// The error text of a failure: `relay` names the relay's address, `reason` is the answer's.
std::string join_failure_text(JoinFailure failure, const std::string& relay,
                              const JoinLimits& limits, std::string_view reason = {});

}  // namespace predrop::ddl
