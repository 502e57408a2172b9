// HOST[:PORT] text, parsed in one place for every option and argument that names an address: a
// host name, an IPv4 address, "[IPv6]" or "[IPv6]:PORT", and, where the caller allows it, a bare
// IPv6 address ("fd00::2", which then cannot carry a port). Pure; no name resolution.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp {

// Whether an unbracketed text with several ':' is a bare IPv6 host or an error.
enum class BareIpv6 { kRefused, kHost };

// Views into the text: host without brackets (possibly empty), port the text after ':' if any.
struct HostPortText {
  std::string_view host;
  std::optional<std::string_view> port;
};

// kInvalidArgument (a short phrase; callers prefix their option) for '[' without ']', text after
// ']' that is not ":PORT", several ':' without brackets under kRefused. Parts are not judged.
Result<HostPortText> split_host_port(std::string_view text, BareIpv6 bare = BareIpv6::kRefused);

// A whole decimal number from min_port to 65535; kInvalidArgument otherwise (empty included).
Result<std::uint16_t> parse_port(std::string_view text, std::uint16_t min_port = 1);

struct HostPort {
  std::string host;                   // without brackets
  std::optional<std::uint16_t> port;  // absent when the text has none
};

// split_host_port, refusing an empty host, then parse_port on the port when one is written.
Result<HostPort> parse_host_port(std::string_view text, BareIpv6 bare = BareIpv6::kRefused,
                                 std::uint16_t min_port = 1);

// "host:port", or "[v6]:port" when the host contains ':'.
std::string join_host_port(std::string_view host, std::uint16_t port);

}  // namespace ddp
