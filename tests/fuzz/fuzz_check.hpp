#pragma once
// A property check for fuzz targets that stays on in every build type (assert() would vanish
// under NDEBUG, and libFuzzer treats the trap as a crash with a reproducer).
#include <cstdio>

#define PREDROP_FUZZ_CHECK(cond)                                                             \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                                      \
    }                                                                                        \
  } while (0)
