#include "rendezvous/protocol.h"

#include <array>
#include <cstring>

#include "common/byte_codec.h"

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

// Reads one request's fields in order. The first short read or limit violation sticks:
// later reads are no-ops, so parse code reads straight through and checks once at the end.
class Reader {
 public:
  Reader(std::string_view in, const Limits& limits) : in_(in), limits_(limits) {}

  template <typename T>
  void value(T& v) {
    if (!ok()) return;
    if (!bytes::get(in_, pos_, v)) needed_ = pos_ + sizeof(T);
  }

  void key(std::string& out) { bytes(out, limits_.max_key_bytes, "key"); }
  void payload(std::string& out) { bytes(out, limits_.max_value_bytes, "value"); }

  // A u64 count of keys (CHECK, WAIT, MULTI_GET, MULTI_SET), checked before any reserve.
  std::size_t count() {
    std::uint64_t n = 0;
    value(n);
    if (!ok()) return 0;
    if (n > limits_.max_keys_per_query) {
      error_ = "query names " + std::to_string(n) + " keys; the limit is " +
               std::to_string(limits_.max_keys_per_query) + " (--max-keys)";
      return 0;
    }
    return static_cast<std::size_t>(n);
  }

  bool ok() const { return needed_ == 0 && error_.empty(); }
  std::size_t pos() const { return pos_; }
  std::size_t needed() const { return needed_; }
  const std::string& error() const { return error_; }
  void fail(std::string message) {
    if (ok()) error_ = std::move(message);
  }

 private:
  void bytes(std::string& out, std::size_t limit, const char* what) {
    std::uint64_t len = 0;
    value(len);
    if (!ok()) return;
    if (len > limit) {
      error_ = std::string(what) + " of " + std::to_string(len) + " bytes exceeds the limit of " +
               std::to_string(limit) + " bytes";
      return;
    }
    if (in_.size() - pos_ < len) {
      needed_ = pos_ + static_cast<std::size_t>(len);
      return;
    }
    out.assign(in_.data() + pos_, static_cast<std::size_t>(len));
    pos_ += static_cast<std::size_t>(len);
  }

  std::string_view in_;
  const Limits& limits_;
  std::size_t pos_ = 0;
  std::size_t needed_ = 0;
  std::string error_;
};

void read_keys(Reader& r, std::vector<std::string>& keys) {
  const std::size_t n = r.count();
  if (!r.ok()) return;
  for (std::size_t i = 0; i < n && r.ok(); ++i) r.key(keys.emplace_back());
}

void read_args(Reader& r, Request& req) {
  switch (req.op) {
    case Op::kValidate:
      r.value(req.word);
      if (r.ok() && req.word != kValidateMagic) r.fail("VALIDATE carries a wrong magic number");
      break;
    case Op::kPing:
      r.value(req.word);
      break;
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      r.key(req.key);
      r.payload(req.value);
      break;
    case Op::kCompareSet:
      r.key(req.key);
      r.payload(req.value);
      r.payload(req.desired);
      break;
    case Op::kGet:
    case Op::kWatchKey:
    case Op::kDeleteKey:
    case Op::kQueuePop:
    case Op::kQueueLen:
      r.key(req.key);
      break;
    case Op::kAdd:
    case Op::kBarrier:
      r.key(req.key);
      r.value(req.delta);
      break;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      read_keys(r, req.keys);
      break;
    case Op::kMultiSet: {
      const std::size_t n = r.count();
      for (std::size_t i = 0; i < n && r.ok(); ++i) {
        r.key(req.keys.emplace_back());
        r.payload(req.values.emplace_back());
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

ParseResult parse_request(Dialect dialect, std::string_view input, const Limits& limits) {
  ParseResult result;
  if (input.empty()) {
    result.needed = 1;
    return result;
  }
  const auto code = static_cast<std::uint8_t>(input[0]);
  const auto op = op_from_wire(dialect, code);
  if (!op) {
    result.state = ParseState::kError;
    result.error = "unknown query type " + std::to_string(code) + " for the " +
                   (dialect == Dialect::kModern ? "PyTorch >= 2.2" : "PyTorch 1.13") + " numbering";
    if (code >= kFirstNativeOp) result.error += " (native rendezvous range: not a TCPStore query)";
    return result;
  }
  Reader reader(input.substr(1), limits);
  result.request.op = *op;
  read_args(reader, result.request);
  if (!reader.error().empty()) {
    result.state = ParseState::kError;
    result.error = std::string(op_name(*op)) + ": " + reader.error();
    result.request = Request{};
  } else if (reader.needed() != 0) {
    result.needed = reader.needed() + 1;
    result.request = Request{};
    if (result.needed > limits.max_request_bytes) {
      result.state = ParseState::kError;
      result.error = std::string(op_name(*op)) + ": request of at least " +
                     std::to_string(result.needed) + " bytes exceeds the limit of " +
                     std::to_string(limits.max_request_bytes) + " bytes";
    }
  } else {
    result.state = ParseState::kComplete;
    result.consumed = reader.pos() + 1;
  }
  return result;
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
  put_u8(out, *code);
  switch (req.op) {
    case Op::kValidate:
    case Op::kPing:
      put_u32(out, req.word);
      break;
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      put_bytes(out, req.key);
      put_bytes(out, req.value);
      break;
    case Op::kCompareSet:
      put_bytes(out, req.key);
      put_bytes(out, req.value);
      put_bytes(out, req.desired);
      break;
    case Op::kGet:
    case Op::kWatchKey:
    case Op::kDeleteKey:
    case Op::kQueuePop:
    case Op::kQueueLen:
      put_bytes(out, req.key);
      break;
    case Op::kAdd:
    case Op::kBarrier:
      put_bytes(out, req.key);
      put_i64(out, req.delta);
      break;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      put_u64(out, req.keys.size());
      for (const auto& k : req.keys) put_bytes(out, k);
      break;
    case Op::kMultiSet:
      put_u64(out, req.keys.size());
      for (std::size_t i = 0; i < req.keys.size(); ++i) {
        put_bytes(out, req.keys[i]);
        put_bytes(out, i < req.values.size() ? std::string_view(req.values[i]) : "");
      }
      break;
    case Op::kGetNumKeys:
    case Op::kCancelWait:
    case Op::kList:
      break;
  }
  return out;
}

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
void put_u32(std::string& out, std::uint32_t v) { bytes::put(out, v); }
void put_i64(std::string& out, std::int64_t v) { bytes::put(out, v); }
void put_u64(std::string& out, std::uint64_t v) { bytes::put(out, v); }
void put_bytes(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}

bool get_u8(std::string_view in, std::size_t& pos, std::uint8_t& v) {
  return bytes::get(in, pos, v);
}
bool get_u64(std::string_view in, std::size_t& pos, std::uint64_t& v) {
  return bytes::get(in, pos, v);
}

}  // namespace ddp::rendezvous
