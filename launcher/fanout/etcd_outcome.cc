#include "launcher/fanout/etcd_outcome.h"

#include <spdlog/spdlog.h>

#include "etcd/client.h"
#include "rendezvous/membership/wire.h"

namespace ddp::launcher::fanout {

namespace membership = rendezvous::membership;

std::optional<membership::JobFinished> read_etcd_outcome(const agent::EtcdSettings& settings,
                                                         const std::string& run_id,
                                                         std::chrono::milliseconds timeout) {
  const std::string key = agent::EtcdKeys(settings, run_id).finished();
  etcd::ClientOptions options{.endpoints = settings.endpoints,
                              .request_timeout = timeout,
                              .attempt_timeout = timeout,
                              .transport = agent::etcd_transport(settings)};
  auto answer = etcd::call_blocking(options, "/v3/kv/range", etcd::op_range(key)["request_range"]);
  if (!answer) {
    spdlog::warn("cannot read the job's end from etcd ({}): {}", key, answer.status().message());
    return std::nullopt;
  }
  auto kvs = answer->find("kvs");
  if (kvs == answer->end() || !kvs->is_array() || kvs->empty()) return std::nullopt;
  auto kv = etcd::decode_key_value(kvs->front());
  if (!kv) return std::nullopt;
  auto decoded = membership::decode_push(kv->value);
  if (decoded.state != membership::DecodeState::kComplete) return std::nullopt;
  if (auto* f = std::get_if<membership::JobFinished>(&decoded.value)) return *f;
  return std::nullopt;
}

}  // namespace ddp::launcher::fanout
