// A Subscriber that records what the store tells it, for store tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/store.h"

namespace ddp::rendezvous::test {

struct Change {
  WatchEvent event;
  std::string key;
  std::string old_value;
  std::string new_value;
  bool operator==(const Change&) const = default;
};

class FakeSubscriber : public Subscriber {
 public:
  void wait_satisfied() override { ++satisfied; }
  void key_changed(WatchEvent event, std::string_view key, std::string_view old_value,
                   std::string_view new_value) override {
    changes.push_back({event, std::string(key), std::string(old_value), std::string(new_value)});
  }
  int satisfied = 0;
  std::vector<Change> changes;
};

}  // namespace ddp::rendezvous::test
