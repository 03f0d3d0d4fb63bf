#pragma once
// The simulated path: a dumbbell with one bottleneck per direction (RFC 8867 §3), every flow's
// data crossing its direction's bottleneck and its feedback (RTCP reports, TCP ACKs) crossing the
// other one, plus a propagation delay per flow and direction after the bottleneck. A direction
// without a bottleneck is a pure delay. Every data packet's fate at its bottleneck is logged for
// the metrics (RFC 8868 §2: per-packet delay, loss, rates).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "predrop/sim/event_queue.hpp"
#include "predrop/sim/tbf_link.hpp"

namespace predrop::sim {

/// A flow's two ends as the network sees them.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  /// A data packet of the flow reached its receiver.
  virtual void on_receive(const Packet& p) = 0;
  /// A feedback packet of the flow reached its sender.
  virtual void on_feedback(const Packet& p) = 0;
};

/// Which way a flow's data goes: forward (the media direction of the RFC cases) or backward
/// (§5.3's second media flow).
enum class Direction : std::uint8_t { kForward = 0, kBackward = 1 };

/// One-way propagation delays of a flow.
struct FlowPath {
  SimTime data_delay_us = 50'000;      ///< Sender to receiver, after the bottleneck.
  SimTime feedback_delay_us = 50'000;  ///< Receiver to sender.
  Direction direction = Direction::kForward;
};

/// What happened to one data packet at its bottleneck.
struct PacketRecord {
  SimTime arrived_us = 0;  ///< At the bottleneck (= sent: no delay before it).
  SimTime queue_us = 0;    ///< Time spent in the queue (0 if dropped).
  std::uint32_t bytes = 0;
  bool dropped = false;
};

class Network {
 public:
  /// `backward`: the bottleneck of the other direction, if any.
  Network(EventQueue& events, TbfConfig forward, std::optional<TbfConfig> backward = {});
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  /// Registers a flow; returns its id (the Packet::flow to use).
  std::uint32_t add_flow(Endpoint& endpoint, FlowPath path, std::string name);
  /// Sends a data packet now (its flow, bytes and tag filled in).
  void send(Packet p);
  /// Sends a feedback packet of flow p.flow from its receiver now.
  void send_back(Packet p);

  TbfLink& link(Direction d);
  bool has_link(Direction d) const { return links_[static_cast<int>(d)] != nullptr; }
  const std::vector<PacketRecord>& log(std::uint32_t flow) const { return flows_[flow].log; }
  const std::string& name(std::uint32_t flow) const { return flows_[flow].name; }
  const FlowPath& path(std::uint32_t flow) const { return flows_[flow].path; }
  std::size_t flows() const { return flows_.size(); }
  EventQueue& events() { return events_; }

 private:
  struct Flow {
    Endpoint* endpoint = nullptr;
    FlowPath path;
    std::string name;
    std::vector<PacketRecord> log;
  };
  // What crosses a link: a flow's data (logged) or another flow's feedback.
  static constexpr std::uint64_t kFeedbackBit = 1ull << 63;
  void departed(Direction d, const Packet& p, SimTime now);
  void dropped(const Packet& p, SimTime now);
  void deliver(Direction d, const Packet& p, SimTime at);

  EventQueue& events_;
  std::unique_ptr<TbfLink> links_[2];
  std::vector<Flow> flows_;
};

}  // namespace predrop::sim
