#include "predrop/ddl/callback_boundary.hpp"

#include <bit>

#include "predrop/core/log.hpp"

namespace predrop::ddl {

void CallbackBoundary::log(const char* kind, const char* what) noexcept {
  if (count_ > 8 && !std::has_single_bit(count_)) return;
  try {
    core::log(core::LogLevel::kError, component_,
              "exception in the %s callback, caught at its boundary (%llu so far): %s", kind,
              static_cast<unsigned long long>(count_), what);
  } catch (...) {  // NOLINT(bugprone-empty-catch): logging must not throw out of the boundary
  }
}

}  // namespace predrop::ddl
