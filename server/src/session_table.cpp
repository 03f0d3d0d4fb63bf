#include "session_table.hpp"

#include <algorithm>
#include <utility>

#include "predrop/net/os_random.hpp"

namespace predrop::server::detail {

namespace {
constexpr std::size_t kSessionIdBytes = 16;
}  // namespace

SessionTable::SessionTable(std::uint32_t worker, std::uint32_t worker_count)
    : worker_(worker), worker_count_(std::max<std::uint32_t>(1, worker_count)) {}

std::string SessionTable::fresh_id() const {
  for (;;) {
    std::string id = net::random_hex(kSessionIdBytes);
    if (!sessions_.contains(id)) return id;
  }
}

SessionEntry& SessionTable::add(std::unique_ptr<SessionEntry> entry) {
  // Worker k of n numbers its sessions k+1, k+1+n, ...: unique in the process, so that the
  // metrics gathered from all workers never show one number twice.
  entry->number = numbers_++ * worker_count_ + worker_ + 1;
  SessionEntry& ref = *entry;
  sessions_.emplace(ref.id, std::move(entry));
  return ref;
}

void SessionTable::index_addresses(const SessionEntry& entry) {
  for (const SessionTrack& t : entry.tracks) {
    if (t.interleaved) continue;  // its RTCP comes on the connection, not from an address
    by_address_[t.rtp_destination] = entry.id;
    if (t.rtcp_destination) by_address_[*t.rtcp_destination] = entry.id;
  }
}

std::unique_ptr<SessionEntry> SessionTable::remove(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  std::erase_if(by_address_, [&](const auto& a) { return a.second == id; });
  std::unique_ptr<SessionEntry> entry = std::move(it->second);
  sessions_.erase(it);
  return entry;
}

SessionEntry* SessionTable::find(const std::string& id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

SessionEntry* SessionTable::by_address(const net::SocketAddress& from) const {
  auto it = by_address_.find(from);
  return it == by_address_.end() ? nullptr : find(it->second);
}

std::vector<std::string> SessionTable::expired(std::uint64_t now_us,
                                               std::uint64_t timeout_us) const {
  std::vector<std::string> out;
  for (const auto& [id, e] : sessions_) {
    std::uint64_t last = e->last_request_us;
    if (e->session) last = std::max(last, e->session->last_heard_us());
    // Push sessions have no client to hear from; they live as long as the server.
    const bool push = e->last_request_us == 0 && e->session && !e->feedback;
    if (!push && last != 0 && now_us > last + timeout_us) out.push_back(id);
  }
  return out;
}

std::vector<const StreamSession*> SessionTable::started() const {
  std::vector<const StreamSession*> out;
  for (const auto& [id, e] : sessions_) {
    if (e->session) out.push_back(e->session.get());
  }
  return out;
}

void SessionTable::clear() {
  sessions_.clear();
  by_address_.clear();
}

std::uint32_t fresh_ssrc(const SessionEntry& entry) {
  for (;;) {
    const std::uint32_t ssrc = net::random_u32();
    if (std::none_of(entry.tracks.begin(), entry.tracks.end(),
                     [ssrc](const SessionTrack& t) { return t.ssrc == ssrc; })) {
      return ssrc;
    }
  }
}

}  // namespace predrop::server::detail
