#pragma once
// Private to the capacity policy's units (capacity_policy.cpp: the plan and the facade;
// capacity_reading.cpp: what a report says about the path; capacity_modes.cpp: how the estimate
// moves in each mode): the model's fixed constants and one report's reading.
#include "predrop/core/capacity_policy.hpp"

namespace predrop::core::capacity_model {

// A block's kept bytes are paced over this share of its duration at least (with the leading
// burst repaid: over the margin).
inline constexpr double kFloorSpan = 0.9;
// A dispersion rate this much above the one at the last overuse: the bottleneck grew.
inline constexpr double kGrownDispersion = 1.2;
// Dispersion readings count as steady (the session alone on the bottleneck) when at least this
// many recent ones all lie within this fraction of the largest.
inline constexpr unsigned kSteadyReadings = 2;
inline constexpr double kSteadySpread = 0.85;
// The zone above the rate of the last overuse that is probed slowly before it counts as passed.
inline constexpr double kLimitZone = 1.25;
// Clean blocks in a row after which the rate of the last overuse no longer holds the estimate
// to additive steps (an AIMD cycle between overuses of sessions sharing a bottleneck is 3-4
// blocks): from any state, a clean path brings the estimate up geometrically after this.
inline constexpr unsigned kStaleLimitBlocks = 5;
// Clean blocks in a row without a dispersion reading after which the old readings are dropped.
inline constexpr unsigned kStaleDispersionBlocks = 3;
// An estimate at this share of the bottleneck's measured rate is at it.
inline constexpr double kAtBottleneck = 0.9;
// Below this R a stage counts as sent whole (the planner's rounding leaves a few packets).
inline constexpr double kWholeRate = 0.005;
// The estimate after a clean block sent whole: this times its delivery rate.
inline constexpr double kWholeGain = 1.25;
// R must be at least this for a stage to tell how bytes and packets relate (beta).
inline constexpr double kBetaMinRate = 0.05;
// beta is kept in this range: a planner cannot remove more than 2x R's share of the bytes, and
// less than 0.2x would mean the discards are nearly empty packets.
inline constexpr double kBetaMin = 0.2;
inline constexpr double kBetaMax = 2.0;
inline constexpr double kBetaWeight = 0.5;
// A block whose packet pairs dispersed at less than this multiple of the stream's rate has a
// bottleneck, whatever its largest burst did (on the open bed the only dispersed pairs are a
// forwarding stall's, at 100+ Mbit/s; behind 2460 kbit/s shared by three sessions a 5 kB burst
// crossed undispersed while the block's pairs dispersed at 2460 kbit/s).
inline constexpr double kNoiseDispersion = 10.0;

}  // namespace predrop::core::capacity_model

namespace predrop::core {

struct CapacityPolicy::Reading {
  const SentStage* slot = nullptr;
  bool hook = false;      ///< The sender told the block's size (rate_for_next).
  bool has_path = false;  ///< PDFB v1.1 path measurements, with the hook.
  double used = 0;        ///< R the block went with.
  bool whole = false;     ///< Sent whole (R ~ 0): the estimate did not limit it.
  double loss = 0;
  double period = 0;
  double block = 0;  ///< Its bytes (1 without the hook).
  double t = 0;      ///< Its duration (the base period without the hook).
  double sent = 0;
  double delivered = 0;
  double q = 0;           ///< Queue at its end.
  double stand = 0;       ///< Queue that stood through it.
  double prev_stand = 0;  ///< ... through the stage reported before.
  double stand_growth = 0;
  bool overuse = false;
  bool clean = false;
  bool busy = false;
  bool busy_end = false;
  double received = 0;
  double fresh_dispersion = 0;
  /// The fresh reading is well above the rate no other reading confirms yet: the bottleneck
  /// grew (the next block's pair reads it again) or the pair was compressed after it.
  bool rising_dispersion = false;
  double proven = 0;
};

}  // namespace predrop::core
