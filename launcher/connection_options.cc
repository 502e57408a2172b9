// steps::resolve_connections: the connection limits of the servers this node hosts, with the
// flags and meaning of ddp-rendezvous (rendezvous/connection_limits.h).
#include "launcher/option_steps.h"
#include "launcher/option_values.h"

namespace ddp::launcher::steps {

Status resolve_connections(const RawOptions& raw, Invocation& out) {
  rendezvous::ConnectionFlags flags;
  if (Status s = take_integer(raw.at("max_connections"), 0, 1LL << 30, flags.max_connections); !s) {
    return s;
  }

  const RawValue& per_peer = raw.at("max_connections_per_peer");
  if (Status s = take_integer(per_peer, 0, 1LL << 30, flags.max_per_peer); !s) return s;

  const RawValue& first = raw.at("first_request_timeout");
  auto first_timeout = parse_seconds(first.origin, first.text);
  if (!first_timeout) return from(first, first_timeout.status());
  flags.first_request_timeout_s = static_cast<double>(first_timeout->count()) / 1000.0;

  const RawValue& allow = raw.at("store_allow");
  if (allow.given && allow.text.empty()) {
    return invalid_argument("--store-allow is empty; give CIDR[,CIDR...] or loopback, or drop it");
  }
  flags.store_allow = allow.text;

  auto limits = rendezvous::connection_limits_from_flags(flags);
  if (!limits) return limits.status();  // names the flag and the fix
  out.config.connection_limits = std::move(limits).value();
  return Status::ok();
}

}  // namespace ddp::launcher::steps
