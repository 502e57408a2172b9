// Small pure helpers for option values, environment variables and files read as text: splitting
// on a separator, trimming, and whole-string numbers. Any thread.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

namespace ddp {

// The pieces of `text` between `sep`s, empty ones included: "a,,b" -> {"a", "", "b"}, and ""
// -> {""}. The views point into `text`.
std::vector<std::string_view> split(std::string_view text, char sep);

// `text` without the leading and trailing characters that are in `chars` (by default
// whitespace, as std::isspace in the C locale).
std::string_view trim(std::string_view text, std::string_view chars = " \t\n\v\f\r");

// A base-10 integer, or a floating-point number when T is one, that is the whole of `text`
// (std::from_chars: no sign '+', no spaces, no trailing junk); nullopt when it is not, or is
// out of T's range.
template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace ddp
