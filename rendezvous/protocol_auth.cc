// Encoding of the job-secret messages (AUTH_HELLO, AUTH_FRAME, CHALLENGE; protocol.h draws
// them). No cryptography here: the MAC is computed by rendezvous/auth.
#include <cstring>

#include "common/byte_codec.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {
namespace {

void put32(std::string& out, const auth::Bytes32& b) {
  out.append(reinterpret_cast<const char*>(b.data()), b.size());
}

bool get32(std::string_view in, std::size_t& pos, auth::Bytes32& b) {
  if (pos > in.size() || in.size() - pos < b.size()) return false;
  std::memcpy(b.data(), in.data() + pos, b.size());
  pos += b.size();
  return true;
}

template <typename T>
Parsed<T> need(std::size_t n) {
  Parsed<T> p;
  p.needed = n;
  return p;
}

template <typename T>
Parsed<T> error(std::string message) {
  Parsed<T> p;
  p.state = ParseState::kError;
  p.error = std::move(message);
  return p;
}

}  // namespace

std::string encode_auth_hello(std::string_view run_id) {
  std::string out;
  put_u8(out, kAuthHelloType);
  put_bytes(out, run_id);
  return out;
}

std::string auth_covered(const std::optional<auth::KeyWrap>& wrap, std::string_view request) {
  std::string out;
  out.reserve(1 + 64 + 8 + request.size());
  put_u8(out, wrap ? 1 : 0);
  if (wrap) {
    put32(out, wrap->agent_public);
    put32(out, wrap->wrapped);
  }
  put_bytes(out, request);
  return out;
}

std::string encode_auth_frame(std::uint64_t counter, const auth::Mac& mac,
                              std::string_view covered) {
  std::string out;
  out.reserve(1 + 8 + 32 + covered.size());
  put_u8(out, kAuthFrameType);
  put_u64(out, counter);
  put32(out, mac);
  out.append(covered);
  return out;
}

std::string encode_challenge(const ChallengeMessage& c) {
  std::string out;
  put_u8(out, kChallengeType);
  put32(out, c.challenge);
  put_u8(out, c.job_keyed ? 1 : 0);
  put32(out, c.daemon_public);
  return out;
}

Parsed<std::string> parse_auth_hello(std::string_view in, const AuthLimits& limits) {
  std::size_t pos = 1;
  std::uint64_t n = 0;
  if (!get_u64(in, pos, n)) return need<std::string>(pos + 8);
  if (n == 0 || n > limits.max_run_id_bytes) {
    return error<std::string>("AUTH_HELLO run id of " + std::to_string(n) + " bytes; expected 1.." +
                              std::to_string(limits.max_run_id_bytes));
  }
  if (in.size() - pos < n) return need<std::string>(pos + static_cast<std::size_t>(n));
  Parsed<std::string> p;
  p.state = ParseState::kComplete;
  p.value.assign(in.substr(pos, static_cast<std::size_t>(n)));
  p.consumed = pos + static_cast<std::size_t>(n);
  return p;
}

Parsed<AuthFrame> parse_auth_frame(std::string_view in, const AuthLimits& limits) {
  AuthFrame f;
  std::size_t pos = 1;
  if (!get_u64(in, pos, f.counter)) return need<AuthFrame>(1 + 8);
  if (!get32(in, pos, f.mac)) return need<AuthFrame>(pos + 32);
  const std::size_t covered_at = pos;
  std::uint8_t has_wrap = 0;
  if (!get_u8(in, pos, has_wrap)) return need<AuthFrame>(pos + 1);
  if (has_wrap > 1) {
    return error<AuthFrame>("AUTH_FRAME wrap flag is " + std::to_string(has_wrap) +
                            "; expected 0 or 1");
  }
  if (has_wrap == 1) {
    auth::KeyWrap wrap;
    if (!get32(in, pos, wrap.agent_public)) return need<AuthFrame>(pos + 32);
    if (!get32(in, pos, wrap.wrapped)) return need<AuthFrame>(pos + 32);
    f.wrap = wrap;
  }
  std::uint64_t n = 0;
  if (!get_u64(in, pos, n)) return need<AuthFrame>(pos + 8);
  if (n == 0 || n > limits.max_request_bytes) {
    return error<AuthFrame>("AUTH_FRAME request of " + std::to_string(n) + " bytes; expected 1.." +
                            std::to_string(limits.max_request_bytes));
  }
  if (in.size() - pos < n) return need<AuthFrame>(pos + static_cast<std::size_t>(n));
  const std::size_t end = pos + static_cast<std::size_t>(n);
  f.request_offset = pos - covered_at;
  f.covered.assign(in.substr(covered_at, end - covered_at));
  Parsed<AuthFrame> p;
  p.state = ParseState::kComplete;
  p.value = std::move(f);
  p.consumed = end;
  return p;
}

Parsed<ChallengeMessage> parse_challenge(std::string_view in) {
  ChallengeMessage c;
  std::size_t pos = 1;
  std::uint8_t keyed = 0;
  if (!get32(in, pos, c.challenge)) return need<ChallengeMessage>(1 + 32);
  if (!get_u8(in, pos, keyed)) return need<ChallengeMessage>(pos + 1);
  if (keyed > 1) {
    return error<ChallengeMessage>("CHALLENGE keyed flag is " + std::to_string(keyed) +
                                   "; expected 0 or 1");
  }
  if (!get32(in, pos, c.daemon_public)) return need<ChallengeMessage>(pos + 32);
  c.job_keyed = keyed == 1;
  Parsed<ChallengeMessage> p;
  p.state = ParseState::kComplete;
  p.value = c;
  p.consumed = pos;
  return p;
}

}  // namespace ddp::rendezvous
