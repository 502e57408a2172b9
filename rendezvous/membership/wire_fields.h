// Internal to wire.cc / wire_events.cc: the fields messages share, on common/codec.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/codec.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous::membership::fields {

using codec::put;
using codec::put_str;

using codec::message;

// A message's envelope, within `limits`.
struct Envelope : codec::Envelope {
  Envelope(std::string_view input, const WireLimits& limits)
      : codec::Envelope(input, limits.max_message_bytes) {}
};

// The message at the front of `input`, its fields read by read(type, fields, limits) -> T.
template <typename T, typename Read>
Decoded<T> decode(std::string_view input, const WireLimits& limits, Read read) {
  Envelope e(input, limits);
  if (!e.outer.ok()) return e.finish(T{});
  return e.finish(T{read(e.type, e.in, limits)});
}

inline std::string name(codec::Reader& in, const WireLimits& l, const char* what) {
  return in.str(what, l.max_name_bytes);
}
inline std::string text(codec::Reader& in, const WireLimits& l, const char* what) {
  return in.str(what, l.max_text_bytes);
}

void put_failure(std::string& out, const Failure& f);
Failure failure(codec::Reader& in, const WireLimits& limits);

}  // namespace ddp::rendezvous::membership::fields
