#include "common/status.h"

#include "tests/catch.h"

using ddp::ErrorCode;
using ddp::Result;
using ddp::Status;

TEST_CASE("Status carries code and message") {
  Status ok;
  CHECK(ok.is_ok());
  CHECK(ok.to_string() == "ok");
  Status bad = ddp::timeout_error("waited 5s for key x");
  CHECK_FALSE(bad.is_ok());
  CHECK(bad.code() == ErrorCode::kTimeout);
  CHECK(bad.to_string() == "timeout: waited 5s for key x");
}

TEST_CASE("Result holds a value or an error") {
  Result<int> r = 42;
  REQUIRE(r.is_ok());
  CHECK(*r == 42);
  CHECK(r.status().is_ok());
  Result<int> e = ddp::not_found("no such key");
  CHECK_FALSE(e.is_ok());
  CHECK(e.status().code() == ErrorCode::kNotFound);
  Result<int> misuse = Status::ok();
  CHECK(misuse.status().code() == ErrorCode::kInternal);
}
