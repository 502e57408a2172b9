// libFuzzer target for the store protocol: feeds arbitrary bytes through dialect detection
// and the incremental parser exactly as a session does, applies what parses to a Store, and
// traps when an invariant breaks:
//  - a complete request re-encodes to exactly the bytes it consumed;
//  - an incomplete parse asks for more bytes than it has;
//  - nothing reads out of bounds or allocates past the limits (ASan/UBSan, -rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rendezvous/protocol.h"
#include "rendezvous/store.h"

namespace {

using namespace ddp::rendezvous;
namespace codec = ddp::codec;

class NullSubscriber : public Subscriber {
 public:
  void wait_satisfied() override {}
  void key_changed(WatchEvent, std::string_view, std::string_view, std::string_view) override {}
};

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void apply(Store& store, NullSubscriber& who, Request& r) {
  switch (r.op) {
    case Op::kSet:
      store.set(r.key, r.value);
      break;
    case Op::kCompareSet:
      store.compare_set(r.key, r.value, r.desired);
      break;
    case Op::kGet:
      store.get(r.key);
      break;
    case Op::kAdd:
      (void)store.add(r.key, r.delta);
      break;
    case Op::kCheck:
      store.check(r.keys);
      break;
    case Op::kWait:
      store.wait(who, r.keys);
      break;
    case Op::kWatchKey:
      store.watch(who, r.key);
      break;
    case Op::kDeleteKey:
      store.delete_key(r.key);
      break;
    case Op::kAppend:
      store.append(r.key, r.value);
      break;
    case Op::kMultiSet:
      for (std::size_t i = 0; i < r.keys.size(); ++i) store.set(r.keys[i], r.values[i]);
      break;
    case Op::kCancelWait:
      store.cancel_waits(who);
      break;
    case Op::kQueuePush:
      store.queue_push(r.key, r.value);
      break;
    case Op::kQueuePop:
      store.queue_pop(r.key);
      break;
    case Op::kQueueLen:
      store.queue_len(r.key);
      break;
    case Op::kList:
      store.list_keys();
      break;
    case Op::kBarrier:
      (void)store.barrier(who, r.key, r.delta);
      break;
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  Limits limits;  // small limits so the fuzzer reaches them
  limits.max_key_bytes = 64;
  limits.max_value_bytes = 256;
  limits.max_keys_per_query = 16;
  limits.max_request_bytes = 4096;

  Dialect dialect = Dialect::kLegacy113;
  switch (detect_dialect(in)) {
    case DialectGuess::kNeedMore:
      return 0;
    case DialectGuess::kModern:
      dialect = Dialect::kModern;
      break;
    case DialectGuess::kLegacy113:
      break;
  }
  Store store;
  NullSubscriber who;
  while (!in.empty()) {
    codec::Decoded<Request> r = parse_request(dialect, in, limits);
    if (r.state == codec::DecodeState::kError) {
      check(!r.error.empty());
      break;
    }
    if (r.state == codec::DecodeState::kIncomplete) {
      check(r.needed > in.size());
      break;
    }
    check(r.consumed > 0 && r.consumed <= in.size());
    auto again = encode_request(dialect, r.value);
    check(again.has_value() && *again == in.substr(0, r.consumed));
    apply(store, who, r.value);
    in.remove_prefix(r.consumed);
  }
  store.drop(who);
  return 0;
}
