// Catch2 under one name, v2 (Debian 12's 2.13) or v3 (Debian 13 and later): every test file
// includes this, never Catch2 itself. Tests use v2's spellings (Catch::Contains for a
// substring, Catch::StartsWith, Catch::EndsWith, Approx); under v3 they name v3's.
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text) {
  return Matchers::ContainsSubstring(text);
}
using Matchers::EndsWith;
using Matchers::StartsWith;
}  // namespace Catch
using Catch::Approx;  // v2 declares it at global scope
#else
#include <catch2/catch.hpp>
#endif
