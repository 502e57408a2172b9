// LibTorch 1.13 c10d::TCPStore as a client of a TCPStore-compatible server.
//
// Usage: interop_torch_store_client HOST PORT
// Runs every client operation against the server with checks on each result (set, get, add,
// compareSet, check, wait with and without timeout, a wait released by another client,
// deleteKey, getNumKeys, watchKey). Prints "FAIL: ..." and exits 1 on the first wrong result,
// exits 0 when everything held. Keys live under a per-run namespace so reruns do not collide.
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

constexpr auto kDeadline = 30s;

struct Failure {
  std::string what;
};

void expect(bool ok, const std::string& what) {
  if (!ok) throw Failure{what};
}

Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string text(const Bytes& b) { return std::string(b.begin(), b.end()); }

class Client {
 public:
  Client(const std::string& host, uint16_t port, std::chrono::milliseconds timeout = kDeadline) {
    c10d::TCPStoreOptions opts;
    opts.port = port;
    opts.isServer = false;
    opts.waitWorkers = false;
    opts.timeout = kDeadline;  // the connect timeout is truncated to seconds: keep it whole
    store_ = std::make_unique<c10d::TCPStore>(host, opts);
    store_->setTimeout(timeout);
  }
  c10d::TCPStore& operator*() { return *store_; }
  c10d::TCPStore* operator->() { return store_.get(); }

 private:
  std::unique_ptr<c10d::TCPStore> store_;
};

// True when thread `tid` of this process sits in a blocking socket read (read, poll, recvfrom,
// recvmsg, ppoll on x86-64).
bool blocked_reading(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long nr = -1;
  f >> nr;
  return nr == 0 || nr == 7 || nr == 45 || nr == 47 || nr == 271;
}

// Re-checks pred until true or the deadline. Used only for kernel state that offers no
// notification; the pause is between re-checks, not a wait for the event itself.
template <typename Pred>
void wait_for(Pred pred, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (!pred()) {
    expect(std::chrono::steady_clock::now() < deadline, "timed out waiting for " + what);
    std::this_thread::sleep_for(2ms);
  }
}

void test_set_get_add(Client& s, const std::string& p) {
  s->set(p + "a", bytes("hello"));
  expect(text(s->get(p + "a")) == "hello", "get after set");
  s->set(p + "a", bytes(""));
  expect(s->get(p + "a").empty(), "get of an empty value");
  Bytes binary(4096);
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<uint8_t>(i * 7);
  s->set(p + "bin", binary);
  expect(s->get(p + "bin") == binary, "binary value round trip");
  expect(s->add(p + "n", 3) == 3, "add on a missing key");
  expect(s->add(p + "n", -10) == -7, "negative add");
  expect(text(s->get(p + "n")) == "-7", "add stores decimal text");
  s->set(p + "t", bytes("10"));
  expect(s->add(p + "t", 5) == 15, "add on a value set as text");
}

void test_compare_set(Client& s, const std::string& p) {
  expect(text(s->compareSet(p + "c", {}, bytes("v1"))) == "v1", "cas: missing, empty expected");
  expect(text(s->compareSet(p + "c", bytes("v1"), bytes("v2"))) == "v2", "cas: match");
  expect(text(s->compareSet(p + "c", bytes("no"), bytes("v3"))) == "v2", "cas: mismatch");
  expect(text(s->get(p + "c")) == "v2", "cas: mismatch left the value");
  expect(text(s->compareSet(p + "x", bytes("e"), bytes("d"))) == "e", "cas: missing, expected");
  expect(!s->check({p + "x"}), "cas with non-empty expected on a missing key stored nothing");
}

void test_check_delete_numkeys(Client& s, const std::string& p) {
  const int64_t before = s->getNumKeys();
  expect(!s->check({p + "k1"}), "check of a missing key");
  s->set(p + "k1", bytes("1"));
  expect(s->check({p + "k1"}), "check of a present key");
  expect(!s->check({p + "k1", p + "k2"}), "check with one key missing");
  s->set(p + "k2", bytes("2"));
  expect(s->check({p + "k1", p + "k2"}), "check with both present");
  expect(s->getNumKeys() == before + 2, "getNumKeys counts new keys");
  expect(s->deleteKey(p + "k1"), "deleteKey of a present key");
  expect(!s->deleteKey(p + "k1"), "deleteKey of a deleted key");
  expect(!s->check({p + "k1"}), "check after delete");
  expect(s->getNumKeys() == before + 1, "getNumKeys after delete");
}

void test_waits(const std::string& host, uint16_t port, Client& s, const std::string& p) {
  s->set(p + "ready", bytes("1"));
  s->wait({p + "ready"});
  s->wait({p + "ready"}, 5s);

  {  // A timed-out 1.13 client keeps a stale registration: this one is used once.
    Client once(host, port);
    const auto start = std::chrono::steady_clock::now();
    bool threw = false;
    try {
      once->wait({p + "never"}, 300ms);
    } catch (const std::exception&) {
      threw = true;
    }
    const auto took = std::chrono::steady_clock::now() - start;
    expect(threw, "wait on a missing key with a 300 ms timeout threw");
    expect(took >= 250ms && took < 10s, "wait timeout took about 300 ms");
  }

  // A wait released later by another client's write.
  Client waiter_store(host, port);
  std::mutex mu;
  std::condition_variable cv;
  pid_t tid = 0;
  bool done = false;
  std::string error;
  std::thread waiter([&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      tid = static_cast<pid_t>(::syscall(SYS_gettid));
    }
    cv.notify_all();
    try {
      waiter_store->wait({p + "late1", p + "late2"}, kDeadline);
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    expect(cv.wait_for(lock, kDeadline, [&] { return tid != 0; }), "waiter thread started");
  }
  wait_for([&] { return blocked_reading(tid); }, "the waiter to block in WAIT");
  s->set(p + "late1", bytes("1"));
  Client other(host, port);
  other->add(p + "late2", 1);
  bool released = false;
  {
    std::unique_lock<std::mutex> lock(mu);
    released = cv.wait_for(lock, kDeadline, [&] { return done; });
  }
  if (!released) std::quick_exit(2);  // the blocked thread cannot be joined: fail hard
  waiter.join();
  expect(error.empty(), "wait released by another client: " + error);
}

struct WatchEvent {
  std::optional<std::string> old_value, new_value;
};

void test_watch_key(Client& s, const std::string& p) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<WatchEvent> events;
  s->watchKey(p + "w", [&](c10::optional<std::string> old_v, c10::optional<std::string> new_v) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back({old_v ? std::optional(*old_v) : std::nullopt,
                      new_v ? std::optional(*new_v) : std::nullopt});
    cv.notify_all();
  });
  auto next = [&](size_t i) {
    std::unique_lock<std::mutex> lock(mu);
    expect(cv.wait_for(lock, kDeadline, [&] { return events.size() > i; }),
           "watch event " + std::to_string(i) + " arrived");
    return events[i];
  };
  s->set(p + "w", bytes("a"));
  auto e = next(0);
  expect(!e.old_value && e.new_value == "a", "watch: created (none -> a)");
  s->set(p + "w", bytes("4"));
  e = next(1);
  expect(e.old_value == "a" && e.new_value == "4", "watch: updated (a -> 4)");
  s->add(p + "w", 3);
  e = next(2);
  expect(e.old_value == "4" && e.new_value == "7", "watch: add (4 -> 7)");
  s->deleteKey(p + "w");
  e = next(3);
  expect(e.old_value == "7" && !e.new_value, "watch: deleted (7 -> none)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
    return 2;
  }
  const std::string host = argv[1];
  const auto port = static_cast<uint16_t>(std::atoi(argv[2]));
  const std::string p = "cxx" + std::to_string(::getpid()) + "/";
  try {
    Client s(host, port);
    test_set_get_add(s, p);
    test_compare_set(s, p);
    test_check_delete_numkeys(s, p);
    test_waits(host, port, s, p);
    test_watch_key(s, p);
  } catch (const Failure& f) {
    std::fprintf(stderr, "FAIL: %s\n", f.what.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: unexpected exception: %s\n", e.what());
    return 1;
  }
  std::printf("all c10d::TCPStore client checks passed\n");
  return 0;
}
