// Byte-stream framing shared by both RTSP message parsers (RFC 2326 §4, §10.12, §12.14):
// buffering within the limits, empty lines between messages, header lines and folding,
// Content-Length bodies, interleaved binary frames and the resync after a bad one.
#include <string>

#include "predrop/core/text_util.hpp"
#include "predrop/rtsp/rtsp_message.hpp"

namespace predrop::rtsp {

namespace detail {

bool RtspFramer::append(std::string_view bytes, RtspParseError& error) {
  // Drop consumed bytes first; the views of the previous event are no longer used.
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    scan_ = 0;
    pos_ = 0;
    block_end_ = 0;
  } else if (pos_ > 4096 && pos_ > buffer_.size() / 2) {
    buffer_.erase(0, pos_);
    scan_ -= pos_;
    if (block_end_ > pos_) {
      block_end_ -= pos_;
    }
    pos_ = 0;
  }
  if (buffered() + bytes.size() > limits_.max_buffered_bytes) {
    error = {413,
             "more than " + std::to_string(limits_.max_buffered_bytes) +
                 " bytes of unparsed input (413 Request Entity Too Large)",
             std::nullopt, true};
    return false;
  }
  buffer_.append(bytes);
  return true;
}

bool RtspFramer::resync() {
  // The next frame or request starts at a "$" or at an upper-case letter that begins a line
  // (every RTSP method is upper case): skip to the first such byte. Payload bytes may look like
  // either; a wrong guess is skipped the same way (400 for a bogus line, another bad length).
  while (pos_ < buffer_.size()) {
    const char ch = buffer_[pos_];
    if (ch == '$' || (resync_line_start_ && ch >= 'A' && ch <= 'Z')) {
      resyncing_ = false;
      resync_line_start_ = false;
      scan_ = pos_;
      return true;
    }
    resync_line_start_ = ch == '\n';
    ++pos_;
    ++dropped_.skipped_bytes;
  }
  scan_ = pos_;
  return false;
}

RtspParseEvent RtspFramer::next(Raw& raw, InterleavedFrame& frame, RtspParseError& error) {
  // A loop, not recursion: a run of bad frames must not grow the stack.
  for (;;) {
    if (auto ev = next_once(raw, frame, error)) {
      return *ev;
    }
  }
}

std::optional<RtspParseEvent> RtspFramer::next_once(Raw& raw, InterleavedFrame& frame,
                                                    RtspParseError& error) {
  if (resyncing_ && !resync()) {
    return RtspParseEvent::kNeedMore;
  }
  // Empty lines between messages are tolerated (RFC 2616 §4.1, which RTSP inherits).
  if (scan_ <= pos_) {
    while (pos_ < buffer_.size() && (buffer_[pos_] == '\r' || buffer_[pos_] == '\n')) {
      ++pos_;
    }
    scan_ = pos_;
    lines_ = 0;
  }
  if (pos_ >= buffer_.size()) {
    return RtspParseEvent::kNeedMore;
  }

  if (buffer_[pos_] == '$') {
    // RFC 2326 §10.12: '$', one-byte channel, two-byte big-endian length, then the data.
    if (buffered() < 4) {
      return RtspParseEvent::kNeedMore;
    }
    const auto b = [&](std::size_t i) { return static_cast<std::uint8_t>(buffer_[pos_ + i]); };
    const std::size_t len = (static_cast<std::size_t>(b(2)) << 8) | b(3);
    if (len > limits_.max_interleaved_bytes) {
      // Not waited for: its payload would swallow whatever follows (see RtspParserLimits).
      ++dropped_.bad_length;
      pos_ += 4;
      dropped_.skipped_bytes += 4;
      resyncing_ = true;
      resync_line_start_ = true;  // a request may follow the header directly
      return std::nullopt;
    }
    if (buffered() < 4 + len) {
      return RtspParseEvent::kNeedMore;
    }
    frame.channel = b(1);
    const auto* data = reinterpret_cast<const std::uint8_t*>(buffer_.data() + pos_ + 4);
    frame.payload.assign(data, data + len);
    pos_ += 4 + len;
    scan_ = pos_;
    return RtspParseEvent::kInterleaved;
  }

  // Find the blank line that ends the header block, resuming where the last call stopped
  // (or reusing it when only the body was missing last time).
  std::size_t end = block_end_ > pos_ ? block_end_ : std::string::npos;  // one past the blank line
  while (end == std::string::npos) {
    const auto nl = buffer_.find('\n', scan_);
    if (nl == std::string::npos) {
      break;
    }
    const bool blank = nl == scan_ || (nl == scan_ + 1 && buffer_[scan_] == '\r');
    scan_ = nl + 1;
    if (blank) {
      end = scan_;
      break;
    }
    // The byte limit is checked before the line count so that the error does not depend on
    // how the input was split into reads.
    if (scan_ - pos_ > limits_.max_header_bytes) {
      break;
    }
    if (++lines_ > limits_.max_headers + 1) {
      error = {431,
               "more than " + std::to_string(limits_.max_headers) +
                   " header fields (431 Request Header Fields Too Large)",
               std::nullopt, true};
      return RtspParseEvent::kError;
    }
  }
  const std::size_t header_len = (end == std::string::npos ? scan_ : end) - pos_;
  if (header_len > limits_.max_header_bytes ||
      (end == std::string::npos && buffered() > limits_.max_header_bytes)) {
    error = {431,
             "header block exceeds " + std::to_string(limits_.max_header_bytes) +
                 " bytes (431 Request Header Fields Too Large)",
             std::nullopt, true};
    return RtspParseEvent::kError;
  }
  if (end == std::string::npos) {
    return RtspParseEvent::kNeedMore;
  }

  // Split the block into lines (LF or CRLF), unfolding continuation lines.
  const std::string_view block(buffer_.data() + pos_, end - pos_);
  raw.headers.clear();
  raw.header_error.reset();
  raw.start_line = {};
  bool first = true;
  std::size_t at = 0;
  while (at < block.size()) {
    const auto nl = block.find('\n', at);
    if (nl == std::string_view::npos) {
      break;  // cannot happen: the block ends with a blank line
    }
    std::string_view line = block.substr(at, nl - at);
    at = nl + 1;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      break;
    }
    if (first) {
      raw.start_line = line;
      first = false;
      continue;
    }
    if (raw.header_error) {
      continue;
    }
    if (line.find('\r') != std::string_view::npos || line.find('\0') != std::string_view::npos) {
      // A bare CR inside a line is how header smuggling starts; refuse the message.
      raw.header_error = "control character in header line " + core::text::quote_for_error(line);
      continue;
    }
    if (core::text::is_space(line.front())) {
      if (raw.headers.empty()) {
        raw.header_error = "continuation line before any header";
        continue;
      }
      // A folded line is part of the header's value and gets the value's control-character
      // check (fuzz_rtsp found a \x16 that passed here and failed the re-parse of its own
      // serialisation).
      const auto folded = core::text::trim(line);
      if (core::text::has_ctl(folded)) {
        raw.header_error = "control character in header " + raw.headers.back().first;
        continue;
      }
      auto& value = raw.headers.back().second;
      if (!value.empty()) {
        value += ' ';
      }
      value += folded;
      continue;
    }
    const auto colon = line.find(':');
    const auto name = colon == std::string_view::npos ? line : line.substr(0, colon);
    if (colon == std::string_view::npos || !core::text::is_token(name)) {
      raw.header_error = "malformed header line " + core::text::quote_for_error(line);
      continue;
    }
    const auto value = core::text::trim(line.substr(colon + 1));
    if (core::text::has_ctl(value)) {
      raw.header_error = "control character in header " + std::string(name);
      continue;
    }
    raw.headers.emplace_back(std::string(name), std::string(value));
  }

  // Body length: every Content-Length must agree and be a plain number within the limit.
  std::optional<std::size_t> content_length;
  for (const auto& [name, value] : raw.headers) {
    if (!core::text::iequals(name, "Content-Length")) {
      continue;
    }
    const auto n = core::text::parse_uint<std::uint64_t>(value);
    if (!n || (content_length && *content_length != *n)) {
      error = {400, "invalid Content-Length " + core::text::quote_for_error(value), std::nullopt,
               true};
      return RtspParseEvent::kError;
    }
    if (*n > limits_.max_body_bytes) {
      error = {413,
               "body of " + std::to_string(*n) + " bytes exceeds " +
                   std::to_string(limits_.max_body_bytes) + " (413 Request Entity Too Large)",
               std::nullopt, true};
      return RtspParseEvent::kError;
    }
    content_length = static_cast<std::size_t>(*n);
  }
  const std::size_t body_len = content_length.value_or(0);
  if (buffer_.size() - end < body_len) {
    block_end_ = end;
    return RtspParseEvent::kNeedMore;
  }

  raw.body.assign(buffer_, end, body_len);
  pos_ = end + body_len;
  block_end_ = 0;
  // The start line view stays valid: the buffer is only compacted in append().
  return RtspParseEvent::kMessage;
}

}  // namespace detail

}  // namespace predrop::rtsp
