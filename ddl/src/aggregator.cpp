// Per-stage gradient aggregation and the worker-side missing-chunk fill (see aggregator.hpp).
#include "predrop/ddl/aggregator.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <string>

namespace predrop::ddl {

std::string_view to_string(MissingPolicy policy) {
  switch (policy) {
    case MissingPolicy::kZero:
      return "zero";
    case MissingPolicy::kOwn:
      return "own";
  }
  return "?";
}

core::Result<MissingPolicy> parse_missing_policy(std::string_view name) {
  if (name == "zero") return MissingPolicy::kZero;
  if (name == "own") return MissingPolicy::kOwn;
  return core::make_error("unknown missing-chunk policy \"" + std::string(name) +
                          "\" (known: zero, own)");
}

Aggregator::Aggregator(ChunkPlan plan, std::uint32_t contributors, std::uint16_t tensor_id)
    : plan_(plan),
      contributors_(contributors),
      tensor_id_(tensor_id),
      sum_(plan.total_elements(), 0.0),
      chunk_count_(plan.size(), 0),
      seen_(static_cast<std::size_t>(contributors) * plan.size(), 0),
      per_contributor_(contributors, 0),
      scratch_(plan.chunk_elements(), 0.0f) {
  assert(contributors >= 1 && contributors <= 65535 && plan.size() > 0);
}

void Aggregator::reset() {
  std::fill(sum_.begin(), sum_.end(), 0.0);
  std::fill(chunk_count_.begin(), chunk_count_.end(), 0);
  std::fill(seen_.begin(), seen_.end(), 0);
  std::fill(per_contributor_.begin(), per_contributor_.end(), 0);
  received_ = 0;
}

AddOutcome Aggregator::add(std::uint32_t contributor, const ChunkView& chunk) {
  const ChunkHeader& h = chunk.header;
  std::optional<std::size_t> index;
  if (contributor < contributors_ && h.tensor_id == tensor_id_ &&
      h.tensor_elements == plan_.total_elements() &&
      chunk.value_bytes.size() == std::size_t{4} * h.count) {
    index = plan_.index_of(h.offset, h.count);
  }
  if (!index) {
    ++counters_.rejected;
    return AddOutcome::kRejected;
  }
  std::uint8_t& seen = seen_[static_cast<std::size_t>(contributor) * plan_.size() + *index];
  if (seen) {
    ++counters_.duplicate;
    return AddOutcome::kDuplicate;
  }
  const std::span<float> values(scratch_.data(), h.count);
  chunk.copy_to(values);
  // One NaN or infinity would poison every worker's model through the average: refuse the chunk
  // whole, so it counts as missing.
  for (const float v : values) {
    if (!std::isfinite(v)) {
      ++counters_.rejected;
      return AddOutcome::kRejected;
    }
  }
  double* sum = sum_.data() + h.offset;
  for (std::size_t i = 0; i < values.size(); ++i) {
    sum[i] += static_cast<double>(values[i]);
  }
  seen = 1;
  ++chunk_count_[*index];
  ++per_contributor_[contributor];
  ++received_;
  ++counters_.accepted;
  return AddOutcome::kAccepted;
}

void Aggregator::average(std::span<float> out) const {
  assert(out.size() == plan_.total_elements());
  for (std::size_t c = 0; c < plan_.size(); ++c) {
    const ChunkRange r = plan_[c];
    float* dst = out.data() + r.offset;
    const std::uint16_t n = chunk_count_[c];
    if (n == 0) {
      std::fill(dst, dst + r.count, 0.0f);
      continue;
    }
    const double* sum = sum_.data() + r.offset;
    const double d = n;
    for (std::size_t i = 0; i < r.count; ++i) {
      dst[i] = static_cast<float>(sum[i] / d);
    }
  }
}

void Aggregator::chunk_contributors(std::span<std::uint16_t> out) const {
  assert(out.size() == chunk_count_.size());
  std::copy(chunk_count_.begin(), chunk_count_.end(), out.begin());
}

std::size_t fill_missing(MissingPolicy policy, const ChunkPlan& plan,
                         std::span<const std::uint16_t> received, std::span<float> aggregate,
                         std::span<const float> own) {
  assert(received.size() == plan.size() && aggregate.size() == plan.total_elements());
  assert(policy != MissingPolicy::kOwn || own.size() == aggregate.size());
  std::size_t filled = 0;
  for (std::size_t c = 0; c < plan.size(); ++c) {
    if (received[c] != 0) continue;
    const ChunkRange r = plan[c];
    float* dst = aggregate.data() + r.offset;
    if (policy == MissingPolicy::kOwn) {
      std::memcpy(dst, own.data() + r.offset, r.count * sizeof(float));
    } else {
      std::fill(dst, dst + r.count, 0.0f);
    }
    ++filled;
  }
  return filled;
}

}  // namespace predrop::ddl
