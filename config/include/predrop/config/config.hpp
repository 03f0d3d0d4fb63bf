#pragma once
// Server configuration: one TOML file, loaded once at start-up, for both modes (docs/design.md §1).
// Every key is documented in configs/README.md. Loading is strict: an unknown key, a wrong type,
// a value out of range or a contradiction is an error that names the key and, when the text came
// from a file, its line and column. Defaults are those of the structs below.
//
// Errors: as values (core::Result). toml++ is used only inside config.cpp.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/discard_planner.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/result.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::config {

/// Which application the process runs.
enum class ServerMode : std::uint8_t { kStream, kDdl };

/// Block transmission: paced over the block duration, or sent as fast as possible.
enum class Pacing : std::uint8_t { kPaced, kBurst };

/// How a DDL receiver fills chunks that did not arrive in time. (ddl::MissingPolicy is the same
/// choice, but ddl/ sits above config/, so the configuration keeps its own name for it.)
enum class MissingChunkFill : std::uint8_t {
  kZero,  ///< Zeros: the missing part contributes nothing to the average.
  kOwn,   ///< The receiver's own values for that part.
};

/// A host and port: "0.0.0.0:8554", "[::1]:8554", "localhost:9000".
struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

/// Parses "host:port" (IPv6 in brackets). Port 0 only when `allow_port_zero` (ephemeral listen).
core::Result<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero);
/// "host:port", with brackets around IPv6 hosts.
std::string to_string(const Endpoint& endpoint);

/// A stream the server offers: rtsp://host:port/<name> plays the file at <path>, or (publish)
/// what a publisher sends to rtsp://host:port/<name>?secret=<publish_secret> (docs/live.md).
struct StreamEntry {
  std::string name;
  std::string path;  ///< As written; relative paths are relative to the working directory.
  /// [server.streams.<name>] source = "publish": a live stream; `path` is then empty.
  bool publish = false;
  std::string publish_secret;  ///< What a publisher must send (?secret=); >= 16 characters.
  bool replace = false;        ///< A second publisher replaces the first (else it gets 455).
  /// source = "rtsp://host:port/path": a pulled stream (docs/live.md "Pull"); `path` is empty.
  std::string pull_url;
  bool pull_always = false;  ///< pull = "always" (else "on-demand": from the first viewer on).
  /// edges = ["rtsp://...", ...]: viewers' DESCRIBEs are redirected there (docs/edge.md).
  std::vector<std::string> edges;
  bool operator==(const StreamEntry&) const = default;
};

/// Most edges one stream may list.
inline constexpr std::size_t kMaxEdges = 64;

/// Shortest publish_secret accepted.
inline constexpr std::size_t kMinPublishSecret = 16;

/// Largest server.interleaved_queue_bytes (and --interleaved-queue-bytes): 64 MiB per connection.
inline constexpr std::uint32_t kMaxInterleavedQueueBytes = 64U * 1024U * 1024U;

/// Largest server.workers (and --workers).
inline constexpr std::uint32_t kMaxWorkers = 64;

/// Parses a server.workers value given as text (--workers): "auto" or "0" (one per core) or
/// 1..kMaxWorkers; 0 stands for auto.
core::Result<std::uint32_t> parse_workers(std::string_view text);

/// [server]: process-wide settings.
struct ServerSettings {
  ServerMode mode = ServerMode::kStream;
  Endpoint rtsp_listen{"0.0.0.0", 8554};
  std::vector<StreamEntry> streams;  ///< [server.streams]; sorted by name.
  std::uint32_t max_sessions = 64;
  std::uint32_t max_sessions_per_address = 16;  ///< Sessions one client IP may hold (stream).
  std::uint32_t max_rtsp_connections = 128;
  std::uint32_t session_timeout_s = 60;    ///< Announced in Session; FFmpeg pings at half of it.
  std::uint32_t rtsp_idle_timeout_s = 30;  ///< A connection without a session is closed after it.
  /// SRTP profile for media and feedback (docs/design.md §4); nullopt = "none", plain RTP.
  std::optional<wire::SrtpSuite> srtp = wire::SrtpSuite::AesCm128HmacSha1_80;
  std::optional<Endpoint> metrics_listen;  ///< Prometheus text endpoint; none = off.
  std::string trace_csv;                   ///< Per-stage CSV trace path; empty = off.
  /// Bearer token of the control API's changing requests (DELETE, POST); empty = read-only.
  std::string api_token;
  std::string log_level = "info";  ///< trace, debug, info, warn, error, critical, off.
  /// Media queue per RTSP-over-TCP connection in bytes; 0 refuses TCP transport (461).
  std::uint32_t interleaved_queue_bytes = 256U * 1024U;
  /// Streaming worker loops (threads); 0 = "auto", one per core (hardware_concurrency).
  std::uint32_t workers = 0;
};

/// [blocks]: what a stage is in streaming mode. Exactly one of duration_ms and bytes is set.
struct BlockConfig {
  std::optional<std::uint32_t> duration_ms = 1000;  ///< Block length in media time.
  std::optional<std::uint64_t> bytes;               ///< Block size in payload bytes.
  Pacing pacing = Pacing::kPaced;
  std::uint32_t rtp_payload_bytes = 1200;  ///< Largest RTP payload (keeps packets under the MTU).
  /// Paced sending: the pacer runs at most once per quantum and sends what falls due before its
  /// next run, so a packet leaves at most this much before its media time (0: each packet at its
  /// own time, one run per millisecond at most).
  std::uint32_t pacing_quantum_ms = 5;
};

/// A threshold of the control rule: absolute (P units or µs) or relative (fraction, 0.05 = 5 %).
struct ThresholdSetting {
  double value = 0.0;
  bool relative = false;
  bool operator==(const ThresholdSetting&) const = default;
};

/// [control.adaptive]: the tuning of policy "adaptive" (core::AdaptiveParams; its rmax, rp1 and
/// rp2 are [control]'s). Defaults are the core's.
struct AdaptiveTuning {
  double loss_threshold = 0.02;       ///< Network loss above this is congestion.
  double clean_loss = 0.0;            ///< Network loss at or below this is a clean stage.
  double margin = 0.93;               ///< Aim this fraction of the measured capacity.
  double drain_margin = 0.90;         ///< ... while a queue stands, to drain it.
  double queue_high_ms = 30.0;        ///< Queueing delay that means a queue is building.
  double queue_low_ms = 10.0;         ///< Queueing delay at or below which a stage is clean.
  double stretch_min_ms = 3.0;        ///< Smallest L stretch that counts (besides control.t2).
  std::uint32_t base_window = 30;     ///< Stages over which the base L is the minimum.
  std::uint32_t hold_stages = 3;      ///< Clean stages before a capacity pulse.
  std::uint32_t max_hold_stages = 5;  ///< Cap of the hold (x2 after each failed pulse).
  double pulse_rate = 0.0;            ///< R of the one-stage capacity pulse.
  double creep_step = 0.02;           ///< Step of the creep down.
  double creep_queue_ms = 2.0;        ///< Creep down only while the queue is below this.
  double quality_floor = -std::numeric_limits<double>::infinity();  ///< P below it: lower R.
  bool operator==(const AdaptiveTuning&) const = default;
};

/// [control.capacity]: the tuning of policy "capacity" (core::CapacityParams, docs/design.md
/// §2.8; its rmax and r0 are [control]'s; it also adapts players from their Receiver Reports).
/// Defaults are the core's.
struct CapacityTuning {
  double margin = 0.97;          ///< Fraction of the estimated capacity sent per block, (0, 1].
  double queue_target_ms = 0.0;  ///< Queueing delay aimed at a block's end, [0, 60] ms.
  double increase_step = 0.03;   ///< Additive increase near the last overuse, of the stream rate.
  double probe_gain = 1.5;       ///< Multiplicative increase away from it, (1, 4].
  double pacing_gain = 1.0;      ///< Pace a limited session at this x its estimate; 0 = off.
  double repaid_burst_bytes = 0.0;  ///< Delay mode: leading burst paid back; 0 = off.
  double quality_floor = -std::numeric_limits<double>::infinity();  ///< P below it: probe.
  double loss_threshold = 0.01;      ///< Network loss above this is overuse.
  double decrease_factor = 0.9;      ///< On overuse: this x the received rate, [0.5, 1].
  std::uint32_t compete_blocks = 3;  ///< Drain blocks with the queue still standing: compete.
  double compete_loss_high = 0.10;   ///< Compete mode: loss above this cuts by (1 - loss / 2).
  double compete_loss_low = 0.02;    ///< ... below this raises by compete_gain.
  double compete_gain = 1.08;        ///< Compete mode's increase per block, [1, 2].
  double missing_backoff = 0.85;     ///< Estimate factor per missing report after the first.
  bool operator==(const CapacityTuning&) const = default;
};

/// [control]: the control unit (docs/design.md §2), field for field.
struct ControlConfig {
  std::string policy = "basic";     ///< "basic", "history", "fixed", "adaptive", "capacity".
  double r0 = 0.0;                  ///< R of stage 0.
  double rp = 0.05;                 ///< R after stage 0's report.
  double rp1 = 0.05;                ///< Increase step.
  double rp2 = 0.05;                ///< Decrease step.
  double rmax = 0.5;                ///< Upper limit of R.
  ThresholdSetting t1{0.5, false};  ///< Performance threshold: dB (stream) / loss units (DDL).
  ThresholdSetting t2{0.05, true};  ///< Delay threshold: absolute in µs, or relative.
  std::uint32_t k = 1;              ///< Delay history length (1 = basic rule).
  double fixed_rate = 0.0;          ///< R of the "fixed" policy.
  double player_rate = 0.0;  ///< Fixed R for clients that send no PDFB (ffplay, VLC, GStreamer).
  /// How R is set for clients without PDFB: "rr" (the capacity policy fed from their RTCP
  /// Receiver Reports) or "fixed" (player_rate).
  std::string player_adaptation = "rr";
  /// Which policy a browser with transport-cc gets: "player" (player_adaptation's, as any
  /// player) or "client" (`policy`, as a PDFB client: L from transport-cc, P from its player
  /// page; docs/webrtc.md "Quality in the page").
  std::string browser_policy = "player";
  /// A browser's interim alert: the queueing delay (ms) in its transport-cc arrival times past
  /// which the stage in flight is re-planned at once (docs/webrtc.md "Adaptation from
  /// transport-cc"); 0 = off. On by default: on the browser bed it took the start's and the
  /// onsets' losses away (bench/README.md "The browser's interim alert").
  std::uint32_t browser_alert_ms = 80;
  /// R of a browser's first stages, until its first block report (capacity policy only, and
  /// only blocks with disposable frames): a start below the stream, raised when the report says
  /// the path carries more (docs/webrtc.md "Adaptation from transport-cc"). 0 = off. On by
  /// default: on the browser bed it took the start's freezes away (bench/README.md "The
  /// browser's start").
  double browser_start_rate = 0.5;
  /// A browser's leading burst under the capacity policy is paid back with this many bytes
  /// (control.capacity.repaid_burst_bytes for browsers only; docs/webrtc.md "Adaptation from
  /// transport-cc"); 0 = the policy's own setting. On by default: on the browser bed it took the
  /// steady queue p95 from 93-97 to 57-61 ms (bench/README.md "The browser's burst paid back").
  std::uint32_t browser_repaid_burst_bytes = 8000;
  core::MissingReportAction missing_report = core::MissingReportAction::kHold;
  std::uint32_t report_timeout_stages = 2;  ///< A report is missing this many stages later.
  /// Sessions whose clients' IPv4 addresses share this many leading bits are coupled (one
  /// estimate shared equally, core::SharedBottleneck); 0 = none (default). Restart only.
  std::uint32_t couple_prefix_v4 = 0;
  std::uint32_t couple_prefix_v6 = 0;  ///< The same for IPv6 addresses (0..128).
  double psnr_cap_db = 60.0;  ///< PSNR of a lossless block is capped here (it is unbounded).
  AdaptiveTuning adaptive;    ///< [control.adaptive]
  CapacityTuning capacity;    ///< [control.capacity]
};

/// [discard]: which packets a stage drops.
struct DiscardConfig {
  core::DiscardPolicy policy = core::DiscardPolicy::kPriority;
  std::uint64_t seed = 1;  ///< For "random"; the same seed gives the same choices.
};

/// [ddl]: the relay of DDL mode.
struct DdlConfig {
  Endpoint listen{"0.0.0.0", 9000};  ///< Where the relay receives the workers' RTP.
  std::uint32_t workers = 2;         ///< Workers expected per iteration.
  std::optional<std::uint32_t> stage_deadline_ms = 2000;  ///< nullopt = "adaptive".
  MissingChunkFill missing_chunk_fill = MissingChunkFill::kZero;
  std::uint32_t chunk_bytes = 1024;               ///< Tensor bytes per RTP packet.
  std::uint32_t max_tensor_elements = 64u << 20;  ///< Largest model (parameters) a job may have.
  bool worker_egress_discard = false;             ///< Workers pre-discard too, not only the relay.
  Pacing pacing = Pacing::kPaced;
};

/// The whole file.
struct ServerConfig {
  ServerSettings server;
  BlockConfig blocks;
  ControlConfig control;
  DiscardConfig discard;
  DdlConfig ddl;
};

/// Parses TOML text. `source_name` (a file name) prefixes error messages: "<name>:<line>:<col>:".
core::Result<ServerConfig> parse_config(std::string_view toml_text,
                                        std::string_view source_name = "<config>");
/// Reads and parses a file.
core::Result<ServerConfig> load_config_file(const std::filesystem::path& path);
/// Every key the parser accepts, dotted and sorted ("blocks.bytes", "control.adaptive",
/// "control.adaptive.margin", ..., "server.streams"), of both modes; keys kept only to be refused
/// with a message (removed ones) are not in it. For the test that configs/README.md documents them.
std::vector<std::string> accepted_config_keys();
/// Checks ranges and cross-field rules of a config built in code (parse_config already does);
/// the error names the key, e.g. "control.rmax: must be >= control.rp (0.1 < 0.2)".
core::Status validate_config(const ServerConfig& config);

/// Parses a threshold in the syntax of control.t1: a number or "<n>dB" is absolute, "<n>%" is
/// relative. Negative values are errors.
core::Result<ThresholdSetting> parse_performance_threshold(std::string_view text);
/// Parses a threshold in the syntax of control.t2: "<n>us", "<n>ms", "<n>s" (absolute, stored
/// in µs) or "<n>%" (relative).
core::Result<ThresholdSetting> parse_delay_threshold(std::string_view text);

/// Canonical names, as written in the file.
std::string_view to_string(ServerMode mode);
/// "AES_CM_128_HMAC_SHA1_80", ... or "none".
std::string_view srtp_name(const std::optional<wire::SrtpSuite>& suite);
std::string_view to_string(Pacing pacing);
std::string_view to_string(core::MissingReportAction action);
std::string_view to_string(MissingChunkFill fill);

/// The control core's policy configuration for the [control] section; validated by building one
/// controller, so a bad combination fails at start-up.
core::Result<core::PolicyConfig> make_policy_config(const ControlConfig& control);

}  // namespace predrop::config
