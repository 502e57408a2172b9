// One key contended, in the manner of etcd's concurrency.Election: campaign(value) puts it if
// absent under the contender's lease (a Session's), so it goes with its holder's lease; the
// winning txn's revision (the key's create_revision) is the holder's fence. observe() tells
// each time the key is vacated; the contender may then campaign again. A lost campaign names
// the holder (its value: e.g. where the winner serves).
//
// Threading: one io_context thread. After destruction no callback runs.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <vector>

#include "etcd/client.h"
#include "etcd/watch.h"

namespace ddp::etcd {

class Election {
 public:
  // Through `client` (outlives this; the watch uses its endpoints and transport).
  Election(Client& client, std::string key, std::int64_t lease)
      : client_(client), key_(std::move(key)), lease_(lease) {}
  ~Election() {
    if (watch_) watch_->cancel();
  }

  // Who holds the key after the attempt: this contender (`mine`, revision = the fence) or
  // another (its value and create_revision), read in the same txn. `also` (Compare ops) must
  // hold too: when one does not and the key is free, nobody holds it (value empty); read again.
  struct Holder {
    bool mine = false;
    std::int64_t revision = 0;
    std::string value;
  };
  boost::asio::awaitable<Result<Holder>> campaign(std::string value, std::vector<Json> also = {});
  // Once. From `from_revision` on, on_vacated(the revision of its last deletion) for each watch
  // batch that deleted the key; on_error once if the watch is lost (watch.h).
  void observe(std::int64_t from_revision, std::chrono::milliseconds reconnect_for,
               std::function<void(std::int64_t)> on_vacated, Watch::OnError on_error);

 private:
  Client& client_;
  std::string key_;
  std::int64_t lease_;
  std::shared_ptr<Watch> watch_;
};

}  // namespace ddp::etcd
