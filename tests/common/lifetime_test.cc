#include "common/lifetime.h"

#include <functional>
#include <memory>

#include "tests/catch.h"

namespace ddp {
namespace {

TEST_CASE("lifetime: a guarded handler runs while the owner lives and is dropped after") {
  auto life = std::make_unique<Lifetime>();
  int calls = 0;
  auto handler = life->guard([&calls](int n) { calls += n; });
  handler(2);
  CHECK(calls == 2);
  std::function<void(int)> later = handler;
  life.reset();
  later(5);
  CHECK(calls == 2);
}

TEST_CASE("lifetime: end() turns every watch false, old and new") {
  Lifetime life;
  auto before = life.watch();
  CHECK(before);
  life.end();
  CHECK_FALSE(before);
  CHECK_FALSE(life.watch());
  int calls = 0;
  life.guard([&calls] { ++calls; })();
  CHECK(calls == 0);
}

}  // namespace
}  // namespace ddp
