// CUPMON_CHECK: always-on assertion for "cannot happen" conditions (bugs, not environment errors).
#pragma once

#include <cstdio>
#include <cstdlib>

#define CUPMON_CHECK(cond)                                                               \
  do {                                                                                   \
    if (!(cond)) [[unlikely]] {                                                          \
      std::fprintf(stderr, "cupmon: internal check failed: %s (%s:%d)\n", #cond, __FILE__, \
                   __LINE__);                                                            \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
