// --store-allow: the networks whose peers may use the TCPStore operations that touch keys
// (docs/security.md). Entries are "10.0.0.0/8", "fd00::/8", a bare address (one host) or
// "loopback" (127.0.0.0/8 and ::1), comma-separated; Asio's network_v4/network_v6 parse and hold
// them. Pure: parsing and matching only.
//
// Matching treats an IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack listener reports
// for IPv4 clients) as the IPv4 address, so "10.0.0.0/8" matches those clients too.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::rendezvous {

struct StoreAllow {
  std::vector<boost::asio::ip::network_v4> v4;  // canonical: host bits clear
  std::vector<boost::asio::ip::network_v6> v6;

  // No list: TCPStore operations from anywhere.
  bool empty() const { return v4.empty() && v6.empty(); }
  bool contains(const boost::asio::ip::address& address) const;
  std::string to_string() const;  // "127.0.0.0/8,::1/128": IPv4 networks first
};

// A comma-separated list. Errors (kInvalidArgument, one line starting "--store-allow: " naming
// the entry and the expected form): an empty list or entry, an entry that is no address or
// network (a prefix above 32 for IPv4 or 128 for IPv6 among them), an IPv4-mapped IPv6 network
// (write it as IPv4), host bits set below the prefix ("10.1.2.3/8": the user likely meant a
// host).
Result<StoreAllow> parse_store_allow(std::string_view text);

}  // namespace ddp::rendezvous
