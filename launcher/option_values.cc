#include "launcher/option_values.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <csignal>
#include <limits>
#include <optional>

#include "agent/membership/rdzv_settings.h"
#include "common/host_port.h"
#include "common/text.h"

namespace ddp::launcher {
namespace {

std::string quoted(std::string_view text) {
  std::string out(1, '\'');
  out.append(text);
  out.push_back('\'');
  return out;
}

Status bad(std::string_view option, std::string_view text, std::string_view expected) {
  return invalid_argument(std::string(option) + ": bad value " + quoted(text) + "; expected " +
                          std::string(expected));
}

// parse_number, refusing "inf" and "nan".
std::optional<double> finite_number(std::string_view text) {
  const auto value = parse_number<double>(text);
  return value && std::isfinite(*value) ? value : std::nullopt;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<long long> parse_integer(std::string_view option, std::string_view text, long long min,
                                long long max) {
  std::string range = max == std::numeric_limits<long long>::max()
                          ? "an integer >= " + std::to_string(min)
                          : "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  const auto value = parse_number<long long>(text);
  if (!value || *value < min || *value > max) return bad(option, text, range);
  return *value;
}

Result<std::uint32_t> parse_factor(std::string_view option, std::string_view text) {
  const auto factor = finite_number(text);
  if (!factor || (*factor != 0 && (*factor < 1 || *factor > 1000))) {
    return bad(option, text, "0 (off) or a factor from 1 to 1000 (e.g. 2 or 1.5)");
  }
  return static_cast<std::uint32_t>(std::lround(*factor * 1000));
}

Result<std::chrono::milliseconds> parse_seconds(std::string_view option, std::string_view text) {
  const auto seconds = finite_number(text);
  // One year is far beyond any sensible timeout and keeps the conversion exact.
  if (!seconds || *seconds < 0 || *seconds > 365.0 * 24 * 3600) {
    return bad(option, text, "a number of seconds >= 0 (e.g. 30 or 0.5)");
  }
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(*seconds * 1000.0)));
}

Result<std::chrono::milliseconds> parse_duration(std::string_view option, std::string_view text) {
  constexpr std::string_view kExpected = "a positive duration such as 3s, 500ms, 2m or 1h";
  struct Unit {
    std::string_view suffix;
    double ms;
  };
  double scale = 1000.0;  // a bare number is seconds
  std::string_view number = text;
  for (Unit u : {Unit{"ms", 1.0}, Unit{"s", 1000.0}, Unit{"m", 60000.0}, Unit{"h", 3600000.0}}) {
    if (text.ends_with(u.suffix)) {
      number = text.substr(0, text.size() - u.suffix.size());
      scale = u.ms;
      break;
    }
  }
  const auto value = finite_number(number);
  if (!value || !(*value > 0) || *value * scale > 365.0 * 24 * 3600 * 1000) {
    return bad(option, text, kExpected);
  }
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(*value * scale)));
}

Result<std::pair<int, int>> parse_nnodes(std::string_view text) {
  constexpr std::string_view kExpected = "N or MIN:MAX with 1 <= MIN <= MAX (e.g. 2 or 1:4)";
  auto parts = split(text, ':');
  if (parts.size() > 2) return bad("--nnodes", text, kExpected);
  constexpr int kMaxNodes = 1 << 20;
  const auto lo = parse_number<int>(parts[0]);
  const auto hi = parts.size() == 2 ? parse_number<int>(parts[1]) : lo;
  if (!lo || !hi || *lo < 1 || *lo > kMaxNodes || *hi < 1 || *hi > kMaxNodes) {
    return bad("--nnodes", text, kExpected);
  }
  if (*lo > *hi) {
    return invalid_argument("--nnodes " + std::string(text) + ": MIN (" + std::to_string(*lo) +
                            ") is larger than MAX (" + std::to_string(*hi) + "); write it as " +
                            std::to_string(*hi) + ":" + std::to_string(*lo));
  }
  return std::pair<int, int>{*lo, *hi};
}

Result<agent::StreamsSpec> parse_streams(std::string_view option, std::string_view text) {
  constexpr std::string_view kExpected =
      "0 (none), 1 (stdout), 2 (stderr), 3 (both), or per local rank like 0:1,1:2";
  auto stream_value = [](std::string_view v, agent::Streams& out) {
    if (v.size() != 1 || v[0] < '0' || v[0] > '3') return false;
    out = static_cast<agent::Streams>(v[0] - '0');
    return true;
  };
  agent::StreamsSpec spec;
  if (text.find(':') == std::string_view::npos) {
    if (!stream_value(text, spec.all)) return bad(option, text, kExpected);
    return spec;
  }
  for (std::string_view item : split(text, ',')) {
    auto kv = split(item, ':');
    const auto rank = parse_number<int>(kv[0]);
    agent::Streams streams{};
    if (kv.size() != 2 || !rank || *rank < 0 || *rank > 1 << 20 || !stream_value(kv[1], streams)) {
      return bad(option, text, kExpected);
    }
    if (!spec.per_rank.emplace(*rank, streams).second) {
      return invalid_argument(std::string(option) + " " + std::string(text) + ": local rank " +
                              std::to_string(*rank) + " is given twice; list each rank once");
    }
  }
  return spec;
}

Result<std::vector<int>> parse_id_list(std::string_view option, std::string_view text,
                                       std::string_view what) {
  std::string expected = "comma-separated " + std::string(what) + "s, each >= 0 (e.g. 1,6,3)";
  if (text.empty()) return bad(option, text, expected);
  std::vector<int> ids;
  for (std::string_view item : split(text, ',')) {
    const auto id = parse_number<long long>(item);
    if (!id) {
      return invalid_argument(std::string(option) + " " + std::string(text) + ": " + quoted(item) +
                              " is not a " + std::string(what) + "; expected " + expected);
    }
    if (*id < 0 || *id > 1 << 20) {
      return invalid_argument(std::string(option) + " " + std::string(text) + ": " +
                              std::string(what) + " " + std::string(item) + " is " +
                              (*id < 0 ? "negative" : "too large") + "; " + std::string(what) +
                              "s are >= 0");
    }
    if (std::find(ids.begin(), ids.end(), *id) != ids.end()) {
      return invalid_argument(std::string(option) + " " + std::string(text) + ": " +
                              std::string(what) + " " + std::string(item) +
                              " is listed twice; list each once");
    }
    ids.push_back(static_cast<int>(*id));
  }
  return ids;
}

Result<std::vector<int>> parse_signals(std::string_view text) {
  struct Named {
    std::string_view name;
    int number;
  };
  static constexpr std::array<Named, 6> kSignals{{{"HUP", SIGHUP},
                                                  {"INT", SIGINT},
                                                  {"QUIT", SIGQUIT},
                                                  {"TERM", SIGTERM},
                                                  {"USR1", SIGUSR1},
                                                  {"USR2", SIGUSR2}}};
  std::vector<int> signals;
  for (std::string_view item : split(text, ',')) {
    std::string name = upper(item);
    if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
    auto it = std::find_if(kSignals.begin(), kSignals.end(),
                           [&](const Named& s) { return s.name == name; });
    if (it == kSignals.end()) {
      return invalid_argument("--signals-to-handle: unknown or unforwardable signal " +
                              quoted(item) +
                              "; use names from SIGHUP,SIGINT,SIGQUIT,SIGTERM,SIGUSR1,SIGUSR2");
    }
    if (std::find(signals.begin(), signals.end(), it->number) == signals.end()) {
      signals.push_back(it->number);
    }
  }
  return signals;
}

Result<std::map<std::string, std::string>> parse_rdzv_conf(std::string_view text) {
  std::map<std::string, std::string> conf;
  if (text.empty()) return conf;
  for (std::string_view item : split(text, ',')) {
    auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return invalid_argument("--rdzv-conf: bad item " + quoted(item) +
                              "; expected key=value pairs separated by commas "
                              "(e.g. join_timeout=900,is_host=true)");
    }
    std::string key(item.substr(0, eq));
    std::string value(item.substr(eq + 1));
    bool is_duration = agent::is_rdzv_key(key) && key != agent::rdzv_key::kIsHost &&
                       key != agent::rdzv_key::kSecretFile;
    const auto number = finite_number(value);
    if (is_duration && (!number || *number < 0)) {
      return invalid_argument("--rdzv-conf: " + key + "=" + value + " is not a number >= 0; " +
                              "give seconds (or a count for keep_alive_max_attempt)");
    }
    if (key == agent::rdzv_key::kIsHost) {
      std::string v = upper(value);
      if (v != "1" && v != "0" && v != "TRUE" && v != "FALSE") {
        return invalid_argument("--rdzv-conf: is_host=" + value + " is not a boolean; use " +
                                "true, false, 1 or 0");
      }
    }
    conf[key] = value;
  }
  return conf;
}

Status check_endpoint(std::string_view option, std::string_view text) {
  constexpr std::string_view kExpected = "host[:port] with a port from 0 to 65535";
  auto parsed = parse_host_port(text, BareIpv6::kRefused, 0);
  if (!parsed) {
    return bad(option, text, std::string(kExpected) + " (" + parsed.status().message() + ")");
  }
  return Status::ok();
}

}  // namespace ddp::launcher
