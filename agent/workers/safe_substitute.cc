#include "agent/workers/safe_substitute.h"

#include <cctype>

namespace ddp::agent {
namespace {

bool is_identifier_start(char c) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) != 0;
}

bool is_identifier_char(char c) {
  return c == '_' || std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// Length of the identifier at text[pos], 0 if none.
std::size_t identifier_at(std::string_view text, std::size_t pos) {
  if (pos >= text.size() || !is_identifier_start(text[pos])) return 0;
  std::size_t end = pos + 1;
  while (end < text.size() && is_identifier_char(text[end])) ++end;
  return end - pos;
}

}  // namespace

std::string safe_substitute(std::string_view text,
                            const std::map<std::string, std::string, std::less<>>& values) {
  auto value_or = [&](std::string_view name, std::string_view as_written) {
    auto it = values.find(name);
    return it == values.end() ? as_written : std::string_view(it->second);
  };
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '$') {
      out += text[i++];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {  // "$$" is an escaped "$"
      out += '$';
      i += 2;
      continue;
    }
    if (std::size_t n = identifier_at(text, i + 1); n > 0) {  // $name
      out += value_or(text.substr(i + 1, n), text.substr(i, n + 1));
      i += n + 1;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {  // ${name}
      std::size_t n = identifier_at(text, i + 2);
      if (n > 0 && i + 2 + n < text.size() && text[i + 2 + n] == '}') {
        out += value_or(text.substr(i + 2, n), text.substr(i, n + 3));
        i += n + 3;
        continue;
      }
    }
    out += text[i++];  // any other "$" stays
  }
  return out;
}

}  // namespace ddp::agent
