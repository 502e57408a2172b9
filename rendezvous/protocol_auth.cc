// Encoding of the job-secret messages (AUTH_HELLO, AUTH_FRAME, CHALLENGE; protocol.h draws
// them). No cryptography here: the MAC is computed by rendezvous/auth.
#include <cstring>

#include "common/codec.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {
namespace {

void put32(std::string& out, const auth::Bytes32& b) {
  out.append(reinterpret_cast<const char*>(b.data()), b.size());
}

void get32(codec::Reader& in, const char* what, auth::Bytes32& b) {
  const std::string_view bytes = in.bytes(what, b.size());
  if (bytes.size() == b.size()) std::memcpy(b.data(), bytes.data(), b.size());
}

}  // namespace

std::string encode_auth_hello(std::string_view run_id) {
  return codec::message(kAuthHelloType, [&](std::string& out) { codec::put_str(out, run_id); });
}

std::string auth_covered(const std::optional<auth::KeyWrap>& wrap, std::string_view request) {
  std::string out;
  out.reserve(1 + 64 + 8 + request.size());
  codec::put<std::uint8_t>(out, wrap ? 1 : 0);
  if (wrap) {
    put32(out, wrap->agent_public);
    put32(out, wrap->wrapped);
  }
  codec::put_str(out, request);
  return out;
}

std::string encode_auth_frame(std::uint64_t counter, const auth::Mac& mac,
                              std::string_view covered) {
  return codec::message(kAuthFrameType, [&](std::string& out) {
    codec::put<std::uint64_t>(out, counter);
    put32(out, mac);
    out.append(covered);
  });
}

std::string encode_challenge(const ChallengeMessage& c) {
  return codec::message(kChallengeType, [&](std::string& out) {
    put32(out, c.challenge);
    codec::put<std::uint8_t>(out, c.job_keyed ? 1 : 0);
    put32(out, c.daemon_public);
  });
}

codec::Decoded<std::string> parse_auth_hello(std::string_view input, const AuthLimits& limits) {
  codec::Envelope e(input, limits.max_request_bytes);
  e.expect(kAuthHelloType);
  std::string run_id = e.in.str("AUTH_HELLO run id", limits.max_run_id_bytes);
  if (e.in.ok() && run_id.empty()) e.in.fail("AUTH_HELLO without a run id");
  return e.finish(std::move(run_id));
}

codec::Decoded<AuthFrame> parse_auth_frame(std::string_view input, const AuthLimits& limits) {
  codec::Envelope e(input, limits.max_request_bytes);
  e.expect(kAuthFrameType);
  AuthFrame f;
  f.counter = e.in.get<std::uint64_t>();
  get32(e.in, "AUTH_FRAME mac", f.mac);
  const std::size_t covered_at = e.in.pos();
  if (e.in.flag("AUTH_FRAME wrap")) {
    auth::KeyWrap wrap;
    get32(e.in, "AUTH_FRAME key wrap", wrap.agent_public);
    get32(e.in, "AUTH_FRAME key wrap", wrap.wrapped);
    f.wrap = wrap;
  }
  const std::size_t request_at = e.in.pos() + sizeof(std::uint64_t);
  const std::string request = e.in.str("AUTH_FRAME request", limits.max_request_bytes);
  if (e.in.ok() && request.empty()) e.in.fail("AUTH_FRAME without a request");
  if (e.in.ok()) {
    // The bytes the MAC covers: from the wrap flag to the request's end.
    const std::string_view fields = input.substr(5);
    f.covered.assign(fields.substr(covered_at, e.in.pos() - covered_at));
    f.request_offset = request_at - covered_at;
  }
  return e.finish(std::move(f));
}

codec::Decoded<ChallengeMessage> parse_challenge(std::string_view input) {
  codec::Envelope e(input, 1024);
  e.expect(kChallengeType);
  ChallengeMessage c;
  get32(e.in, "CHALLENGE", c.challenge);
  c.job_keyed = e.in.flag("CHALLENGE keyed");
  get32(e.in, "CHALLENGE", c.daemon_public);
  return e.finish(c);
}

}  // namespace ddp::rendezvous
