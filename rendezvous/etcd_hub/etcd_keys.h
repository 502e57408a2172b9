// The etcd keys of one job (docs/etcd.md draws them). Pure. P = <prefix>/<run_id>/:
//   P/coordinator            the elected coordinator (its lease)
//   P/nodes/<node_key>       one per agent: its JOIN (its lease); deleted = node lost
//   P/req/<node_key>/<seq>   an agent's reports and LEAVE (its lease)
//   P/ev/<node_key>/<id>     the job's events for that agent (the coordinator's lease)
//   P/state                  durable: round, restart count, departures
//   P/finished               durable: the JobFinished everyone was told
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::rendezvous {

class EtcdKeys {
 public:
  EtcdKeys(const std::string& prefix, const std::string& run_id)
      : job_(prefix + "/" + run_id + "/") {}

  const std::string& job() const { return job_; }
  std::string coordinator() const { return job_ + "coordinator"; }
  std::string nodes() const { return job_ + "nodes/"; }
  std::string node(const std::string& node_key) const { return nodes() + node_key; }
  std::string requests() const { return job_ + "req/"; }
  std::string request(const std::string& node_key, std::uint64_t seq) const;
  std::string events(const std::string& node_key) const { return job_ + "ev/" + node_key + "/"; }
  std::string state() const { return job_ + "state"; }
  std::string finished() const { return job_ + "finished"; }

  // The node key of P/nodes/<key> or P/req/<key>/<seq>; nullopt for any other key.
  std::optional<std::string> node_of(std::string_view key) const;
  std::optional<std::string> requester_of(std::string_view key) const;

 private:
  std::string job_;
};

}  // namespace ddp::rendezvous
