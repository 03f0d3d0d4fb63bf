#pragma once
// Counts heap allocations made through operator new, for the tests that check that a path
// allocates nothing (docs/design.md §5). Link allocation_counter.cpp into the test binary: it
// replaces the global operator new/delete with counting ones (malloc underneath). Allocations
// inside C libraries (malloc directly, as NSS does inside libsrtp) are not seen.
#include <cstddef>

namespace predrop::test {

/// Operator-new calls since the program started (all threads).
std::size_t allocations_so_far();

/// Counts the operator-new calls made while it is alive.
class AllocationScope {
 public:
  AllocationScope() : start_(allocations_so_far()) {}
  /// Allocations since construction.
  std::size_t count() const { return allocations_so_far() - start_; }

 private:
  std::size_t start_;
};

}  // namespace predrop::test
