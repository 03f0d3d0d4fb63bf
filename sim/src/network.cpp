#include "predrop/sim/network.hpp"

#include <utility>

namespace predrop::sim {

namespace {
Direction other(Direction d) {
  return d == Direction::kForward ? Direction::kBackward : Direction::kForward;
}
}  // namespace

Network::Network(EventQueue& events, TbfConfig forward, std::optional<TbfConfig> backward)
    : events_(events) {
  links_[0] = std::make_unique<TbfLink>(
      events, forward,
      [this](const Packet& p, SimTime now) { departed(Direction::kForward, p, now); },
      [this](const Packet& p, SimTime now) { dropped(p, now); });
  if (backward) {
    links_[1] = std::make_unique<TbfLink>(
        events, *backward,
        [this](const Packet& p, SimTime now) { departed(Direction::kBackward, p, now); },
        [this](const Packet& p, SimTime now) { dropped(p, now); });
  }
}

std::uint32_t Network::add_flow(Endpoint& endpoint, FlowPath path, std::string name) {
  flows_.push_back(Flow{&endpoint, path, std::move(name), {}});
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

TbfLink& Network::link(Direction d) {
  return *links_[static_cast<int>(d)];
}

void Network::send(Packet p) {
  p.sent_us = events_.now();
  p.tag &= ~kFeedbackBit;
  const Direction d = flows_[p.flow].path.direction;
  if (links_[static_cast<int>(d)]) {
    links_[static_cast<int>(d)]->enqueue(p);
  } else {
    flows_[p.flow].log.push_back(PacketRecord{p.sent_us, 0, p.bytes, false});
    deliver(d, p, events_.now() + flows_[p.flow].path.data_delay_us);
  }
}

void Network::send_back(Packet p) {
  p.sent_us = events_.now();
  p.tag |= kFeedbackBit;
  const Direction d = other(flows_[p.flow].path.direction);
  if (links_[static_cast<int>(d)]) {
    links_[static_cast<int>(d)]->enqueue(p);
  } else {
    deliver(d, p, events_.now() + flows_[p.flow].path.feedback_delay_us);
  }
}

void Network::departed(Direction d, const Packet& p, SimTime now) {
  const bool feedback = (p.tag & kFeedbackBit) != 0;
  Flow& f = flows_[p.flow];
  if (!feedback) {
    f.log.push_back(PacketRecord{p.enqueued_us, now - p.enqueued_us, p.bytes, false});
  }
  deliver(d, p, now + (feedback ? f.path.feedback_delay_us : f.path.data_delay_us));
}

void Network::dropped(const Packet& p, SimTime now) {
  if ((p.tag & kFeedbackBit) == 0) {
    flows_[p.flow].log.push_back(PacketRecord{now, 0, p.bytes, true});
  }
}

void Network::deliver(Direction /*d*/, const Packet& p, SimTime at) {
  events_.at(at, [this, p] {
    Packet q = p;
    const bool feedback = (q.tag & kFeedbackBit) != 0;
    q.tag &= ~kFeedbackBit;
    Endpoint* e = flows_[q.flow].endpoint;
    if (feedback) {
      e->on_feedback(q);
    } else {
      e->on_receive(q);
    }
  });
}

}  // namespace predrop::sim
