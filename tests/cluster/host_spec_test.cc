// --hosts and --hostfile parsing.
#include "launcher/cluster/host_spec.h"

#include "launcher/cluster/host_match.h"
#include "tests/catch.h"

using namespace ddp::launcher::cluster;

namespace {

std::string render(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    out += (out.empty() ? "" : " ") + h.host + "=" + (h.slots ? std::to_string(*h.slots) : "-");
  }
  return out;
}

std::string hosts_error(const std::string& text) {
  auto r = parse_hosts_option(text);
  INFO(text);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
  return r.status().message();
}

std::string file_error(const std::string& text) {
  auto r = parse_hostfile(text, "hosts.txt");
  INFO(text);
  REQUIRE_FALSE(r);
  return r.status().message();
}

}  // namespace

TEST_CASE("hosts option: names with optional slots", "[cluster][hosts]") {
  auto r = parse_hosts_option("h1,h2:4,10.0.0.3:2,[fd00::2]:8,[fd00::3],n-1.example_x");
  REQUIRE(r);
  CHECK(render(*r) == "h1=- h2=4 10.0.0.3=2 fd00::2=8 fd00::3=- n-1.example_x=-");
}

TEST_CASE("hosts option: bad items are errors naming them", "[cluster][hosts]") {
  CHECK_THAT(hosts_error(""), Catch::Contains("is empty"));
  CHECK_THAT(hosts_error("h1,,h2"), Catch::Contains("is empty"));
  CHECK_THAT(hosts_error("h1:0"), Catch::Contains("slots must be a number from 1"));
  CHECK_THAT(hosts_error("h1:x"), Catch::Contains("'h1:x'"));
  CHECK_THAT(hosts_error("h1:"), Catch::Contains("'h1:'"));
  CHECK_THAT(hosts_error("fd00::2"), Catch::Contains("in brackets"));
  CHECK_THAT(hosts_error("[fd00::2"), Catch::Contains("closing ']'"));
  CHECK_THAT(hosts_error("-oProxyCommand=x"), Catch::Contains("starts with '-'"));
  CHECK_THAT(hosts_error("user@h1"), Catch::Contains("--ssh-user"));
  CHECK_THAT(hosts_error("h;rm"), Catch::Contains("';' is not allowed"));
  CHECK_THAT(hosts_error("h1,h2,h1:4"), Catch::Contains("'h1' is listed twice"));
  CHECK_THAT(hosts_error("node1,NODE1.example.org"), Catch::Contains("listed twice"));
}

TEST_CASE("hostfile: host slots=N lines, comments and blank lines", "[cluster][hosts]") {
  auto r = parse_hostfile(
      "# the training nodes\n"
      "\n"
      "worker-1 slots=4   # first\n"
      "  worker-2\tslots=2\n"
      "worker-3\n"
      "[fd00::7] slots=1\n",
      "hosts.txt");
  REQUIRE(r);
  CHECK(render(*r) == "worker-1=4 worker-2=2 worker-3=- fd00::7=1");
}

TEST_CASE("hostfile: bad lines and duplicates name the line", "[cluster][hosts]") {
  CHECK_THAT(file_error("a slots=2\nb slots=two\n"), Catch::Contains("hosts.txt:2: 'slots=two'"));
  CHECK_THAT(file_error("a slots=0\n"), Catch::Contains("hosts.txt:1:"));
  CHECK_THAT(file_error("a slots=1 slots=2\n"), Catch::Contains("hosts.txt:1: 'slots=2'"));
  CHECK_THAT(file_error("a max_slots=2\n"), Catch::Contains("`HOST slots=N`"));
  CHECK_THAT(file_error("a\n# c\nb\na slots=3\n"),
             Catch::Contains("hosts.txt:4: host 'a' is listed twice"));
  CHECK_THAT(file_error("a\n-bad\n"), Catch::Contains("hosts.txt:2: '-bad'"));
  CHECK_THAT(file_error("a\nb$(x)\n"), Catch::Contains("hosts.txt:2:"));
  CHECK_THAT(file_error("# nothing\n\n"), Catch::Contains("lists no hosts"));
}

TEST_CASE("host names match across short and qualified spellings", "[cluster][hosts]") {
  CHECK(same_host("node1", "node1"));
  CHECK(same_host("node1", "NODE1.cluster.example"));
  CHECK(same_host("node1.cluster.example", "node1"));
  CHECK_FALSE(same_host("node1.a", "node1.b"));
  CHECK_FALSE(same_host("node1", "node10"));
  CHECK_FALSE(same_host("10.0.0.1", "10"));
  CHECK_FALSE(same_host("", ""));
  CHECK(is_loopback_name("localhost"));
  CHECK(is_loopback_name("127.0.1.1"));
  CHECK(is_loopback_name("::1"));
  CHECK_FALSE(is_loopback_name("127.example"));
  CHECK(positions_of({"a", "b.x", "c"}, "b") == std::vector<std::size_t>{1});
}
