#pragma once
// DDL mode's control messages between the relay (predrop-server --mode ddl) and its workers
// (predrop-ddl-worker), and the job key they share. Everything travels on the one UDP port of
// each end, RTP and RTCP multiplexed (RFC 5761 §4): tensor chunks as SRTP (docs/ddl.md), the
// control messages below as SRTCP compounds, so they are authenticated by the same key.
//
// A control datagram is an RTCP compound (RFC 3550 §6.1): an RR without report blocks (the
// sender's control SSRC), then any of: one PDFB (docs/design.md §4, see wire/rtcp.hpp), the APP
// packets (RFC 3550 §6.7, subtype 0) defined here, a BYE. All fields big-endian.
//
//   PDJN  join request, worker -> relay, version 2, 32 data bytes
//     0      version                 2
//     1      flags                   0 (reserved)
//     2-3    requested rank          0..workers-1, or 0xFFFF = any free rank
//     4-7    tensor elements         length of the worker's gradient
//     8-15   model seed              every worker of a job must start from the same model
//     16-23  job nonce               the relay's nonce of this job, echoed; 0 = not known yet
//     24-31  worker nonce            the worker's own random nonce, echoed in every PDJA to it
//
//   PDJA  join answer and membership notice, relay -> worker, version 2, 44 + reason data bytes
//     0      version                 2
//     1      status                  0 waiting (joined, others missing), 1 start, 2 refused,
//                                    3 removed (evicted, or the relay is shutting down),
//                                    4 challenge (join again with the job nonce given here)
//     2-3    rank                    the worker's rank (0xFFFF when refused or challenged)
//     4-5    workers                 workers of the job
//     6-7    joined                  workers joined so far
//     8-11   start stage             the first stage (training iteration) of this worker
//     12-15  downlink SSRC           the relay's RTP SSRC towards this worker
//     16-17  chunk elements          values per tensor chunk (the relay's ChunkPlan)
//     18     missing-chunk fill      0 zero, 1 own (docs/ddl.md "Missing chunks")
//     19     flags                   bit0 worker egress pre-discard, bit1 paced sending
//     20-23  stage deadline ms       0 = adaptive
//     24-31  job nonce               the relay's random nonce of this job
//     32-39  worker nonce            the PDJN's worker nonce this answers
//     40     reason length n         0..255, the text of a refusal or removal
//     41-43  reserved                0
//     44-    reason                  n bytes of text, then zero padding to a 32-bit boundary
//
// The nonces bind a join to one job (docs/ddl-mode.md "Join handshake"). A PDJN whose job
// nonce is not this relay's gets a challenge carrying it, and nothing else: a join recorded in an
// earlier job that used the same key is never admitted. A worker takes only answers that echo
// its own worker nonce (and, after the challenge, carry the job nonce it echoed), so an answer
// recorded earlier is never taken either. Within one job, SRTCP's replay protection drops a
// repeated datagram.
//
//   PDSC  stage closed, relay -> worker, 12 data bytes; sent right before the aggregate
//     0      version                 1
//     1      close reason            0 complete, 1 deadline, 2 forced
//     2-3    downlink packets        aggregate packets the relay sends this worker for the stage
//                                    (after its pre-discard); 0 = none will come
//     4-7    stage
//     8-9    contributors            workers whose gradient the stage's aggregate averages
//     10-11  reserved                0
//
// The PDFB the relay sends along with PDSC reports the worker's *uplink* (gradient) stage: L,
// chunks received and announced, queueing delay; its P is not valid (flag clear) because P, the
// training loss reduction, is only known to the worker, which fills it in (docs/ddl-mode.md).
//
// Versioning: each message carries its own version (PDJN 2, PDJA 2, PDSC 1); a reader rejects
// another version, naming both; reserved bytes are written 0 and ignored. Version 1 of PDJN/PDJA
// had no nonces (16 and 28 data bytes).
// Contract: pure functions over caller memory; no allocation on success (errors carry text).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "predrop/core/result.hpp"
#include "predrop/ddl/stage_collector.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::ddl {

/// Versions of the payloads this code reads and writes.
inline constexpr std::uint8_t kJoinVersion = 2;
inline constexpr std::uint8_t kAnswerVersion = 2;
inline constexpr std::uint8_t kStageClosedVersion = 1;
/// A join request that takes any free rank.
inline constexpr std::uint16_t kAnyRank = 0xFFFF;
/// APP names.
inline constexpr std::string_view kJoinName = "PDJN";
inline constexpr std::string_view kAnswerName = "PDJA";
inline constexpr std::string_view kStageClosedName = "PDSC";
/// Data sizes of the fixed parts.
inline constexpr std::size_t kJoinDataSize = 32;
inline constexpr std::size_t kAnswerFixedSize = 44;
inline constexpr std::size_t kStageClosedDataSize = 12;
/// Room for the longest control compound (RR 8 + PDFB 48 + PDJN 44 + PDJA with 255 bytes of
/// reason 312 + PDSC 24 + BYE 8 = 444 bytes) plus the SRTCP trailer (net::kSrtpMaxTrailer).
inline constexpr std::size_t kMaxControlDatagram = 1024;

/// A worker asks to join the job.
struct JoinRequest {
  std::uint16_t rank = kAnyRank;
  std::uint32_t tensor_elements = 0;
  std::uint64_t model_seed = 0;
  std::uint64_t job_nonce = 0;     ///< The relay's job nonce, echoed; 0 = not known yet.
  std::uint64_t worker_nonce = 0;  ///< The worker's own nonce.

  bool operator==(const JoinRequest&) const = default;
};

/// Status of a PDJA.
enum class JoinStatus : std::uint8_t {
  kWaiting = 0,    ///< Joined; the job starts when every worker has joined.
  kStart = 1,      ///< Every worker has joined: start at start_stage.
  kRefused = 2,    ///< Not admitted; `reason` says why.
  kRemoved = 3,    ///< No longer part of the job (evicted, relay shutting down); `reason` says why.
  kChallenge = 4,  ///< Join again, echoing `job_nonce`.
};

/// "waiting", "start", "refused", "removed", "challenge".
std::string_view to_string(JoinStatus status);

/// The relay's answer to a join, also sent unprompted when the job starts or a worker is removed.
struct JoinAnswer {
  JoinStatus status = JoinStatus::kWaiting;
  std::uint16_t rank = kAnyRank;
  std::uint16_t workers = 0;
  std::uint16_t joined = 0;
  std::uint32_t start_stage = 0;
  std::uint32_t downlink_ssrc = 0;
  std::uint16_t chunk_elements = 0;
  std::uint8_t missing_fill = 0;  ///< 0 zero, 1 own.
  bool egress_discard = false;
  bool paced = false;
  std::uint32_t stage_deadline_ms = 0;  ///< 0 = adaptive.
  std::uint64_t job_nonce = 0;          ///< The relay's nonce of this job.
  std::uint64_t worker_nonce = 0;       ///< The worker nonce of the PDJN this answers.
  std::array<char, 255> reason_text{};
  std::uint8_t reason_size = 0;

  /// The reason as text (views reason_text).
  std::string_view reason() const { return {reason_text.data(), reason_size}; }
  /// Sets the reason, truncated to 255 bytes.
  void set_reason(std::string_view text);

  bool operator==(const JoinAnswer&) const = default;
};

/// The relay closed a stage and is about to send its aggregate.
struct StageClosed {
  std::uint32_t stage = 0;
  std::uint8_t reason = 0;  ///< 0 complete, 1 deadline, 2 forced (ddl::CloseReason).
  std::uint16_t downlink_packets = 0;
  std::uint16_t contributors = 0;

  bool operator==(const StageClosed&) const = default;
};

/// Everything a control compound may carry.
struct ControlMessage {
  std::uint32_t sender_ssrc = 0;  ///< The RR's SSRC.
  std::optional<JoinRequest> join;
  std::optional<JoinAnswer> answer;
  std::optional<StageClosed> stage_closed;
  std::optional<wire::PdfbFeedback> feedback;
  bool bye = false;
  std::size_t unknown_app = 0;  ///< APP packets of other names, ignored.
};

/// Writes RR(sender_ssrc) followed by whatever `message` holds, in the order PDFB, PDJN, PDJA,
/// PDSC, BYE. Returns the compound's length (before SRTCP protection).
core::Result<std::size_t> write_control(std::span<std::uint8_t> out, const ControlMessage& message);

/// Parses a (decrypted) control compound. Rejects bad framing, a PDJN/PDJA/PDSC of another
/// version or size, an unknown status, and a second copy of any message.
core::Result<ControlMessage> parse_control(std::span<const std::uint8_t> compound);

/// write_control() then SRTCP protection with `srtp` (none: plain RTCP). `out` needs
/// net::kSrtpMaxTrailer bytes of room beyond the compound. Returns the datagram's length.
core::Result<std::size_t> encode_control(std::span<std::uint8_t> out, const ControlMessage& message,
                                         net::SrtpSession* srtp);

/// SRTCP unprotection of buffer[0, len) in place with `srtp` (none: plain), then parse_control().
core::Result<ControlMessage> decode_control(std::span<std::uint8_t> buffer, std::size_t len,
                                            net::SrtpSession* srtp);

/// The shared SRTP master key of a job, with its suite (nullopt suite = plain RTP/RTCP).
struct JobKey {
  std::optional<wire::SrtpSuite> suite;
  wire::SrtpKeyMaterial key;
};

/// Parses a job key: an SDES line "a=crypto:<tag> <SUITE> inline:<base64 key||salt>" (also
/// without "a="), or a bare base64 key||salt of `default_suite`. "none" means plain RTP. The
/// error says what was wrong without echoing the key.
core::Result<JobKey> parse_job_key(std::string_view text,
                                   std::optional<wire::SrtpSuite> default_suite);

/// "a=crypto:1 <SUITE> inline:<base64>", or "none" for plain RTP.
std::string format_job_key(const JobKey& key);

/// A fresh random key for `suite` (plain when nullopt).
JobKey generate_job_key(std::optional<wire::SrtpSuite> suite);

/// A fresh random non-zero nonce (the OS's random source), for a job or a worker.
std::uint64_t generate_nonce();

/// A fresh random non-zero SSRC (RFC 3550 §8.1; the relay also refuses collisions).
std::uint32_t generate_ssrc();

/// RTP payload type of tensor chunks on both ends (dynamic range).
inline constexpr std::uint8_t kChunkPayloadType = 96;

/// The adaptive stage deadline both ends use (docs/ddl-mode.md): ddl::DeadlineConfig's rule
/// (D = 2 x median reception period, clamped), with a floor of 25 ms instead of 5 ms. Stages on
/// loopback take a few ms, and on a shared machine a worker or the relay is routinely preempted
/// for longer than 2 x that; a 5 ms floor turned such hiccups into deadline closes and late
/// chunks. 25 ms is a few scheduler time slices.
inline constexpr std::uint64_t kAdaptiveDeadlineFloorUs = 25'000;

/// The stage deadline both ends run for a PDJA stage deadline of `ms`: fixed, or for 0 the
/// adaptive rule with the kAdaptiveDeadlineFloorUs floor.
DeadlineConfig stage_deadline_config(std::uint32_t ms);

/// Name of the environment variable both programs read the job key from.
inline constexpr const char* kKeyEnvironment = "PREDROP_DDL_KEY";

}  // namespace predrop::ddl
