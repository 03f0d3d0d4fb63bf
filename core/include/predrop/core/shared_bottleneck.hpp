#pragma once
// Coupled estimates for sessions that share one bottleneck (bench/README.md "Self-fairness"),
// after the flow state exchange of RFC 8699 ("Coupled Congestion Control for RTP Media"): each
// session's own controller keeps moving its estimate, and the group turns the moves into one
// aggregate that every member gets an equal share of.
//
// Why: sessions that share a bottleneck but read each congestion event at a different phase of
// their blocks take different cuts (one reads "queue building", another "another flow's burst"),
// and AIMD evens shares out only when every session takes the same decrease at the same event.
// Coupled, one member's cut lowers every member's share at once.
//
// The rule (RFC 8699's flow state exchange with equal priorities):
//  - a member's move of its estimate, up or down, moves the aggregate by as much: a decrease is
//    applied to every member at once, and n members that each step up once per block grow the
//    aggregate as n uncoupled sessions would (so the group takes from other traffic, a TCP
//    flow, what n independent sessions would; dividing increases by n, which was tried on the
//    path simulator, made the group lose 0.9 dB to §5.7's short TCP flows);
//  - every member's share is the aggregate over the members; a member that leaves takes its
//    share with it (the others find freed capacity by probing, as for any other).
// Members without an estimate (their policy knows no bottleneck: R = r0) are not counted.
//
// Which sessions share a bottleneck is not decided here: the server groups them by the
// receivers' address prefix when configured (control.couple_prefix_v4/_v6).
//
// Threading: sessions of one group may live on different worker threads; every call takes the
// group's mutex. It is called once per report or block start, never per packet.
#include <cstdint>
#include <mutex>
#include <vector>

namespace predrop::core {

/// One group of coupled sessions (see the file comment).
class SharedBottleneck {
 public:
  using Member = std::uint32_t;

  /// A new member, with no estimate yet.
  Member join();
  /// The member leaves: its share goes back to the others.
  void leave(Member member);
  /// The member's controller moved its estimate to `estimate` (link bytes per µs; <= 0: it knows
  /// no bottleneck) from the share the group last gave it. Returns its share of the new
  /// aggregate (0 when `estimate` <= 0).
  double update(Member member, double estimate);
  /// The member's share of the aggregate now (0 when it has no estimate).
  double share(Member member) const;
  /// Members with an estimate.
  std::size_t limited() const;

 private:
  struct Slot {
    double share = 0.0;  ///< What the group last gave it (0: no estimate).
    bool joined = false;
  };
  void redistribute();

  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  double aggregate_ = 0.0;
  std::size_t limited_ = 0;
};

}  // namespace predrop::core
