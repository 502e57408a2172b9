// tune_host_allocator: applied by default, and the user's own malloc settings win.
#include "ddp/host_allocator.h"

#include <map>

#include "tests/catch.h"

namespace ddp {
namespace {

EnvLookup env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST_CASE("the allocator is tuned unless the user chose otherwise", "[host_allocator]") {
  CHECK(tune_host_allocator(env({})).applied);
  CHECK(tune_host_allocator(env({{"DDP_MALLOC_TUNING", "1"}})).applied);
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    auto t = tune_host_allocator(env({{name, "1"}}));
    CHECK_FALSE(t.applied);
    CHECK(std::string(t.reason) == name);
  }
  auto off = tune_host_allocator(env({{"DDP_MALLOC_TUNING", "0"}}));
  CHECK_FALSE(off.applied);
  CHECK(std::string(off.reason) == "DDP_MALLOC_TUNING=0");
}

}  // namespace
}  // namespace ddp
