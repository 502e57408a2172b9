#include "agent/worker_args.h"

#include <cctype>
#include <string_view>

namespace ddp::agent {
namespace {

constexpr std::string_view kName = "local_rank";

bool is_identifier_start(char c) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) != 0;
}

bool is_identifier_char(char c) {
  return c == '_' || std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// Length of the identifier (Template's [_a-z][_a-z0-9]*, any case) at text[pos], 0 if none.
std::size_t identifier_at(std::string_view text, std::size_t pos) {
  if (pos >= text.size() || !is_identifier_start(text[pos])) return 0;
  std::size_t end = pos + 1;
  while (end < text.size() && is_identifier_char(text[end])) ++end;
  return end - pos;
}

}  // namespace

std::string substitute_local_rank(const std::string& arg, int local_rank) {
  const std::string rank = std::to_string(local_rank);
  std::string_view text = arg;
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
      std::string_view name = text.substr(i + 1, n);
      out += name == kName ? std::string_view(rank) : text.substr(i, n + 1);
      i += n + 1;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {  // ${name}
      std::size_t n = identifier_at(text, i + 2);
      if (n > 0 && i + 2 + n < text.size() && text[i + 2 + n] == '}') {
        std::string_view name = text.substr(i + 2, n);
        out += name == kName ? std::string_view(rank) : text.substr(i, n + 3);
        i += n + 3;
        continue;
      }
    }
    out += text[i++];  // any other "$" stays (safe_substitute)
  }
  return out;
}

std::vector<std::string> substitute_local_rank(const std::vector<std::string>& argv,
                                               int local_rank) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const std::string& arg : argv) out.push_back(substitute_local_rank(arg, local_rank));
  return out;
}

}  // namespace ddp::agent
