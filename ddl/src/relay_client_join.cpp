#include "predrop/ddl/relay_client_join.hpp"

#include <algorithm>

namespace predrop::ddl {

JoinState begin_join(std::uint64_t worker_nonce, std::uint64_t now_us) {
  JoinState s;
  s.worker_nonce = worker_nonce;
  s.started_us = now_us;
  s.last_join_sent_us = now_us;
  s.last_control_sent_us = now_us;
  s.last_heard_us = now_us;
  return s;
}

AnswerVerdict judge_answer(JoinState& s, const JoinAnswer& a, std::uint32_t sender_ssrc) {
  AnswerVerdict v;
  if (s.phase == JoinPhase::kEnded) return v;
  if (a.worker_nonce != s.worker_nonce ||
      (a.status != JoinStatus::kChallenge && (s.job_nonce == 0 || a.job_nonce != s.job_nonce))) {
    v.stale = true;
    return v;
  }
  switch (a.status) {
    case JoinStatus::kChallenge:
      if (s.phase == JoinPhase::kJoining) {
        s.job_nonce = a.job_nonce;
        s.relay_ssrc = sender_ssrc;
        v.send_join = true;
      } else if (s.phase == JoinPhase::kWaiting && a.job_nonce != s.job_nonce) {
        v.failure = JoinFailure::kAnotherJob;
      }
      break;
    case JoinStatus::kRefused:
      if (s.phase == JoinPhase::kJoining) v.failure = JoinFailure::kRefused;
      break;
    case JoinStatus::kRemoved:
      v.failure = JoinFailure::kRemoved;
      break;
    case JoinStatus::kWaiting:
    case JoinStatus::kStart:
      if (s.phase == JoinPhase::kJoining) {
        s.phase = JoinPhase::kWaiting;
        v.joined = true;
      }
      if (a.status == JoinStatus::kStart && s.phase == JoinPhase::kWaiting) {
        s.phase = JoinPhase::kRunning;
        v.started = true;
      }
      break;
  }
  if (v.failure) s.phase = JoinPhase::kEnded;
  return v;
}

JoinCheck check_join(const JoinState& s, std::uint64_t now, const JoinLimits& l) {
  JoinCheck c;
  switch (s.phase) {
    case JoinPhase::kJoining:
      if (now - s.started_us > l.join_timeout_us) {
        c.failure = JoinFailure::kNoAnswer;
        return c;
      }
      break;
    case JoinPhase::kWaiting:
      if (l.start_timeout_us != 0 && now - s.started_us > l.start_timeout_us) {
        c.failure = JoinFailure::kNotStarted;
        return c;
      }
      if (now - s.last_heard_us > l.relay_silence_us) {
        c.failure = JoinFailure::kSilent;
        return c;
      }
      break;
    case JoinPhase::kRunning:
      c.send_keepalive = now - s.last_control_sent_us >= l.keepalive_us;
      return c;
    case JoinPhase::kEnded:
      return c;
  }
  c.send_join = now - s.last_join_sent_us >= l.retry_us;
  return c;
}

std::optional<std::uint64_t> join_due_us(const JoinState& s, const JoinLimits& l) {
  // The failures are due 1 µs after their limit: check_join() gives up only past it.
  switch (s.phase) {
    case JoinPhase::kJoining:
      return std::min(s.last_join_sent_us + l.retry_us, s.started_us + l.join_timeout_us + 1);
    case JoinPhase::kWaiting: {
      std::uint64_t due =
          std::min(s.last_join_sent_us + l.retry_us, s.last_heard_us + l.relay_silence_us + 1);
      if (l.start_timeout_us != 0) due = std::min(due, s.started_us + l.start_timeout_us + 1);
      return due;
    }
    case JoinPhase::kRunning:
      return s.last_control_sent_us + l.keepalive_us;
    case JoinPhase::kEnded:
      break;
  }
  return std::nullopt;
}

void note_join_sent(JoinState& s, std::uint64_t now_us) {
  s.last_join_sent_us = now_us;
  s.last_control_sent_us = now_us;
}

void note_control_sent(JoinState& s, std::uint64_t now_us) {
  s.last_control_sent_us = now_us;
}

std::string join_failure_text(JoinFailure f, const std::string& relay, const JoinLimits& l,
                              std::string_view reason) {
  switch (f) {
    case JoinFailure::kNoAnswer:
      return "no answer from the relay at " + relay + " within " +
             std::to_string(l.join_timeout_us / 1000) +
             " ms: it is not running or not reachable, or it uses another key or SRTP suite";
    case JoinFailure::kNotStarted:
      return "joined the relay at " + relay + ", but the job did not start within " +
             std::to_string(l.start_timeout_us / 1000) + " ms (the other workers did not join)";
    case JoinFailure::kSilent:
      return "the relay at " + relay + " went silent while waiting for the other workers";
    case JoinFailure::kAnotherJob:
      return "the relay at " + relay +
             " started another job while this worker waited for the others; start it again";
    case JoinFailure::kRefused:
      return "the relay at " + relay + " refused to let this worker join: " + std::string(reason);
    case JoinFailure::kRemoved:
      return "removed from the job by the relay: " + std::string(reason);
  }
  return "join failed";
}

}  // namespace predrop::ddl
