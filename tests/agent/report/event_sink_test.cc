// The event log's file sink (agent/event_sink.h): it appends whole lines after what the file
// held, agents sharing one file never interleave within a line, paths it cannot open are
// refused naming the path and the fix, and {host} in the path becomes this machine's name.
#include "agent/report/event_sink.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/catch.h"
#include "tests/skip.h"

namespace ddp::agent {
namespace {

using nlohmann::json;

struct TempDir {
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ddp_event_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

std::vector<std::string> read_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("event log: the file sink appends whole lines, after what the file held", "[event_log]") {
  TempDir dir;
  const auto file = dir.path / "events.jsonl";
  std::ofstream(file) << "{\"earlier\":1}\n";
  {
    auto sink = FileEventSink::open(file.string());
    REQUIRE(sink);
    (*sink)->write_line("{\"a\":1}");
    // In the file as soon as write_line returns: nothing is buffered.
    CHECK(read_lines(file).size() == 2);
    (*sink)->write_line("{\"b\":2}");
  }
  CHECK(read_lines(file) == std::vector<std::string>{"{\"earlier\":1}", "{\"a\":1}", "{\"b\":2}"});
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0644 & ~[] {
          mode_t m = ::umask(0);
          ::umask(m);
          return m;
        }()));
}

TEST_CASE("event log: agents sharing one file never interleave within a line", "[event_log]") {
  TempDir dir;
  const auto file = dir.path / "shared.jsonl";
  constexpr int kWriters = 4;
  constexpr int kLines = 500;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      auto sink = FileEventSink::open(file.string());  // each its own descriptor, as agents
      REQUIRE(sink);
      const std::string pad(300 + 50 * w, static_cast<char>('a' + w));
      for (int i = 0; i < kLines; ++i) {
        (*sink)->write_line(json{{"w", w}, {"i", i}, {"pad", pad}}.dump());
      }
    });
  }
  for (auto& t : writers) t.join();
  auto lines = read_lines(file);
  REQUIRE(lines.size() == kWriters * kLines);
  std::vector<int> next(kWriters, 0);
  for (const auto& line : lines) {
    json j = json::parse(line);  // throws on a torn line
    const int w = j["w"];
    CHECK(j["i"] == next[w]++);
    CHECK(j["pad"].get<std::string>().size() == static_cast<std::size_t>(300 + 50 * w));
  }
}

TEST_CASE("event log: paths the event log cannot open are refused naming the path and the fix",
          "[event_log]") {
  TempDir dir;
  auto missing = FileEventSink::open((dir.path / "no" / "such" / "events.jsonl").string());
  REQUIRE_FALSE(missing);
  CHECK(missing.status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(missing.status().message(),
             Catch::Contains((dir.path / "no" / "such" / "events.jsonl").string()) &&
                 Catch::Contains("No such file or directory") &&
                 Catch::Contains("create the directory " + (dir.path / "no" / "such").string()));
  auto directory = FileEventSink::open(dir.path.string());
  REQUIRE_FALSE(directory);
  CHECK_THAT(directory.status().message(),
             Catch::Contains("Is a directory") && Catch::Contains("name a file in that directory"));
  std::ofstream(dir.path / "plain") << "x";
  auto under_file = FileEventSink::open((dir.path / "plain" / "events.jsonl").string());
  REQUIRE_FALSE(under_file);
  CHECK_THAT(under_file.status().message(), Catch::Contains("Not a directory"));
  auto empty = FileEventSink::open("");
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.status().message(), Catch::Contains("- for stderr"));
  CHECK(FileEventSink::open("-"));
}

TEST_CASE("event log: {host} in the path becomes this machine's name", "[event_log]") {
  CHECK(expand_event_log_path("logs/events.{host}.jsonl", "gpu7") == "logs/events.gpu7.jsonl");
  CHECK(expand_event_log_path("{host}/{host}", "n1") == "n1/n1");
  CHECK(expand_event_log_path("plain.jsonl", "n1") == "plain.jsonl");
  CHECK(expand_event_log_path("{hostname}.{host", "n1") == "{hostname}.{host");
  CHECK(expand_event_log_path("-", "n1") == "-");
}

TEST_CASE("event log: a file the user may not write is refused", "[event_log]") {
  if (::geteuid() == 0) ddp::testing::skip("root may write any file: nothing to refuse");
  TempDir dir;
  const auto locked = dir.path / "locked";
  std::filesystem::create_directory(locked);
  std::filesystem::permissions(
      locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  auto sink = FileEventSink::open((locked / "events.jsonl").string());
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  REQUIRE_FALSE(sink);
  CHECK_THAT(sink.status().message(),
             Catch::Contains("Permission denied") && Catch::Contains("choose a writable file"));
}

}  // namespace
}  // namespace ddp::agent
