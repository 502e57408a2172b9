// Parked WAITs: woken by the write that completes them, cancellable, dropped with the
// connection; QUEUE_PUSH wakes one waiter.
#include "rendezvous/store.h"
#include "tests/catch.h"
#include "tests/rendezvous/fake_subscriber.h"

namespace ddp::rendezvous {
namespace {

using test::FakeSubscriber;

TEST_CASE("WAIT on existing keys is ready at once and parks nothing", "[store][wait]") {
  Store s;
  FakeSubscriber w;
  s.set("a", "1");
  CHECK(s.wait(w, {"a", "a"}));
  CHECK(s.parked_waits() == 0);
}

TEST_CASE("a multi-key WAIT is woken only by the write of its last missing key", "[store][wait]") {
  Store s;
  FakeSubscriber w;
  s.set("present", "x");
  CHECK_FALSE(s.wait(w, {"a", "present", "b", "a"}));
  s.set("a", "1");
  CHECK(w.satisfied == 0);  // partial: b still missing
  s.set("a", "2");
  CHECK(w.satisfied == 0);
  auto total = s.add("b", 1);
  REQUIRE(total.is_ok());
  CHECK(w.satisfied == 1);
  CHECK(s.parked_waits() == 0);
  s.set("b", "again");
  CHECK(w.satisfied == 1);  // woken exactly once
}

TEST_CASE("every kind of write wakes waiters", "[store][wait]") {
  Store s;
  FakeSubscriber w;
  CHECK_FALSE(s.wait(w, {"set", "add", "append", "cas"}));
  s.set("set", "1");
  REQUIRE(s.add("add", 1).is_ok());
  s.append("append", "x");
  CHECK(w.satisfied == 0);
  s.compare_set("cas", "", "v");
  CHECK(w.satisfied == 1);
}

TEST_CASE("many subscribers on one key are all woken by one write", "[store][wait]") {
  Store s;
  std::vector<FakeSubscriber> subs(1000);
  for (auto& sub : subs) CHECK_FALSE(s.wait(sub, {"barrier"}));
  CHECK(s.parked_waits() == 1000);
  s.set("barrier", "go");
  for (auto& sub : subs) CHECK(sub.satisfied == 1);
  CHECK(s.parked_waits() == 0);
}

TEST_CASE("CANCEL_WAIT drops the subscriber's waits only", "[store][wait]") {
  Store s;
  FakeSubscriber a;
  FakeSubscriber b;
  CHECK_FALSE(s.wait(a, {"k"}));
  CHECK_FALSE(s.wait(a, {"j"}));
  CHECK_FALSE(s.wait(b, {"k"}));
  CHECK(s.cancel_waits(a) == 2);
  CHECK(s.cancel_waits(a) == 0);
  s.set("k", "v");
  s.set("j", "v");
  CHECK(a.satisfied == 0);
  CHECK(b.satisfied == 1);
}

TEST_CASE("a dropped connection's waits are forgotten", "[store][wait]") {
  Store s;
  auto gone = std::make_unique<FakeSubscriber>();
  FakeSubscriber stays;
  CHECK_FALSE(s.wait(*gone, {"k"}));
  CHECK_FALSE(s.wait(stays, {"k"}));
  s.drop(*gone);
  gone.reset();  // a dangling pointer in the store would crash below under ASan
  s.set("k", "v");
  CHECK(stays.satisfied == 1);
  CHECK(s.parked_waits() == 0);
}

TEST_CASE("DELETE_KEY does not satisfy waits but a later write does", "[store][wait]") {
  Store s;
  FakeSubscriber w;
  CHECK_FALSE(s.wait(w, {"k"}));
  s.delete_key("k");
  CHECK(w.satisfied == 0);
  s.set("k", "v");
  CHECK(w.satisfied == 1);
}

TEST_CASE("QUEUE_PUSH wakes one waiter per push", "[store][wait][queue]") {
  Store s;
  FakeSubscriber a;
  FakeSubscriber b;
  CHECK_FALSE(s.wait(a, {"q"}));
  CHECK_FALSE(s.wait(b, {"q"}));
  s.queue_push("q", "1");
  CHECK(a.satisfied + b.satisfied == 1);
  s.queue_pop("q");
  s.queue_push("q", "2");
  CHECK(a.satisfied == 1);
  CHECK(b.satisfied == 1);
}

TEST_CASE("BARRIER: the last of world_size arrivals releases every one", "[store][wait][barrier]") {
  Store s;
  FakeSubscriber a, b, c, w;
  CHECK_FALSE(s.wait(w, {"other"}));
  CHECK(s.barrier(a, "b", 3).value() == false);
  CHECK(s.barrier(b, "b", 3).value() == false);  // a second arrival wakes nobody
  CHECK(a.satisfied == 0);
  CHECK(s.get("b") == "2");
  CHECK(s.parked_waits() == 3);
  CHECK(s.barrier(c, "b", 3).value() == true);  // the last is answered at once
  CHECK(a.satisfied == 1);
  CHECK(b.satisfied == 1);
  CHECK(c.satisfied == 0);
  CHECK(w.satisfied == 0);
  CHECK(s.get("b") == "3");
  CHECK(s.parked_waits() == 1);
  CHECK(s.barrier(a, "b", 3).value() == true);  // past world_size: through at once
}

TEST_CASE("BARRIER: another write of its key releases it, CANCEL_WAIT drops it, text fails",
          "[store][wait][barrier]") {
  Store s;
  FakeSubscriber a, b;
  CHECK(s.barrier(a, "k", 5).value() == false);
  s.set("k", "1");  // as PyTorch's server: any write of the key wakes its waiters
  CHECK(a.satisfied == 1);
  CHECK(s.barrier(b, "k", 5).value() == false);
  CHECK(s.get("k") == "2");
  CHECK(s.cancel_waits(b) == 1);
  CHECK(s.parked_waits() == 0);
  s.set("t", "text");
  auto bad = s.barrier(a, "t", 2);
  REQUIRE_FALSE(bad);
  CHECK(bad.status().code() == ErrorCode::kInvalidArgument);
  CHECK(s.get("t") == "text");
  CHECK(s.parked_waits() == 0);
}

}  // namespace
}  // namespace ddp::rendezvous
