// FixedRate is header-only; this unit keeps one translation unit per policy for symmetry with
// the build list and gives the vtable a home.
#include "predrop/core/fixed_rate.hpp"
