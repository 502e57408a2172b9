// Address networks for --store-allow: "10.0.0.0/8", "fd00::/8", a bare address (one host), or
// "loopback" (127.0.0.0/8 and ::1). Pure: parsing and matching only.
//
// Matching treats an IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack listener reports
// for IPv4 clients) as the IPv4 address, so "10.0.0.0/8" matches those clients too.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::rendezvous {

struct Cidr {
  boost::asio::ip::address network;  // host bits cleared
  unsigned prefix = 0;               // 0..32 for IPv4, 0..128 for IPv6

  bool contains(const boost::asio::ip::address& address) const;
  std::string to_string() const;  // "10.0.0.0/8"
};

// One network. Errors (kInvalidArgument) name the text and the expected form, e.g.
// "--store-allow: '10.0.0.0/33' has a prefix length above 32; use ADDRESS/0..32 for IPv4".
// Host bits set below the prefix ("10.1.2.3/8") are refused too: the user likely meant a host.
Result<Cidr> parse_cidr(std::string_view text);

// A comma-separated list ("loopback,10.0.0.0/8"); empty entries are refused, the list may not
// be empty.
Result<std::vector<Cidr>> parse_cidr_list(std::string_view text);

// True when any network of `networks` contains `address`.
bool any_contains(const std::vector<Cidr>& networks, const boost::asio::ip::address& address);

}  // namespace ddp::rendezvous
