#include "etcd/election.h"

namespace ddp::etcd {

boost::asio::awaitable<Result<Election::Holder>> Election::campaign(std::string value,
                                                                    std::vector<Json> also) {
  Txn txn = put_if_absent(key_, value, lease_);
  for (auto& c : also) txn.compare.push_back(std::move(c));
  txn.failure.push_back(op_range(key_));
  auto r = co_await client_.txn(std::move(txn));
  if (!r) co_return r.status();
  if (r->succeeded) co_return Holder{true, r->revision, std::move(value)};
  if (r->ranges.empty() || r->ranges[0].kvs.empty()) co_return Holder{};
  const KeyValue& kv = r->ranges[0].kvs[0];
  co_return Holder{false, kv.create_revision, kv.value};
}

void Election::observe(std::int64_t from_revision, std::chrono::milliseconds reconnect_for,
                       std::function<void(std::int64_t)> on_vacated, Watch::OnError on_error) {
  const auto& o = client_.options();
  auto on_events = [on_vacated = std::move(on_vacated)](std::vector<WatchEvent> events) {
    std::int64_t vacated = 0;
    for (const auto& e : events) vacated = e.deleted ? e.kv.mod_revision : vacated;
    if (vacated != 0) on_vacated(vacated);
  };
  watch_ = Watch::start(client_.executor(), o.endpoints,
                        {.key = key_,
                         .start_revision = from_revision,
                         .reconnect_for = reconnect_for,
                         .attempt_timeout = o.attempt_timeout,
                         .transport = o.transport},
                        std::move(on_events), std::move(on_error));
}

}  // namespace ddp::etcd
