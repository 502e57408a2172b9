#include "rendezvous/framer.h"

namespace ddp::rendezvous {

void put_store_reply(std::string& out, std::string_view reply) {
  put_u8(out, kStoreReplyType);
  put_bytes(out, reply);
}

Frame Framer::next(std::string_view input) {
  Frame frame;
  if (input.empty()) {
    frame.needed = 1;
    return frame;
  }
  const auto type = static_cast<std::uint8_t>(input.front());
  if (!rendezvous::membership::is_native_request_type(type)) return next_store(input);
  if (type == kRemovedAuthOpenType) {
    frame.kind = FrameKind::kRefused;
    frame.error =
        "AUTH_OPEN is no longer served: agents answer one challenge per connection "
        "(AUTH_HELLO); this agent's ddprun is older than the daemon, upgrade it";
    return frame;
  }
  if (type == kAuthHelloType || type == kAuthFrameType) return next_auth(type, input);
  auto decoded = rendezvous::membership::decode_request(input, wire_);
  switch (decoded.state) {
    case rendezvous::membership::DecodeState::kIncomplete:
      frame.needed = decoded.needed;
      return frame;
    case rendezvous::membership::DecodeState::kError:
      frame.kind = FrameKind::kError;
      frame.error = "malformed rendezvous request: " + decoded.error;
      return frame;
    case rendezvous::membership::DecodeState::kComplete:
      break;
  }
  native_mode_ = true;
  frame.kind = FrameKind::kNative;
  frame.consumed = decoded.consumed;
  frame.native = std::move(decoded.message);
  return frame;
}

Frame Framer::next_auth(std::uint8_t type, std::string_view input) {
  Frame frame;
  const AuthLimits limits{wire_.max_name_bytes, wire_.max_message_bytes};
  if (type == kAuthHelloType) {
    auto hello = parse_auth_hello(input, limits);
    if (hello.state == ParseState::kIncomplete) {
      frame.needed = hello.needed;
    } else if (hello.state == ParseState::kError) {
      frame.kind = FrameKind::kError;
      frame.error = "malformed rendezvous request: " + hello.error;
    } else {
      native_mode_ = true;
      frame.kind = FrameKind::kAuthHello;
      frame.consumed = hello.consumed;
      frame.hello_run_id = std::move(hello.value);
    }
    return frame;
  }
  auto parsed = parse_auth_frame(input, limits);
  if (parsed.state == ParseState::kIncomplete) {
    frame.needed = parsed.needed;
    return frame;
  }
  if (parsed.state == ParseState::kError) {
    frame.kind = FrameKind::kError;
    frame.error = "malformed rendezvous request: " + parsed.error;
    return frame;
  }
  // The inner request must be exactly one plain native request (no nesting).
  const std::string_view inner = parsed.value.request();
  const auto inner_type = static_cast<std::uint8_t>(inner.front());
  auto decoded = inner_type == kAuthHelloType || inner_type == kAuthFrameType
                     ? rendezvous::membership::Decoded<rendezvous::membership::Request>{}
                     : rendezvous::membership::decode_request(inner, wire_);
  if (decoded.state != rendezvous::membership::DecodeState::kComplete ||
      decoded.consumed != inner.size()) {
    frame.kind = FrameKind::kError;
    frame.error =
        "malformed rendezvous request: the AUTH_FRAME does not hold exactly one "
        "native request" +
        (decoded.error.empty() ? std::string() : " (" + decoded.error + ")");
    return frame;
  }
  native_mode_ = true;
  frame.kind = FrameKind::kAuthFrame;
  frame.consumed = parsed.consumed;
  frame.native = std::move(decoded.message);
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
  ParseResult parsed = parse_request(*dialect_, input, limits_);
  if (parsed.state == ParseState::kIncomplete) {
    frame.needed = parsed.needed;
    return frame;
  }
  if (parsed.state == ParseState::kError) {
    frame.kind = FrameKind::kError;
    frame.error = "malformed request: " + parsed.error;
    return frame;
  }
  if (*dialect_ == Dialect::kModern && !validated_) {
    if (parsed.request.op != Op::kValidate) {
      frame.kind = FrameKind::kError;
      frame.error = "the first query of a PyTorch >= 2.2 connection must be VALIDATE, got " +
                    std::string(op_name(parsed.request.op));
      return frame;
    }
    validated_ = true;
  }
  frame.kind = FrameKind::kStore;
  frame.consumed = parsed.consumed;
  frame.store = std::move(parsed.request);
  return frame;
}

}  // namespace ddp::rendezvous
