// Pure value parsers: nnodes, streams, id lists, signals, rendezvous conf, endpoints.
#include "launcher/option_values.h"

#include <csignal>

#include "tests/catch.h"

using namespace ddp::launcher;
using ddp::agent::Streams;

TEST_CASE("parse_integer accepts whole numbers in range only", "[launcher]") {
  CHECK(*parse_integer("--x", "7", 0, 10) == 7);
  CHECK(*parse_integer("--x", "0", 0, 10) == 0);
  for (const char* bad : {"", "7x", " 7", "+7", "7.0", "-1", "11", "abc"}) {
    auto r = parse_integer("--x", bad, 0, 10);
    INFO(bad);
    REQUIRE_FALSE(r);
    CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
    CHECK(r.status().message().find("--x") != std::string::npos);
  }
}

TEST_CASE("parse_seconds keeps fractions as milliseconds", "[launcher]") {
  CHECK(*parse_seconds("--t", "30") == std::chrono::seconds(30));
  CHECK(*parse_seconds("--t", "0.5") == std::chrono::milliseconds(500));
  CHECK(*parse_seconds("--t", "0.0001") == std::chrono::milliseconds(1));
  CHECK(*parse_seconds("--t", "0") == std::chrono::milliseconds(0));
  for (const char* bad : {"", "-1", "abc", "1s", "nan", "inf"}) {
    INFO(bad);
    CHECK_FALSE(parse_seconds("--t", bad));
  }
}

TEST_CASE("parse_factor takes 0 or 1..1000 as thousandths", "[launcher]") {
  CHECK(*parse_factor("--f", "2") == 2000);
  CHECK(*parse_factor("--f", "1.5") == 1500);
  CHECK(*parse_factor("--f", "0") == 0);
  CHECK(*parse_factor("--f", "1000") == 1000 * 1000);
  for (const char* bad : {"0.5", "1001", "-2", "x", "", "nan", "inf"}) {
    INFO(bad);
    CHECK_FALSE(parse_factor("--f", bad));
  }
}

TEST_CASE("parse_duration takes a positive number with a unit, or seconds", "[launcher]") {
  CHECK(*parse_duration("--t", "3s") == std::chrono::seconds(3));
  CHECK(*parse_duration("--t", "500ms") == std::chrono::milliseconds(500));
  CHECK(*parse_duration("--t", "1.5m") == std::chrono::seconds(90));
  CHECK(*parse_duration("--t", "2h") == std::chrono::hours(2));
  CHECK(*parse_duration("--t", "4") == std::chrono::seconds(4));
  CHECK(*parse_duration("--t", "0.0001s") == std::chrono::milliseconds(1));
  for (const char* bad : {"", "0", "0s", "-3s", "s", "3x", "abc", "nan", "infs", "9999999h"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration("--t", bad));
  }
}

TEST_CASE("parse_nnodes takes N or MIN:MAX", "[launcher]") {
  CHECK(*parse_nnodes("1") == std::pair{1, 1});
  CHECK(*parse_nnodes("4") == std::pair{4, 4});
  CHECK(*parse_nnodes("1:4") == std::pair{1, 4});
  CHECK(*parse_nnodes("2:2") == std::pair{2, 2});
  auto reversed = parse_nnodes("3:2");
  REQUIRE_FALSE(reversed);
  CHECK(reversed.status().message().find("MIN (3) is larger than MAX (2)") != std::string::npos);
  CHECK(reversed.status().message().find("2:3") != std::string::npos);
  for (const char* bad : {"", "0", "0:2", "1:2:3", "a", "1:", ":2", "-1", "1:x"}) {
    INFO(bad);
    CHECK_FALSE(parse_nnodes(bad));
  }
}

TEST_CASE("parse_streams takes one value or per-rank values", "[launcher]") {
  auto all = parse_streams("--tee", "3");
  REQUIRE(all);
  CHECK(all->all == Streams::kBoth);
  CHECK(all->per_rank.empty());
  auto per = parse_streams("--redirects", "0:1,1:2,12:3");
  REQUIRE(per);
  CHECK(per->all == Streams::kNone);
  CHECK(per->for_rank(0) == Streams::kStdout);
  CHECK(per->for_rank(1) == Streams::kStderr);
  CHECK(per->for_rank(12) == Streams::kBoth);
  CHECK(per->for_rank(5) == Streams::kNone);
  for (const char* bad : {"", "4", "-1", "01", "0:4", "0:1,", "a:1", "0:1,0:2", "0=1"}) {
    INFO(bad);
    auto r = parse_streams("--redirects", bad);
    REQUIRE_FALSE(r);
    CHECK(r.status().message().find("--redirects") != std::string::npos);
  }
}

TEST_CASE("parse_id_list keeps order and rejects junk and negatives and duplicates", "[launcher]") {
  CHECK(*parse_id_list("--gpu-ids", "1,6,3", "GPU id") == std::vector<int>{1, 6, 3});
  CHECK(*parse_id_list("--gpu-ids", "0", "GPU id") == std::vector<int>{0});
  auto dup = parse_id_list("--gpu-ids", "1,2,1", "GPU id");
  REQUIRE_FALSE(dup);
  CHECK(dup.status().message().find("listed twice") != std::string::npos);
  auto neg = parse_id_list("--gpu-ids", "1,-2", "GPU id");
  REQUIRE_FALSE(neg);
  CHECK(neg.status().message().find("GPU id -2 is negative") != std::string::npos);
  for (const char* bad : {"", ",", "1,", "1,,2", "a", "1;2", "1 2", "0x1"}) {
    INFO(bad);
    CHECK_FALSE(parse_id_list("--gpu-ids", bad, "GPU id"));
  }
}

TEST_CASE("parse_signals takes names with or without SIG in any case", "[launcher]") {
  CHECK(*parse_signals("SIGTERM,SIGINT,SIGHUP,SIGQUIT") ==
        std::vector<int>{SIGTERM, SIGINT, SIGHUP, SIGQUIT});
  CHECK(*parse_signals("usr1,SigUsr2,TERM,TERM") == std::vector<int>{SIGUSR1, SIGUSR2, SIGTERM});
  for (const char* bad : {"", "SIGKILL", "STOP", "SIGFOO", "TERM,", "15"}) {
    INFO(bad);
    auto r = parse_signals(bad);
    REQUIRE_FALSE(r);
    CHECK(r.status().message().find("--signals-to-handle") != std::string::npos);
  }
}

TEST_CASE("parse_rdzv_conf reads key=value pairs and checks known keys", "[launcher]") {
  CHECK(parse_rdzv_conf("")->empty());
  auto conf = parse_rdzv_conf("join_timeout=900,is_host=true,custom=x");
  REQUIRE(conf);
  CHECK(conf->at("join_timeout") == "900");
  CHECK(conf->at("is_host") == "true");
  CHECK(conf->at("custom") == "x");
  CHECK(parse_rdzv_conf("last_call_timeout=0.5"));
  for (const char* bad : {"join_timeout", "=1", "a=", "join_timeout=soon", "timeout=-1",
                          "is_host=maybe", "a=1,,b=2"}) {
    INFO(bad);
    CHECK_FALSE(parse_rdzv_conf(bad));
  }
}

TEST_CASE("check_endpoint takes host[:port]", "[launcher]") {
  for (const char* good : {"localhost", "node1:29400", "10.0.0.1:0", "[::1]:29400", "[::1]"}) {
    INFO(good);
    CHECK(check_endpoint("--rdzv-endpoint", good));
  }
  for (const char* bad : {"", ":29400", "host:", "host:70000", "host:p", "::1", "[::1", "[::1]x"}) {
    INFO(bad);
    CHECK_FALSE(check_endpoint("--rdzv-endpoint", bad));
  }
}
