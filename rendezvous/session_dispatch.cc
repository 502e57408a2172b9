// Session::handle: applies one decoded request to the store and queues its reply bytes
// (layouts in rendezvous/protocol.h). Split from session.cc, which owns the socket.
#include <spdlog/spdlog.h>

#include "rendezvous/session.h"

namespace ddp::rendezvous {

bool Session::handle(Request& req) {
  Store& store = ctx_->store;
  ++ctx_->ops[static_cast<std::size_t>(req.op)];
  switch (req.op) {
    case Op::kValidate:
      break;  // the Framer enforced VALIDATE-first; a repeat (magic checked) is harmless
    case Op::kSet:
      store.set(req.key, std::move(req.value));
      break;
    case Op::kCompareSet:
      codec::put_str(out_, store.compare_set(req.key, req.value, std::move(req.desired)));
      break;
    case Op::kGet:
      codec::put_str(out_, store.get(req.key));
      break;
    case Op::kAdd: {
      auto total = store.add(req.key, req.delta);
      if (!total) {
        close(total.status().message(), true);
        return false;
      }
      codec::put<std::int64_t>(out_, *total);
      break;
    }
    case Op::kBarrier: {
      auto complete = store.barrier(*this, req.key, req.delta);
      if (!complete) {
        close(complete.status().message(), true);
        return false;
      }
      if (*complete) codec::put<std::uint8_t>(out_, kStopWaiting);
      break;
    }
    case Op::kCheck:
      codec::put<std::uint8_t>(out_, store.check(req.keys) ? kCheckReady : kCheckNotReady);
      break;
    case Op::kWait:
      if (store.wait(*this, req.keys)) codec::put<std::uint8_t>(out_, kStopWaiting);
      break;
    case Op::kGetNumKeys:
      codec::put<std::int64_t>(out_, store.num_keys());
      break;
    case Op::kWatchKey:
      watching_ = true;
      store.watch(*this, req.key);
      codec::put<std::uint8_t>(out_, kWatchRegistered);
      break;
    case Op::kDeleteKey:
      codec::put<std::int64_t>(out_, store.delete_key(req.key));
      break;
    case Op::kAppend:
      store.append(req.key, req.value);
      break;
    case Op::kMultiGet:
      for (const auto& key : req.keys) codec::put_str(out_, store.get(key));
      break;
    case Op::kMultiSet:
      for (std::size_t i = 0; i < req.keys.size(); ++i) {
        store.set(req.keys[i], std::move(req.values[i]));
      }
      break;
    case Op::kCancelWait:
      store.cancel_waits(*this);
      codec::put<std::uint8_t>(out_, kWaitCanceled);
      break;
    case Op::kPing:
      codec::put<std::uint32_t>(out_, req.word);
      break;
    case Op::kQueuePush:
      store.queue_push(req.key, std::move(req.value));
      break;
    case Op::kQueuePop: {
      auto popped = store.queue_pop(req.key);
      codec::put<std::int64_t>(out_, popped.length_before);
      if (popped.value) codec::put_str(out_, *popped.value);
      break;
    }
    case Op::kQueueLen:
      codec::put<std::int64_t>(out_, store.queue_len(req.key));
      break;
    case Op::kList: {
      auto keys = store.list_keys();
      codec::put<std::int64_t>(out_, static_cast<std::int64_t>(keys.size()));
      for (const auto& key : keys) codec::put_str(out_, key);
      break;
    }
  }
  return true;
}

}  // namespace ddp::rendezvous
