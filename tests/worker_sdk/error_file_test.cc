#include "ddp/error_file.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tests/catch.h"

namespace {

std::exception_ptr thrown_runtime_error() {
  try {
    throw std::runtime_error("loss is nan at step 7");
  } catch (const std::runtime_error&) {
    return std::current_exception();
  }
}

}  // namespace

TEST_CASE("error file: torchrun's JSON layout with type, message, trace and timestamp") {
  auto report = ddp::make_error_report(thrown_runtime_error(), "  #0 train_step\n");
  report.time = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  auto doc = nlohmann::json::parse(ddp::error_file_json(report));
  CHECK(doc["message"]["message"] == "std::runtime_error: loss is nan at step 7");
  CHECK(doc["message"]["extraInfo"]["py_callstack"] == "  #0 train_step\n");
  CHECK(doc["message"]["extraInfo"]["timestamp"] == "1700000000");
}

TEST_CASE("error file: c10::Error contributes its message and its own backtrace") {
  std::exception_ptr error;
  try {
    TORCH_CHECK(false, "shape mismatch: 3 vs 4");
  } catch (const c10::Error&) {
    error = std::current_exception();
  }
  auto report = ddp::make_error_report(error, "fallback");
  CHECK(report.type == "c10::Error");
  CHECK_THAT(report.message, Catch::Contains("shape mismatch: 3 vs 4"));
  CHECK(report.traceback != "fallback");
  CHECK_FALSE(report.traceback.empty());
}

TEST_CASE("error file: written atomically to the path, replacing an old one") {
  auto dir = std::filesystem::temp_directory_path() /
             ("ddp_error_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "error.json").string();
  std::ofstream(path) << "old";
  auto report = ddp::make_error_report(thrown_runtime_error(), ddp::current_stack_trace());
  REQUIRE(ddp::write_error_file(path, report).is_ok());
  std::ifstream in(path);
  auto doc = nlohmann::json::parse(in);
  CHECK(doc["message"]["message"] == "std::runtime_error: loss is nan at step 7");
  CHECK_THAT(doc["message"]["extraInfo"]["py_callstack"].get<std::string>(), Catch::Contains("#0"));
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 1);  // no temporary left
  auto bad = ddp::write_error_file((dir / "missing" / "e.json").string(), report);
  CHECK(bad.code() == ddp::ErrorCode::kIo);
  std::filesystem::remove_all(dir);
}
