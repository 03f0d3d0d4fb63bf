#include "predrop/server/session_directory.hpp"

namespace predrop::server {

SessionDirectory::Admit SessionDirectory::try_add(const std::string& id, std::uint32_t worker,
                                                  const std::string& owner_ip,
                                                  std::size_t max_total,
                                                  std::size_t max_per_address) {
  std::lock_guard lock(mutex_);
  if (max_total != 0 && sessions_.size() >= max_total) return Admit::kFull;
  if (!owner_ip.empty() && max_per_address != 0) {
    auto it = per_ip_.find(owner_ip);
    if (it != per_ip_.end() && it->second >= max_per_address) return Admit::kAddressFull;
  }
  // Ids are 128 random bits: a second add of one is the same session, counted once.
  if (sessions_.emplace(id, Owner{worker, owner_ip}).second && !owner_ip.empty()) {
    ++per_ip_[owner_ip];
  }
  return Admit::kAdded;
}

void SessionDirectory::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (!it->second.owner_ip.empty()) {
    auto ip = per_ip_.find(it->second.owner_ip);
    if (ip != per_ip_.end() && --ip->second == 0) per_ip_.erase(ip);
  }
  sessions_.erase(it);
}

std::optional<SessionDirectory::Owner> SessionDirectory::find(std::string_view id) const {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(std::string(id));
  if (it == sessions_.end()) return std::nullopt;
  return it->second;
}

std::size_t SessionDirectory::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace predrop::server
