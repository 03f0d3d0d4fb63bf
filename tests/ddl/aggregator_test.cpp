// Aggregator: exact mean with every chunk, averaging over arrivals with missing chunks,
// duplicates, rejections (all-or-nothing), reset, and the worker-side fill policies.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "predrop/ddl/aggregator.hpp"
#include "predrop/ddl/train/random.hpp"

using namespace predrop::ddl;
using namespace predrop::ddl::train;
using namespace predrop::ddl::train;
using Bytes = std::vector<std::uint8_t>;

namespace {

// Encodes chunk `c` of `tensor` under `plan` (tensor id `id`) and keeps the bytes alive.
struct Encoded {
  Bytes bytes;
  ChunkView view;
};

Encoded encode(const ChunkPlan& plan, std::span<const float> tensor, std::size_t c,
               std::uint16_t id = 0) {
  const ChunkRange r = plan[c];
  Encoded e;
  e.bytes.resize(chunk_payload_size(r.count));
  auto n = encode_chunk({0, id, r.count, plan.total_elements(), r.offset},
                        tensor.subspan(r.offset, r.count), e.bytes);
  EXPECT_TRUE(n.ok());
  e.view = parse_chunk(e.bytes).value();
  return e;
}

std::vector<float> random_gradient(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> g(n);
  // Spread over magnitudes so that summation order matters in float.
  for (auto& v : g)
    v = rng.uniform(-1.0f, 1.0f) * std::ldexp(1.0f, static_cast<int>(rng.below(20)) - 10);
  return g;
}

}  // namespace

TEST(Aggregator, AllChunksGiveTheExactMean) {
  const std::uint32_t workers = 3;
  auto plan = chunk_tensor(1000, 64).value();
  std::vector<std::vector<float>> g;
  for (std::uint32_t w = 0; w < workers; ++w)
    g.push_back(random_gradient(1000, 10 + w));
  Aggregator agg(plan, workers);
  for (std::size_t c = 0; c < plan.size(); ++c) {
    for (std::uint32_t w = 0; w < workers; ++w) {
      ASSERT_EQ(agg.add(w, encode(plan, g[w], c).view), AddOutcome::kAccepted);
    }
  }
  std::vector<float> avg(1000);
  agg.average(avg);
  for (std::size_t i = 0; i < 1000; ++i) {
    // Straightforward sum / N in the same order and precision: bit-exact.
    double s = 0.0;
    for (std::uint32_t w = 0; w < workers; ++w)
      s += static_cast<double>(g[w][i]);
    const float ref = static_cast<float>(s / workers);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(avg[i]), std::bit_cast<std::uint32_t>(ref)) << i;
    // And within 1e-6 (relative) of the exact mean.
    const long double exact = (static_cast<long double>(g[0][i]) + g[1][i] + g[2][i]) / 3.0L;
    ASSERT_LE(std::fabs(static_cast<long double>(avg[i]) - exact),
              1e-6L * std::max(1.0L, std::fabs(exact)));
  }
  EXPECT_EQ(agg.received(), workers * plan.size());
  std::vector<std::uint16_t> counts(plan.size());
  agg.chunk_contributors(counts);
  EXPECT_TRUE(std::all_of(counts.begin(), counts.end(), [](auto n) { return n == 3; }));
}

TEST(Aggregator, ArrivalOrderChangesAtMostTheLastBit) {
  const std::uint32_t workers = 4;
  auto plan = chunk_tensor(513, 32).value();
  std::vector<std::vector<float>> g;
  for (std::uint32_t w = 0; w < workers; ++w)
    g.push_back(random_gradient(513, 50 + w));
  // All (worker, chunk) pairs in a shuffled order, as a network would deliver them.
  std::vector<std::pair<std::uint32_t, std::size_t>> order;
  for (std::uint32_t w = 0; w < workers; ++w) {
    for (std::size_t c = 0; c < plan.size(); ++c)
      order.emplace_back(w, c);
  }
  Rng(3).shuffle(std::span(order));
  Aggregator agg(plan, workers);
  for (auto [w, c] : order)
    ASSERT_EQ(agg.add(w, encode(plan, g[w], c).view), AddOutcome::kAccepted);
  std::vector<float> avg(513);
  agg.average(avg);
  for (std::size_t i = 0; i < 513; ++i) {
    const long double exact =
        (static_cast<long double>(g[0][i]) + g[1][i] + g[2][i] + g[3][i]) / 4.0L;
    ASSERT_LE(std::fabs(static_cast<long double>(avg[i]) - exact),
              1e-6L * std::max(1.0L, std::fabs(exact)));
  }
}

TEST(Aggregator, MissingChunksAverageOverArrivalsAndEmptyChunksAreZero) {
  auto plan = chunk_tensor(10, 4).value();  // chunks [0,4) [4,8) [8,10)
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<float> b = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  Aggregator agg(plan, 2);
  ASSERT_EQ(agg.add(0, encode(plan, a, 0).view), AddOutcome::kAccepted);
  ASSERT_EQ(agg.add(1, encode(plan, b, 0).view), AddOutcome::kAccepted);
  ASSERT_EQ(agg.add(1, encode(plan, b, 1).view), AddOutcome::kAccepted);  // a's chunk 1 missing
  // Nobody's chunk 2.
  std::vector<float> avg(10);
  agg.average(avg);
  EXPECT_EQ(avg, (std::vector<float>{2, 3, 4, 5, 7, 8, 9, 10, 0, 0}));
  std::vector<std::uint16_t> counts(3);
  agg.chunk_contributors(counts);
  EXPECT_EQ(counts, (std::vector<std::uint16_t>{2, 1, 0}));
  EXPECT_TRUE(agg.has(1, 1));
  EXPECT_FALSE(agg.has(0, 1));
  EXPECT_EQ(agg.received_from(0), 1u);
  EXPECT_EQ(agg.received_from(1), 2u);
}

TEST(Aggregator, DuplicatesAreCountedAndIgnored) {
  auto plan = chunk_tensor(8, 4).value();
  const std::vector<float> a = {1, 1, 1, 1, 2, 2, 2, 2};
  Aggregator agg(plan, 1);
  const auto e = encode(plan, a, 1);
  EXPECT_EQ(agg.add(0, e.view), AddOutcome::kAccepted);
  EXPECT_EQ(agg.add(0, e.view), AddOutcome::kDuplicate);
  std::vector<float> avg(8);
  agg.average(avg);
  EXPECT_EQ(avg, (std::vector<float>{0, 0, 0, 0, 2, 2, 2, 2}));
  EXPECT_EQ(agg.counters().accepted, 1u);
  EXPECT_EQ(agg.counters().duplicate, 1u);
}

TEST(Aggregator, InvalidChunksAreRejectedWhole) {
  auto plan = chunk_tensor(8, 4).value();
  std::vector<float> a = {1, 1, 1, 1, 2, 2, 2, 2};
  Aggregator agg(plan, 2, /*tensor_id=*/5);
  EXPECT_EQ(agg.add(0, encode(plan, a, 0, 4).view), AddOutcome::kRejected);  // other tensor
  EXPECT_EQ(agg.add(2, encode(plan, a, 0, 5).view), AddOutcome::kRejected);  // no such worker
  auto other = chunk_tensor(9, 4).value();
  std::vector<float> nine(9, 1.0f);
  EXPECT_EQ(agg.add(0, encode(other, nine, 0, 5).view), AddOutcome::kRejected);  // length 9
  // Misaligned offset and wrong count for the plan.
  Bytes bytes(chunk_payload_size(4));
  ASSERT_TRUE(encode_chunk({0, 5, 4, 8, 2}, std::span(a).subspan(2, 4), bytes).ok());
  EXPECT_EQ(agg.add(0, parse_chunk(bytes).value()), AddOutcome::kRejected);
  Bytes short_bytes(chunk_payload_size(3));
  ASSERT_TRUE(encode_chunk({0, 5, 3, 8, 4}, std::span(a).subspan(4, 3), short_bytes).ok());
  EXPECT_EQ(agg.add(0, parse_chunk(short_bytes).value()), AddOutcome::kRejected);
  // A NaN refuses the whole chunk: nothing of it is summed and it can still arrive cleanly later.
  a[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(agg.add(0, encode(plan, a, 1, 5).view), AddOutcome::kRejected);
  a[5] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(agg.add(0, encode(plan, a, 1, 5).view), AddOutcome::kRejected);
  a[5] = 2;
  EXPECT_EQ(agg.add(0, encode(plan, a, 1, 5).view), AddOutcome::kAccepted);
  std::vector<float> avg(8);
  agg.average(avg);
  EXPECT_EQ(avg, (std::vector<float>{0, 0, 0, 0, 2, 2, 2, 2}));
  EXPECT_EQ(agg.counters().rejected, 7u);
  EXPECT_EQ(agg.received(), 1u);
}

TEST(Aggregator, ResetClearsTheStageButKeepsCounters) {
  auto plan = chunk_tensor(4, 4).value();
  const std::vector<float> a = {1, 2, 3, 4};
  Aggregator agg(plan, 1);
  ASSERT_EQ(agg.add(0, encode(plan, a, 0).view), AddOutcome::kAccepted);
  agg.reset();
  std::vector<float> avg(4, 9.0f);
  agg.average(avg);
  EXPECT_EQ(avg, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(agg.received(), 0u);
  EXPECT_EQ(agg.add(0, encode(plan, a, 0).view), AddOutcome::kAccepted);  // not a duplicate
  EXPECT_EQ(agg.counters().accepted, 2u);
}

TEST(MissingPolicy, WorkerFillsZeroOrOwn) {
  auto plan = chunk_tensor(10, 4).value();
  const std::vector<float> own = {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10};
  const std::vector<std::uint16_t> received = {3, 0, 1};
  std::vector<float> agg = {1, 1, 1, 1, 7, 7, 7, 7, 2, 2};
  std::vector<float> z = agg;
  EXPECT_EQ(fill_missing(MissingPolicy::kZero, plan, received, z, own), 1u);
  EXPECT_EQ(z, (std::vector<float>{1, 1, 1, 1, 0, 0, 0, 0, 2, 2}));
  std::vector<float> o = agg;
  EXPECT_EQ(fill_missing(MissingPolicy::kOwn, plan, received, o, own), 1u);
  EXPECT_EQ(o, (std::vector<float>{1, 1, 1, 1, -5, -6, -7, -8, 2, 2}));
}

TEST(MissingPolicy, Names) {
  EXPECT_EQ(parse_missing_policy("zero").value(), MissingPolicy::kZero);
  EXPECT_EQ(parse_missing_policy("own").value(), MissingPolicy::kOwn);
  EXPECT_EQ(to_string(MissingPolicy::kOwn), "own");
  auto bad = parse_missing_policy("mean");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "unknown missing-chunk policy \"mean\" (known: zero, own)");
}
