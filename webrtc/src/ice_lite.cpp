// ICE-lite responder; rules in predrop/webrtc/ice_lite.hpp.
#include "predrop/webrtc/ice_lite.hpp"

#include <utility>

#include "predrop/net/os_random.hpp"
#include "predrop/webrtc/stun.hpp"

namespace predrop::webrtc {
namespace {

// RFC 8445 §7.2.2: USERNAME of a check is "<receiver's ufrag>:<sender's ufrag>".
bool username_is_ours(std::string_view username, const std::string& local,
                      const std::string& remote) {
  if (username.size() <= local.size() || username.substr(0, local.size()) != local ||
      username[local.size()] != ':') {
    return false;
  }
  return remote.empty() || username.substr(local.size() + 1) == remote;
}

}  // namespace

IceCredentials random_ice_credentials() {
  // Hex is a subset of ice-char (RFC 8839 §5.4: ALPHA / DIGIT / "+" / "/").
  return IceCredentials{net::random_hex(4), net::random_hex(12)};
}

IceLiteAgent::IceLiteAgent(IceCredentials local, std::string remote_ufrag,
                           std::uint64_t consent_timeout_us)
    : local_(std::move(local)),
      remote_ufrag_(std::move(remote_ufrag)),
      consent_timeout_us_(consent_timeout_us) {}

IceVerdict IceLiteAgent::on_stun(std::uint64_t now_us, const net::SocketAddress& from,
                                 std::span<const std::uint8_t> packet,
                                 std::span<std::uint8_t> response, std::size_t& response_size) {
  response_size = 0;
  const auto msg = parse_stun(packet);
  if (!msg) {
    ++stats_.malformed;
    return IceVerdict::Malformed;
  }
  if (msg->message_class != StunClass::Request || msg->method != kStunBinding) {
    return IceVerdict::NotRequest;
  }
  if (!username_is_ours(msg->username, local_.ufrag, remote_ufrag_)) {
    ++stats_.bad_username;
    return IceVerdict::BadUsername;
  }
  if (!verify_stun_integrity(packet, *msg, local_.pwd)) {
    ++stats_.bad_integrity;
    return IceVerdict::BadIntegrity;
  }
  StunWriter w(response, StunClass::SuccessResponse, kStunBinding, msg->transaction_id);
  w.add_xor_mapped_address(from);
  w.add_message_integrity(local_.pwd);
  w.add_fingerprint();
  if (!w.ok()) return IceVerdict::NoRoom;

  last_verified_ = from;
  if (msg->use_candidate && selected_ != from) {
    selected_ = from;
    ++stats_.nominations;
  }
  if (selected_ == from) last_consent_us_ = now_us;
  ++stats_.responded;
  response_size = w.size();
  return IceVerdict::Respond;
}

bool IceLiteAgent::consent_fresh(std::uint64_t now_us) const {
  return selected_.has_value() && now_us - last_consent_us_ <= consent_timeout_us_;
}

bool IceLiteAgent::consent_expired(std::uint64_t now_us) const {
  return selected_.has_value() && now_us - last_consent_us_ > consent_timeout_us_;
}

bool IceLiteAgent::is_verified(const net::SocketAddress& from) const {
  return selected_ == from || last_verified_ == from;
}

}  // namespace predrop::webrtc
