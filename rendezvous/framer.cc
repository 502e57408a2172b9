#include "rendezvous/framer.h"

namespace ddp::rendezvous {

void put_store_reply(std::string& out, std::string_view reply) {
  codec::put<std::uint8_t>(out, kStoreReplyType);
  codec::put_str(out, reply);
}

namespace {

// `frame` from a decode's outcome: what it needs while incomplete, its error, or `kind` and the
// bytes it used; true when complete.
template <typename T>
bool settle(Frame& frame, const codec::Decoded<T>& d, FrameKind kind) {
  switch (d.state) {
    case codec::DecodeState::kIncomplete:
      frame.needed = d.needed;
      return false;
    case codec::DecodeState::kError:
      frame.kind = FrameKind::kError;
      frame.error = "malformed rendezvous request: " + d.error;
      return false;
    case codec::DecodeState::kComplete:
      frame.kind = kind;
      frame.consumed = d.consumed;
      return true;
  }
  return false;
}

}  // namespace

Frame Framer::next(std::string_view input) {
  Frame frame;
  if (input.empty()) {
    frame.needed = 1;
    return frame;
  }
  const auto type = static_cast<std::uint8_t>(input.front());
  if (!rendezvous::membership::is_native_request_type(type)) return next_store(input);
  if (!agent_) return next_hello(type, input);
  if (type == rendezvous::membership::kHelloType) {
    frame.kind = FrameKind::kError;
    frame.error = "malformed rendezvous request: a second HELLO";
    return frame;
  }
  if (type == kAuthHelloType || type == kAuthFrameType) return next_auth(type, input);
  auto decoded = rendezvous::membership::decode_request(input, wire_);
  if (!settle(frame, decoded, FrameKind::kNative)) return frame;
  native_mode_ = true;
  frame.native = std::move(decoded.value);
  return frame;
}

Frame Framer::next_hello(std::uint8_t type, std::string_view input) {
  Frame frame;
  if (type != rendezvous::membership::kHelloType) {
    // A protocol-1 agent (ddprun 0.1) opens with JOIN or AUTH_HELLO, in a layout this daemon
    // does not read: it is told why, in the ERROR layout it reads.
    frame.kind = FrameKind::kRefused;
    frame.error = rendezvous::membership::skew_message(std::nullopt,
                                                       rendezvous::membership::this_version(), "");
    return frame;
  }
  auto hello = rendezvous::membership::decode_hello(input, wire_);
  if (settle(frame, hello, FrameKind::kHello)) {
    native_mode_ = true;
    agent_ = std::move(hello.value);
  }
  return frame;
}

Frame Framer::next_auth(std::uint8_t type, std::string_view input) {
  Frame frame;
  const AuthLimits limits{wire_.max_name_bytes, wire_.max_message_bytes};
  if (type == kAuthHelloType) {
    auto hello = parse_auth_hello(input, limits);
    if (settle(frame, hello, FrameKind::kAuthHello)) {
      native_mode_ = true;
      frame.hello_run_id = std::move(hello.value);
    }
    return frame;
  }
  auto parsed = parse_auth_frame(input, limits);
  if (!settle(frame, parsed, FrameKind::kAuthFrame)) return frame;
  // The inner request must be exactly one plain native request (no nesting).
  const std::string_view inner = parsed.value.request();
  const auto inner_type = static_cast<std::uint8_t>(inner.front());
  auto decoded = inner_type == kAuthHelloType || inner_type == kAuthFrameType ||
                         inner_type == rendezvous::membership::kHelloType
                     ? codec::Decoded<rendezvous::membership::Request>{}
                     : rendezvous::membership::decode_request(inner, wire_);
  if (decoded.state != codec::DecodeState::kComplete || decoded.consumed != inner.size()) {
    frame.kind = FrameKind::kError;
    frame.error =
        "malformed rendezvous request: the AUTH_FRAME does not hold exactly one "
        "native request" +
        (decoded.error.empty() ? std::string() : " (" + decoded.error + ")");
    return frame;
  }
  native_mode_ = true;
  frame.native = std::move(decoded.value);
  frame.auth = std::move(parsed.value);
  return frame;
}

Frame Framer::next_store(std::string_view input) {
  Frame frame;
  if (!dialect_) {
    if (native_mode_) {
      // A native client speaks the modern numbering and may skip VALIDATE.
      dialect_ = Dialect::kModern;
      validated_ = true;
    } else {
      switch (detect_dialect(input)) {
        case DialectGuess::kNeedMore:
          frame.needed = input.size() + 1;
          return frame;
        case DialectGuess::kModern:
          dialect_ = Dialect::kModern;
          break;
        case DialectGuess::kLegacy113:
          dialect_ = Dialect::kLegacy113;
          break;
      }
    }
  }
  auto parsed = parse_request(*dialect_, input, limits_);
  if (parsed.state == codec::DecodeState::kIncomplete) {
    frame.needed = parsed.needed;
    return frame;
  }
  if (parsed.state == codec::DecodeState::kError) {
    frame.kind = FrameKind::kError;
    frame.error = "malformed request: " + parsed.error;
    return frame;
  }
  if (*dialect_ == Dialect::kModern && !validated_) {
    if (parsed.value.op != Op::kValidate) {
      frame.kind = FrameKind::kError;
      frame.error = "the first query of a PyTorch >= 2.2 connection must be VALIDATE, got " +
                    std::string(op_name(parsed.value.op));
      return frame;
    }
    validated_ = true;
  }
  frame.kind = FrameKind::kStore;
  frame.consumed = parsed.consumed;
  frame.store = std::move(parsed.value);
  return frame;
}

}  // namespace ddp::rendezvous
