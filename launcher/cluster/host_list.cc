#include "launcher/cluster/host_list.h"

#include "common/text.h"

namespace ddp::launcher::cluster {
namespace {

struct Range {
  unsigned long long lo = 0;
  unsigned long long hi = 0;
  int width = 0;  // digits of `lo` as written: the zero-padded width of every number
};

class Expander {
 public:
  Expander(std::string_view list, std::string_view what) : list_(list), what_(what) {}

  Result<std::vector<std::string>> run() {
    std::size_t i = 0;
    while (i < list_.size()) {
      if (is_separator(list_[i])) {
        ++i;
        continue;
      }
      std::size_t start = i;
      int depth = 0;
      for (; i < list_.size() && (depth > 0 || !is_separator(list_[i])); ++i) {
        if (list_[i] == '[') {
          if (depth > 0) return error("nested '[' in '" + item(start, i) + "'");
          ++depth;
        } else if (list_[i] == ']') {
          if (depth == 0) return error("']' without '[' in '" + item(start, i + 1) + "'");
          --depth;
        }
      }
      std::string token(list_.substr(start, i - start));
      if (depth > 0) return error("'[' is never closed in '" + token + "'");
      if (Status s = expand_token(token); !s) return s;
    }
    if (hosts_.empty()) return error("it names no hosts");
    return std::move(hosts_);
  }

 private:
  static bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t'; }

  std::string item(std::size_t from, std::size_t to) const {
    return std::string(list_.substr(from, to - from));
  }

  Status error(const std::string& problem) const {
    return invalid_argument(std::string(what_) + "='" + std::string(list_) + "' is malformed: " +
                            problem + "; expected hosts like node[01-04,07],gpu-a");
  }

  // "lo-hi" or "n".
  Result<Range> parse_range(std::string_view text, const std::string& token) const {
    auto dash = text.find('-');
    std::string_view lo_text = text.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : text.substr(dash + 1);
    auto number = [](std::string_view digits) {  // at most 18 digits, no sign
      return digits.size() <= 18 ? parse_number<unsigned long long>(digits) : std::nullopt;
    };
    const auto lo = number(lo_text);
    const auto hi = number(hi_text);
    if (!lo || !hi) {
      std::string problem(1, '\'');
      problem.append(text).append("' in '").append(token).append(
          "' is not a number or a range lo-hi of unsigned numbers");
      return error(problem);
    }
    const Range range{*lo, *hi, static_cast<int>(lo_text.size())};
    if (range.hi < range.lo) {
      return error("range '" + std::string(text) + "' in '" + token + "' ends below its start");
    }
    if (range.hi - range.lo >= kMaxHosts) {
      return error("range '" + std::string(text) + "' has more than " + std::to_string(kMaxHosts) +
                   " hosts");
    }
    return range;
  }

  Result<std::vector<Range>> parse_ranges(std::string_view inner, const std::string& token) const {
    if (inner.empty()) return error("empty brackets in '" + token + "'");
    std::vector<Range> ranges;
    for (std::string_view item : split(inner, ',')) {
      auto range = parse_range(item, token);
      if (!range) return range.status();
      ranges.push_back(*range);
    }
    return ranges;
  }

  static std::string padded(unsigned long long n, int width) {
    std::string digits = std::to_string(n);
    if (static_cast<int>(digits.size()) < width) {
      digits.insert(0, static_cast<std::size_t>(width) - digits.size(), '0');
    }
    return digits;
  }

  Status push(std::string host) {
    if (hosts_.size() >= kMaxHosts) {
      return error("it expands to more than " + std::to_string(kMaxHosts) + " hosts");
    }
    hosts_.push_back(std::move(host));
    return Status::ok();
  }

  Status expand_token(const std::string& token) {
    auto open = token.rfind('[');
    if (open == std::string::npos) return push(token);
    auto close = token.find(']', open);
    if (close + 1 != token.size()) {
      return error("text after ']' in '" + token + "' (a range must end the name)");
    }
    auto ranges = parse_ranges(std::string_view(token).substr(open + 1, close - open - 1), token);
    if (!ranges) return ranges.status();
    return push_with_prefix(token.substr(0, open), *ranges, token);
  }

  // Slurm's order: the prefix's last bracket group is the outer loop, earlier groups are
  // expanded by recursion inside it, and the name's final group varies fastest.
  Status push_with_prefix(const std::string& prefix, const std::vector<Range>& last,
                          const std::string& token) {
    auto open = prefix.rfind('[');
    if (open == std::string::npos) {
      for (const Range& r : last) {
        for (unsigned long long n = r.lo; n <= r.hi; ++n) {
          if (Status s = push(prefix + padded(n, r.width)); !s) return s;
        }
      }
      return Status::ok();
    }
    auto close = prefix.find(']', open);  // present: brackets were balanced
    auto groups = parse_ranges(std::string_view(prefix).substr(open + 1, close - open - 1), token);
    if (!groups) return groups.status();
    std::string head = prefix.substr(0, open);
    std::string tail = prefix.substr(close + 1);
    for (const Range& g : *groups) {
      for (unsigned long long n = g.lo; n <= g.hi; ++n) {
        if (Status s = push_with_prefix(head + padded(n, g.width) + tail, last, token); !s) {
          return s;
        }
      }
    }
    return Status::ok();
  }

  std::string_view list_;
  std::string_view what_;
  std::vector<std::string> hosts_;
};

}  // namespace

Result<std::vector<std::string>> expand_host_list(std::string_view list, std::string_view what) {
  return Expander(list, what).run();
}

}  // namespace ddp::launcher::cluster
