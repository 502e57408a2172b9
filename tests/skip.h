// Skipping a unit-test case that cannot run here, so CTest shows it as Skipped, never Passed.
// Catch2 v3 has SKIP: the case is skipped, and the binary's exit code is the one its
// catch_discover_tests entry declares. Catch2 v2 has none: print why and exit with the code every
// unit test's CTest entry declares as SKIP_RETURN_CODE (each case is its own CTest test, so
// leaving the process skips exactly that case).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "tests/catch.h"

namespace ddp::testing {

inline constexpr int kSkipReturnCode = 77;  // DDP_SKIP_RETURN_CODE in tests/CMakeLists.txt

[[noreturn]] inline void skip(const char* reason) {
  std::fprintf(stderr, "SKIPPED: %s\n", reason);
  std::fflush(stderr);
#if CATCH_VERSION_MAJOR >= 3
  SKIP(reason);
#endif
  std::_Exit(kSkipReturnCode);
}

}  // namespace ddp::testing
