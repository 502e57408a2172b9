#include "rendezvous/protocol.h"

#include <array>
#include <cstring>

#include "common/codec.h"

namespace ddp::rendezvous {
namespace {

// 1.13's numbering; PyTorch 2.0 and 2.1 kept it and appended APPEND .. CANCEL_WAIT (9 .. 12),
// which no 1.13 client sends, so one table serves all three.
constexpr std::array<Op, 13> kLegacyOps = {
    Op::kSet,      Op::kCompareSet, Op::kGet,       Op::kAdd,       Op::kCheck,
    Op::kWait,     Op::kGetNumKeys, Op::kWatchKey,  Op::kDeleteKey, Op::kAppend,
    Op::kMultiGet, Op::kMultiSet,   Op::kCancelWait};
constexpr std::array<Op, 19> kModernOps = {
    Op::kValidate, Op::kSet,      Op::kCompareSet, Op::kGet,       Op::kAdd,
    Op::kCheck,    Op::kWait,     Op::kGetNumKeys, Op::kDeleteKey, Op::kAppend,
    Op::kMultiGet, Op::kMultiSet, Op::kCancelWait, Op::kPing,      Op::kQueuePush,
    Op::kQueuePop, Op::kQueueLen, Op::kList,       Op::kBarrier};

constexpr char kModernPreamble[5] = {'\x00', '\xCE', '\xF7', '\x85', '\x3C'};

// A count of keys (CHECK, WAIT, MULTI_GET, MULTI_SET), checked before anything is reserved.
std::size_t count(codec::Reader& r, const Limits& limits) {
  return r.count("keys in one query", limits.max_keys_per_query);
}
std::string key(codec::Reader& r, const Limits& limits) {
  return r.str("key", limits.max_key_bytes);
}
std::string payload(codec::Reader& r, const Limits& limits) {
  return r.str("value", limits.max_value_bytes);
}

void read_keys(codec::Reader& r, const Limits& l, std::vector<std::string>& keys) {
  const std::size_t n = count(r, l);
  for (std::size_t i = 0; i < n && r.ok(); ++i) keys.push_back(key(r, l));
}

void read_args(codec::Reader& r, const Limits& l, Request& req) {
  switch (req.op) {
    case Op::kValidate:
      req.word = r.get<std::uint32_t>();
      if (r.ok() && req.word != kValidateMagic) r.fail("VALIDATE carries a wrong magic number");
      break;
    case Op::kPing:
      req.word = r.get<std::uint32_t>();
      break;
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      req.key = key(r, l);
      req.value = payload(r, l);
      break;
    case Op::kCompareSet:
      req.key = key(r, l);
      req.value = payload(r, l);
      req.desired = payload(r, l);
      break;
    case Op::kGet:
    case Op::kWatchKey:
    case Op::kDeleteKey:
    case Op::kQueuePop:
    case Op::kQueueLen:
      req.key = key(r, l);
      break;
    case Op::kAdd:
    case Op::kBarrier:
      req.key = key(r, l);
      req.delta = r.get<std::int64_t>();
      break;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      read_keys(r, l, req.keys);
      break;
    case Op::kMultiSet: {
      const std::size_t n = count(r, l);
      for (std::size_t i = 0; i < n && r.ok(); ++i) {
        req.keys.push_back(key(r, l));
        req.values.push_back(payload(r, l));
      }
      break;
    }
    case Op::kGetNumKeys:
    case Op::kCancelWait:
    case Op::kList:
      break;
  }
}

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kValidate:
      return "VALIDATE";
    case Op::kSet:
      return "SET";
    case Op::kCompareSet:
      return "COMPARE_SET";
    case Op::kGet:
      return "GET";
    case Op::kAdd:
      return "ADD";
    case Op::kCheck:
      return "CHECK";
    case Op::kWait:
      return "WAIT";
    case Op::kGetNumKeys:
      return "GETNUMKEYS";
    case Op::kWatchKey:
      return "WATCH_KEY";
    case Op::kDeleteKey:
      return "DELETE_KEY";
    case Op::kAppend:
      return "APPEND";
    case Op::kMultiGet:
      return "MULTI_GET";
    case Op::kMultiSet:
      return "MULTI_SET";
    case Op::kCancelWait:
      return "CANCEL_WAIT";
    case Op::kPing:
      return "PING";
    case Op::kQueuePush:
      return "QUEUE_PUSH";
    case Op::kQueuePop:
      return "QUEUE_POP";
    case Op::kQueueLen:
      return "QUEUE_LEN";
    case Op::kList:
      return "LIST";
    case Op::kBarrier:
      return "BARRIER";
  }
  return "?";
}

std::optional<std::uint8_t> wire_code(Dialect dialect, Op op) {
  const Op* begin = dialect == Dialect::kModern ? kModernOps.data() : kLegacyOps.data();
  const std::size_t n = dialect == Dialect::kModern ? kModernOps.size() : kLegacyOps.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (begin[i] == op) return static_cast<std::uint8_t>(i);
  }
  return std::nullopt;
}

std::optional<Op> op_from_wire(Dialect dialect, std::uint8_t code) {
  if (dialect == Dialect::kModern) {
    if (code < kModernOps.size()) return kModernOps[code];
  } else if (code < kLegacyOps.size()) {
    return kLegacyOps[code];
  }
  return std::nullopt;
}

codec::Decoded<Request> parse_request(Dialect dialect, std::string_view input,
                                      const Limits& limits) {
  codec::Reader reader(input);
  const auto code = reader.get<std::uint8_t>();
  const auto op = op_from_wire(dialect, code);
  Request request;
  if (reader.ok() && !op) {
    reader.fail("unknown query type " + std::to_string(code) + " for the " +
                (dialect == Dialect::kModern ? "PyTorch >= 2.2" : "PyTorch 1.13") + " numbering" +
                (code >= kFirstNativeOp ? " (native rendezvous range: not a TCPStore query)" : ""));
  } else if (reader.ok()) {
    request.op = *op;
    read_args(reader, limits, request);
  }
  auto d = reader.finish(std::move(request));
  if (d.state == codec::DecodeState::kIncomplete && d.needed > limits.max_request_bytes) {
    d.state = codec::DecodeState::kError;
    d.error = "request of at least " + std::to_string(d.needed) + " bytes exceeds the limit of " +
              std::to_string(limits.max_request_bytes) + " bytes";
  }
  if (d.state == codec::DecodeState::kError && op)
    d.error = std::string(op_name(*op)) + ": " + d.error;
  return d;
}

DialectGuess detect_dialect(std::string_view first_bytes) {
  const std::size_t n = std::min(first_bytes.size(), sizeof(kModernPreamble));
  if (std::memcmp(first_bytes.data(), kModernPreamble, n) != 0) return DialectGuess::kLegacy113;
  return n < sizeof(kModernPreamble) ? DialectGuess::kNeedMore : DialectGuess::kModern;
}

std::optional<std::string> encode_request(Dialect dialect, const Request& req) {
  const auto code = wire_code(dialect, req.op);
  if (!code) return std::nullopt;
  std::string out;
  codec::put<std::uint8_t>(out, *code);
  switch (req.op) {
    case Op::kValidate:
    case Op::kPing:
      codec::put<std::uint32_t>(out, req.word);
      break;
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      codec::put_str(out, req.key);
      codec::put_str(out, req.value);
      break;
    case Op::kCompareSet:
      codec::put_str(out, req.key);
      codec::put_str(out, req.value);
      codec::put_str(out, req.desired);
      break;
    case Op::kGet:
    case Op::kWatchKey:
    case Op::kDeleteKey:
    case Op::kQueuePop:
    case Op::kQueueLen:
      codec::put_str(out, req.key);
      break;
    case Op::kAdd:
    case Op::kBarrier:
      codec::put_str(out, req.key);
      codec::put<std::int64_t>(out, req.delta);
      break;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      codec::put<std::uint64_t>(out, req.keys.size());
      for (const auto& k : req.keys) codec::put_str(out, k);
      break;
    case Op::kMultiSet:
      codec::put<std::uint64_t>(out, req.keys.size());
      for (std::size_t i = 0; i < req.keys.size(); ++i) {
        codec::put_str(out, req.keys[i]);
        codec::put_str(out, i < req.values.size() ? std::string_view(req.values[i]) : "");
      }
      break;
    case Op::kGetNumKeys:
    case Op::kCancelWait:
    case Op::kList:
      break;
  }
  return out;
}

}  // namespace ddp::rendezvous
