#pragma once
// RTSP 1.0 messages (RFC 2326 §4, §6, §7): incremental request and response parsers for a TCP
// byte stream, and builders for both directions.
//
// The parsers are pure: bytes in, events out, no I/O, no clock. They accept CRLF or bare LF line
// endings (RFC 2326 §4 asks receivers to tolerate bare line feeds), pipelined messages, bodies
// framed by Content-Length (§12.14; no Content-Length means no body), obsolete header folding,
// and interleaved binary frames ("$" channel length, §10.12) between messages. Every buffer is
// bounded (RtspParserLimits); any input either parses, waits for more bytes, or yields an error
// that carries the status code to answer with.
//
// Threading: one parser per connection, used from one thread. Errors: as values.
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "predrop/core/result.hpp"

namespace predrop::rtsp {

/// The protocol version every message names (RFC 2326 §3.1, §6.1, §7.1).
inline constexpr std::string_view kRtspVersion = "RTSP/1.0";

/// RTSP methods (RFC 2326 §10). Methods we do not know parse as kUnknown (answer 501).
enum class RtspMethod : std::uint8_t {
  kOptions,
  kDescribe,
  kAnnounce,
  kSetup,
  kPlay,
  kPause,
  kTeardown,
  kGetParameter,
  kSetParameter,
  kRedirect,
  kRecord,
  kUnknown,
};

/// Method from its (case-sensitive, §6.1) name; kUnknown for anything else.
RtspMethod method_from_string(std::string_view name);
/// Canonical name of a method ("GET_PARAMETER"); "" for kUnknown.
std::string_view to_string(RtspMethod method);

/// The methods a predrop server implements, as the value of a Public header. GET_PARAMETER must
/// be listed: FFmpeg then uses it as its keep-alive instead of OPTIONS (libavformat/rtspdec.c).
inline constexpr std::string_view kPublicMethods =
    "OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER";

/// Standard reason phrase for a status code (RFC 2326 §7.1.1); "Unknown" if none.
std::string_view reason_phrase(int status);

/// Header fields in arrival order; lookups ignore case (§4.2 via RFC 2616 §4.2).
class RtspHeaders {
 public:
  /// Appends a field; duplicates are kept.
  void add(std::string name, std::string value);
  /// Replaces every field called `name` by one with `value` (appends if absent).
  void set(std::string_view name, std::string value);
  /// Removes every field called `name`.
  void remove(std::string_view name);
  /// Value of the first field called `name`, if any.
  std::optional<std::string_view> get(std::string_view name) const;
  /// Values of every field called `name`, in order.
  std::vector<std::string_view> get_all(std::string_view name) const;
  /// True when a field called `name` exists.
  bool contains(std::string_view name) const { return get(name).has_value(); }
  /// All fields in order.
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }
  /// Number of fields.
  std::size_t size() const { return fields_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

/// A parsed (or to-be-sent) RTSP request.
struct RtspRequest {
  RtspMethod method = RtspMethod::kUnknown;
  std::string method_name;  ///< As sent; useful when method is kUnknown.
  std::string url;          ///< Request-URI as sent ("rtsp://host/x/trackID=0" or "*").
  std::uint32_t cseq = 0;   ///< CSeq (§12.17); required, so always present once parsed.
  RtspHeaders headers;
  std::string body;
};

/// A parsed (or to-be-sent) RTSP response.
struct RtspResponse {
  int status = 200;
  std::string reason;  ///< Reason phrase; reason_phrase(status) when built with make_response.
  RtspHeaders headers;
  std::string body;

  /// CSeq header value if present and numeric.
  std::optional<std::uint32_t> cseq() const;
  /// Sets Content-Type and the body (Content-Length is written by serialize()).
  void set_body(std::string_view content_type, std::string body_text);
  /// Sets the Session header: "<id>" or "<id>;timeout=<s>" (§12.37).
  void set_session(std::string_view id, std::optional<std::uint32_t> timeout_s = std::nullopt);
  /// Sets the Date header in RFC 1123 form from `now` (callers inject the clock).
  void set_date(std::chrono::system_clock::time_point now);
};

/// A response with status line, reason phrase and CSeq echoed when known (§12.17).
RtspResponse make_response(int status, std::optional<std::uint32_t> cseq);
/// A request with method, URL and CSeq set.
RtspRequest make_request(RtspMethod method, std::string url, std::uint32_t cseq);

/// Wire form "RTSP/1.0 <status> <reason>\r\n<headers>\r\n<body>". Content-Length is written from
/// the body (and any caller-set Content-Length dropped). CR, LF and NUL in names or values are
/// replaced by spaces, so that no input can split a header (response splitting).
std::string serialize(const RtspResponse& response);
/// Wire form of a request, with the same rules as for responses.
std::string serialize(const RtspRequest& request);

/// Bounds on what a parser buffers; exceeding one is a fatal error for the connection.
struct RtspParserLimits {
  std::size_t max_header_bytes =
      std::size_t{8} * 1024;  ///< Start line + headers + blank line (431).
  std::size_t max_body_bytes = std::size_t{64} * 1024;  ///< Content-Length above this: 413.
  std::size_t max_headers = 64;                         ///< Header fields per message (431).
  std::size_t max_buffered_bytes =
      std::size_t{256} * 1024;  ///< Unconsumed input held at once (413).
  /// Largest interleaved payload accepted (§10.12's 16-bit length allows 65535). A "$" frame
  /// announcing more is not waited for: it is counted (InterleavedCounters::bad_length) and
  /// skipped up to the next "$" or request line, so a hostile length cannot swallow the
  /// requests after it. A server sets this to the largest RTCP compound it takes.
  std::size_t max_interleaved_bytes = 65535;
};

/// Interleaved frames the parser dropped instead of surfacing.
struct InterleavedCounters {
  std::uint64_t bad_length = 0;     ///< Length over max_interleaved_bytes.
  std::uint64_t skipped_bytes = 0;  ///< Bytes skipped while re-synchronising after one.
};

/// What the parser found after the last feed()/next().
enum class RtspParseEvent : std::uint8_t {
  kNeedMore,     ///< No complete message yet; feed more bytes.
  kMessage,      ///< A complete request (or response) is ready.
  kInterleaved,  ///< A complete "$" binary frame is ready (RTP/RTCP over the TCP connection).
  kError,        ///< A message was malformed; see error().
};

/// Why a message was refused, with the status code to answer (requests) or report (responses).
struct RtspParseError {
  int status = 400;
  std::string message;
  /// CSeq of the bad message when it could be read, so the reply can echo it.
  std::optional<std::uint32_t> cseq;
  /// True when framing is lost (oversize, bad Content-Length): answer, then close the connection.
  /// False when the bad message was skipped whole and parsing can go on with next().
  bool fatal = false;
};

/// One interleaved binary frame (§10.12): "$", channel, 16-bit big-endian length, payload.
struct InterleavedFrame {
  std::uint8_t channel = 0;
  std::vector<std::uint8_t> payload;
};

namespace detail {
/// Shared byte-stream framing of both parsers: buffering, limits, line splitting, Content-Length
/// and interleaved frames. Not part of the public API; exposed only so the parsers can hold it.
class RtspFramer {
 public:
  /// A message whose framing is known: start line, header fields, body.
  struct Raw {
    std::string_view start_line;  ///< Valid until the next call into the framer.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    /// First malformed header line, reported after the message is skipped whole.
    std::optional<std::string> header_error;
  };

  explicit RtspFramer(RtspParserLimits limits) : limits_(limits) {}
  /// Appends bytes; false (and a fatal error) when the unparsed input would exceed the limit.
  bool append(std::string_view bytes, RtspParseError& error);
  /// Frames the next message or interleaved frame from buffered bytes.
  RtspParseEvent next(Raw& raw, InterleavedFrame& frame, RtspParseError& error);
  /// Bytes received but not yet framed.
  std::size_t buffered() const { return buffer_.size() - pos_; }
  /// True while the buffered bytes begin an interleaved frame not yet complete.
  bool in_frame() const { return pos_ < buffer_.size() && buffer_[pos_] == '$'; }
  /// Frames dropped so far.
  const InterleavedCounters& interleaved_counters() const { return dropped_; }

 private:
  // Skips a frame with a bad length up to the next plausible start; false: needs more bytes.
  bool resync();
  // One framing step; nullopt when it dropped a frame with a bad length (next() goes on).
  std::optional<RtspParseEvent> next_once(Raw& raw, InterleavedFrame& frame, RtspParseError& error);

  RtspParserLimits limits_;
  InterleavedCounters dropped_;
  bool resyncing_ = false;          // skipping after a bad frame header until a "$" or request line
  bool resync_line_start_ = false;  // the last byte skipped was a line feed
  std::string buffer_;
  std::size_t pos_ = 0;        // start of the first unconsumed byte
  std::size_t scan_ = 0;       // where the search for the end of the header block resumes
  std::size_t lines_ = 0;      // header lines seen so far in the current header block
  std::size_t block_end_ = 0;  // end of a complete header block whose body is still missing
};
}  // namespace detail

/// Incremental parser of RTSP messages of one direction from a TCP byte stream: requests on a
/// server's connection (RtspRequestParser), responses on a client's (RtspResponseParser). Both
/// directions share everything but the start line, so there is one implementation, instantiated
/// for the two message types in rtsp_message_parser.cpp.
///
/// Use: `for (auto ev = p.feed(bytes); ev != kNeedMore; ev = p.next()) { ... }`, stopping after a
/// fatal kError. feed() appends bytes and returns the first event; next() returns the following
/// event from bytes already buffered (pipelined messages). After kMessage, take_request() /
/// take_response() moves the message out; after kInterleaved, interleaved() holds the frame until
/// the next call. The response parser reports a request arriving from the server (e.g.
/// SET_PARAMETER) as a non-fatal kError and skips it.
template <typename Message>
class RtspMessageParser {
 public:
  /// A parser with the given limits.
  explicit RtspMessageParser(RtspParserLimits limits = {});
  /// Appends `bytes` and parses the next message.
  RtspParseEvent feed(std::span<const std::uint8_t> bytes);
  /// Appends `text` and parses the next message.
  RtspParseEvent feed(std::string_view text);
  /// Parses the next message from buffered bytes only.
  RtspParseEvent next();
  /// The message of the last kMessage event.
  const Message& message() const { return message_; }
  /// Moves the message of the last kMessage event out.
  Message take_message() { return std::move(message_); }
  /// The request of the last kMessage event (request parser).
  // (Declared with Message, not the concrete type: clang 14 instantiates the bodies of
  // constrained members in an explicit instantiation, and the other type would not convert.)
  const Message& request() const requires std::same_as<Message, RtspRequest> { return message_; }
  /// Moves the request of the last kMessage event out (request parser).
  Message take_request() requires std::same_as<Message, RtspRequest> { return std::move(message_); }
  /// The response of the last kMessage event (response parser).
  const Message& response() const requires std::same_as<Message, RtspResponse> { return message_; }
  /// Moves the response of the last kMessage event out (response parser).
  Message take_response() requires std::same_as<Message, RtspResponse> {
    return std::move(message_);
  }
  /// The frame of the last kInterleaved event.
  const InterleavedFrame& interleaved() const { return frame_; }
  /// The error of the last kError event (sticky once fatal).
  const RtspParseError& error() const { return error_; }
  /// Bytes received but not yet parsed into an event.
  std::size_t buffered() const { return framer_.buffered(); }
  /// True while an interleaved frame has begun and is not complete (a "truncated tail" if the
  /// connection ends now).
  bool in_interleaved_frame() const { return framer_.in_frame(); }
  /// Interleaved frames dropped for a bad length, and the bytes skipped after them.
  const InterleavedCounters& interleaved_counters() const { return framer_.interleaved_counters(); }

 private:
  RtspParseEvent finish();

  detail::RtspFramer framer_;
  detail::RtspFramer::Raw raw_;
  Message message_;
  InterleavedFrame frame_;
  RtspParseError error_;
  bool failed_ = false;
};

// Both instantiations live in rtsp_message_parser.cpp.
extern template class RtspMessageParser<RtspRequest>;
extern template class RtspMessageParser<RtspResponse>;

/// Incremental parser of RTSP requests from a server's TCP byte stream.
using RtspRequestParser = RtspMessageParser<RtspRequest>;
/// Incremental parser of RTSP responses from a client's TCP byte stream.
using RtspResponseParser = RtspMessageParser<RtspResponse>;

/// Parses one complete request (tests, tools). Trailing bytes after it are an error.
core::Result<RtspRequest> parse_request(std::string_view text, RtspParserLimits limits = {});
/// Parses one complete response (tests, tools). Trailing bytes after it are an error.
core::Result<RtspResponse> parse_response(std::string_view text, RtspParserLimits limits = {});

}  // namespace predrop::rtsp
