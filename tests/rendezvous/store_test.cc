// Store semantics without I/O: values, COMPARE_SET, ADD, deletes, lists, queues, watches.
#include "rendezvous/store.h"

#include "tests/catch.h"
#include "tests/rendezvous/fake_subscriber.h"

namespace ddp::rendezvous {
namespace {

using test::FakeSubscriber;

TEST_CASE("set, get, num_keys, delete and list", "[store]") {
  Store s;
  CHECK(s.get("missing").empty());
  s.set("b", std::string("\0\xff", 2));
  s.set("a", "1");
  CHECK(s.get("b") == std::string("\0\xff", 2));
  CHECK(s.num_keys() == 2);
  CHECK(s.list_keys() == std::vector<std::string>{"a", "b"});
  CHECK(s.delete_key("a") == 1);
  CHECK(s.delete_key("a") == 0);
  CHECK(s.num_keys() == 1);
  CHECK(s.check({"b"}));
  CHECK_FALSE(s.check({"b", "a"}));
}

TEST_CASE("clear forgets keys, queues, parked waits and watches", "[store]") {
  Store s;
  FakeSubscriber waiter, watcher;
  s.set("old", "v");
  s.queue_push("q", "x");
  CHECK_FALSE(s.wait(waiter, {"missing"}));
  s.watch(watcher, "old");
  s.clear();
  CHECK(s.num_keys() == 0);
  CHECK(s.queue_count() == 0);
  CHECK(s.parked_waits() == 0);
  CHECK(s.data_bytes() == 0);
  CHECK(s.get("old").empty());
  CHECK(s.queue_len("q") == 0);
  // Neither the old waiter nor the old watcher hears of the new attempt's writes.
  s.set("missing", "1");
  s.set("old", "2");
  CHECK(waiter.satisfied == 0);
  CHECK(watcher.changes.empty());
  s.drop(waiter);  // a connection closing after clear() finds nothing to forget
  CHECK(s.num_keys() == 2);
}

TEST_CASE("data_bytes counts keys and values held, queues included", "[store]") {
  Store s;
  CHECK(s.data_bytes() == 0);
  s.set("ab", "123");
  CHECK(s.data_bytes() == 5);
  s.set("ab", "1");  // overwrite: the key once, the new value
  CHECK(s.data_bytes() == 3);
  s.append("ab", "xyz");
  CHECK(s.data_bytes() == 6);
  REQUIRE(s.add("n", 10));  // "10"
  CHECK(s.data_bytes() == 9);
  CHECK(s.compare_set("ab", "1xyz", "q") == "q");
  CHECK(s.data_bytes() == 6);
  s.queue_push("qq", "hello");
  s.queue_push("qq", "w");
  CHECK(s.data_bytes() == 6 + 2 + 6);
  CHECK(s.queue_count() == 1);
  CHECK(s.queue_pop("qq").value == "hello");
  CHECK(s.data_bytes() == 6 + 2 + 1);
  CHECK(s.queue_pop("qq").value == "w");
  CHECK(s.data_bytes() == 6);
  CHECK(s.queue_count() == 0);
  CHECK(s.delete_key("ab") == 1);
  CHECK(s.delete_key("n") == 1);
  CHECK(s.data_bytes() == 0);
}

TEST_CASE("COMPARE_SET on a missing key with an empty expected value stores", "[store]") {
  Store s;
  CHECK(s.compare_set("k", "", "new") == "new");
  CHECK(s.get("k") == "new");
}

TEST_CASE("COMPARE_SET on a missing key with a non-empty expected value stores nothing",
          "[store]") {
  Store s;
  CHECK(s.compare_set("k", "expected", "new") == "expected");
  CHECK_FALSE(s.check({"k"}));
  CHECK(s.num_keys() == 0);
}

TEST_CASE("COMPARE_SET match replaces, mismatch keeps and returns the current value", "[store]") {
  Store s;
  s.set("k", "v1");
  CHECK(s.compare_set("k", "v1", "v2") == "v2");
  CHECK(s.compare_set("k", "v1", "v3") == "v2");
  CHECK(s.get("k") == "v2");
  CHECK(s.compare_set("k", "", "v4") == "v2");  // empty expected does not match a value
}

TEST_CASE("COMPARE_SET wakes waiters (like the libuv server)", "[store]") {
  Store s;
  FakeSubscriber w;
  CHECK_FALSE(s.wait(w, {"k"}));
  s.compare_set("k", "nope", "x");  // stores nothing: no wake-up
  CHECK(w.satisfied == 0);
  s.compare_set("k", "", "x");
  CHECK(w.satisfied == 1);
}

TEST_CASE("ADD stores ASCII decimal and adds to text values", "[store]") {
  Store s;
  CHECK(*s.add("c", 5) == 5);
  CHECK(s.get("c") == "5");
  CHECK(*s.add("c", -7) == -2);
  CHECK(s.get("c") == "-2");
  s.set("t", "41");
  CHECK(*s.add("t", 1) == 42);
  CHECK(s.get("t") == "42");
}

TEST_CASE("ADD on a non-numeric value is an error and changes nothing", "[store]") {
  Store s;
  for (const char* bad : {"abc", "", "12x", " 1", "1.5"}) {
    s.set("k", bad);
    auto r = s.add("k", 1);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == ErrorCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains("not a decimal integer"));
    CHECK(s.get("k") == bad);
  }
  s.set("big", "9223372036854775807");
  CHECK_FALSE(s.add("big", 1).is_ok());
}

TEST_CASE("APPEND creates then concatenates", "[store]") {
  Store s;
  s.append("k", "ab");
  s.append("k", "cd");
  CHECK(s.get("k") == "abcd");
}

TEST_CASE("queues: push, pop, len, and keys kept apart from values", "[store]") {
  Store s;
  CHECK(s.queue_len("q") == 0);
  auto empty = s.queue_pop("q");
  CHECK(empty.length_before == 0);
  CHECK_FALSE(empty.value.has_value());
  s.queue_push("q", "1");
  s.queue_push("q", "2");
  CHECK(s.queue_len("q") == 2);
  CHECK(s.num_keys() == 0);
  CHECK(s.check({"q"}));
  auto first = s.queue_pop("q");
  CHECK(first.length_before == 2);
  CHECK(first.value == "1");
  CHECK(s.queue_pop("q").value == "2");
  CHECK_FALSE(s.check({"q"}));
}

TEST_CASE("watches see create, update and delete with old and new values", "[store][watch]") {
  Store s;
  FakeSubscriber w;
  s.watch(w, "k");
  s.set("k", "1");
  REQUIRE(s.add("k", 2).is_ok());
  s.compare_set("k", "3", "x");
  s.compare_set("k", "nope", "y");  // no change, no push
  s.append("k", "z");
  s.delete_key("k");
  s.set("other", "ignored");
  using E = WatchEvent;
  const std::vector<test::Change> expected = {{E::kCreated, "k", "", "1"},
                                              {E::kUpdated, "k", "1", "3"},
                                              {E::kUpdated, "k", "3", "x"},
                                              {E::kUpdated, "k", "x", "xz"},
                                              {E::kDeleted, "k", "xz", ""}};
  CHECK(w.changes == expected);
}

TEST_CASE("a dropped watcher gets no more pushes", "[store][watch]") {
  Store s;
  FakeSubscriber a;
  FakeSubscriber b;
  s.watch(a, "k");
  s.watch(b, "k");
  s.drop(a);
  s.set("k", "v");
  CHECK(a.changes.empty());
  CHECK(b.changes.size() == 1);
}

}  // namespace
}  // namespace ddp::rendezvous
