#include "predrop/load/proc.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace predrop::load {

namespace {

std::optional<double> cpu_seconds_in(const std::string& stat_path) {
  std::ifstream f(stat_path);
  std::string line;
  if (!std::getline(f, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may contain spaces: count from its end.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  // Fields 3..13, then utime (14) and stime (15).
  for (int i = 3; i <= 13; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  if (!(rest >> utime >> stime)) return std::nullopt;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return static_cast<double>(utime + stime) / static_cast<double>(ticks > 0 ? ticks : 100);
}

}  // namespace

std::optional<double> process_cpu_seconds(int pid) {
  return cpu_seconds_in("/proc/" + std::to_string(pid) + "/stat");
}

std::optional<double> thread_cpu_seconds(int pid, int tid) {
  return cpu_seconds_in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
}

namespace {

// Inodes of sockets in /proc/net/<file> whose local port is `port` (and, if `state` is given,
// whose st column equals it).
std::vector<unsigned long> socket_inodes(const char* file, std::uint16_t port, const char* state) {
  std::vector<unsigned long> out;
  std::ifstream f(std::string("/proc/net/") + file);
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout;
    unsigned long inode = 0;
    if (!(in >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >>
          inode)) {
      continue;
    }
    const auto colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    if (std::stoul(local.substr(colon + 1), nullptr, 16) != port) continue;
    if (state != nullptr && st != state) continue;
    out.push_back(inode);
  }
  return out;
}

}  // namespace

std::optional<int> find_pid_listening_on(std::uint16_t port) {
  auto inodes = socket_inodes("tcp", port, "0A");  // 0A = TCP_LISTEN
  for (auto i : socket_inodes("tcp6", port, "0A")) {
    inodes.push_back(i);
  }
  if (inodes.empty()) return std::nullopt;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<int> found;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    const std::string fd_dir = std::string("/proc/") + e->d_name + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;
    while (dirent* fd = ::readdir(fds)) {
      char target[64];
      const std::string link = fd_dir + "/" + fd->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      unsigned long inode = 0;
      if (std::sscanf(target, "socket:[%lu]", &inode) != 1) continue;
      for (auto want : inodes) {
        if (want == inode) found = static_cast<int>(pid);
      }
      if (found) break;
    }
    ::closedir(fds);
    if (found) break;
  }
  ::closedir(proc);
  return found;
}

std::optional<std::uint64_t> udp_socket_drops(std::uint16_t port) {
  std::ifstream f("/proc/net/udp");
  std::string line;
  std::getline(f, line);
  std::optional<std::uint64_t> total;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::vector<std::string> cols;
    std::string c;
    while (in >> c) {
      cols.push_back(c);
    }
    if (cols.size() < 13) continue;
    const auto colon = cols[1].rfind(':');
    if (colon == std::string::npos) continue;
    if (std::stoul(cols[1].substr(colon + 1), nullptr, 16) != port) continue;
    total = total.value_or(0) + std::stoull(cols.back());
  }
  return total;
}

}  // namespace predrop::load
