#include "launcher/cluster/host_match.h"

#include <cctype>

namespace ddp::launcher::cluster {
namespace {

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool looks_numeric(std::string_view host) {
  for (char c : host) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != ':') return false;
  }
  return true;
}

}  // namespace

bool same_host(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return false;
  if (iequal(a, b)) return true;
  if (looks_numeric(a) || looks_numeric(b) || a.find(':') != a.npos || b.find(':') != b.npos) {
    return false;
  }
  bool a_short = a.find('.') == a.npos;
  bool b_short = b.find('.') == b.npos;
  if (a_short == b_short) return false;  // both short and different, or both qualified
  std::string_view short_name = a_short ? a : b;
  std::string_view qualified = a_short ? b : a;
  return iequal(short_name, qualified.substr(0, qualified.find('.')));
}

bool is_loopback_name(std::string_view host) {
  return iequal(host, "localhost") || iequal(host, "localhost.localdomain") || host == "::1" ||
         host == "[::1]" || (host.rfind("127.", 0) == 0 && looks_numeric(host));
}

std::vector<std::size_t> positions_of(const std::vector<std::string>& hosts,
                                      std::string_view self) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (same_host(hosts[i], self)) out.push_back(i);
  }
  return out;
}

}  // namespace ddp::launcher::cluster
