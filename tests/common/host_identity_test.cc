// The host name and random run ids.
#include "common/host_identity.h"

#include <regex>

#include "tests/catch.h"

namespace ddp {
namespace {

TEST_CASE("host_identity: a run id is a UUID version 4, fresh each time") {
  const std::regex uuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  const std::string a = random_run_id();
  const std::string b = random_run_id();
  CHECK(std::regex_match(a, uuid4));
  CHECK(std::regex_match(b, uuid4));
  CHECK(a != b);
}

TEST_CASE("host_identity: the host name is never empty") { CHECK_FALSE(host_name().empty()); }

}  // namespace
}  // namespace ddp
