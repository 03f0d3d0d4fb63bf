#pragma once
// Reading other processes' figures from /proc for the load tester and the benchmarks: CPU time of
// a pid, the pid that listens on a TCP port, and the drop counter of a UDP socket (a sink that is
// never read counts every datagram it receives as a drop, which makes it a cheap packet counter).
//
// Linux only; every function returns an empty optional when /proc does not have the answer.
#include <cstdint>
#include <optional>

namespace predrop::load {

/// User + system CPU seconds of process `pid` so far (/proc/<pid>/stat fields 14 and 15).
std::optional<double> process_cpu_seconds(int pid);

/// User + system CPU seconds of thread `tid` of process `pid` alone
/// (/proc/<pid>/task/<tid>/stat; /proc/<tid>/stat would sum the whole process).
std::optional<double> thread_cpu_seconds(int pid, int tid);

/// The pid of a process with a socket listening on TCP `port` (any address), found through
/// /proc/net/tcp{,6} and /proc/*/fd; only processes we may inspect are seen.
std::optional<int> find_pid_listening_on(std::uint16_t port);

/// Sum of the "drops" column of /proc/net/udp for sockets bound to local `port`.
std::optional<std::uint64_t> udp_socket_drops(std::uint16_t port);

}  // namespace predrop::load
