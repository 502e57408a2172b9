#include "agent/membership/rdzv_settings.h"

#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;

AgentConfig two_nodes(std::string endpoint) {
  AgentConfig c;
  c.rdzv_backend = "c10d";
  c.rdzv_endpoint = std::move(endpoint);
  c.job.min_nodes = 1;
  c.job.max_nodes = 2;
  c.job.max_restarts = 3;
  return c;
}

TEST_CASE("rdzv settings: endpoint host and port", "[rdzv_settings]") {
  auto s = rdzv_settings(two_nodes("node-a:1234"));
  REQUIRE(s);
  CHECK(s->host == "node-a");
  CHECK(s->port == 1234);
  CHECK_FALSE(s->is_host.has_value());
  CHECK(s->config.min_nodes == 1);
  CHECK(s->config.max_nodes == 2);
  CHECK(s->config.max_restarts == 3);

  auto d = rdzv_settings(two_nodes("node-a"));
  REQUIRE(d);
  CHECK(d->port == 29400);  // torchrun's default c10d port

  auto v6 = rdzv_settings(two_nodes("[::1]:5000"));
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 5000);
}

TEST_CASE("rdzv settings: conf keys become the membership config", "[rdzv_settings]") {
  AgentConfig c = two_nodes("h:1");
  c.rdzv_conf = {{"join_timeout", "20"},
                 {"last_call_timeout", "0.5"},
                 {"close_timeout", "40"},
                 {"keep_alive_interval", "0.25"},
                 {"keep_alive_max_attempt", "4"},
                 {"read_timeout", "7"},
                 {"is_host", "false"}};
  auto s = rdzv_settings(c);
  REQUIRE(s);
  CHECK(s->config.join_timeout == 20s);
  CHECK(s->config.last_call_timeout == 500ms);
  CHECK(s->config.close_timeout == 40s);
  CHECK(s->config.keep_alive_interval == 250ms);
  CHECK(s->config.keep_alive_max_attempt == 4);
  CHECK(s->connect_timeout == 7s);
  REQUIRE(s->is_host.has_value());
  CHECK_FALSE(*s->is_host);
  c.rdzv_conf = {{"is_host", "1"}};
  CHECK(*rdzv_settings(c)->is_host);
}

TEST_CASE("rdzv settings: the JOIN's config is the job's, with --rdzv-conf's timeouts",
          "[rdzv_settings]") {
  AgentConfig c = two_nodes("h:1");
  c.job.max_no_progress_restarts = 2;
  c.job.no_progress_exit_code = 17;
  c.job.straggler_factor_milli = 1500;
  c.job.straggler_reports = 7;
  c.job.exclude_straggler = true;
  c.rdzv_conf = {{"timeout", "90"}, {"heartbeat_timeout", "5"}};
  auto s = rdzv_settings(c);
  REQUIRE(s);
  rendezvous::membership::Config want = c.job;
  want.join_timeout = 90s;  // timeout: join_timeout's torchrun name; heartbeat_timeout: unused
  CHECK(s->config == want);
}

TEST_CASE("rdzv settings: the key names", "[rdzv_settings]") {
  namespace k = rdzv_key;
  for (const char* key : {k::kJoinTimeout, k::kTimeout, k::kLastCallTimeout, k::kCloseTimeout,
                          k::kKeepAliveInterval, k::kKeepAliveMaxAttempt, k::kReadTimeout,
                          k::kHeartbeatTimeout, k::kIsHost, k::kSecretFile}) {
    CHECK(is_rdzv_key(key));
  }
  for (const char* other : {"lease_ttl", "etcd_prefix", "join-timeout", "", "JOIN_TIMEOUT"}) {
    CHECK_FALSE(is_rdzv_key(other));
  }
}

TEST_CASE("rdzv settings: bad input names the problem", "[rdzv_settings]") {
  auto message = [](AgentConfig c) {
    auto s = rdzv_settings(c);
    REQUIRE_FALSE(s);
    CHECK(s.status().code() == ErrorCode::kInvalidArgument);
    return s.status().message();
  };
  CHECK_THAT(message(two_nodes("")), Catch::Contains("--rdzv-endpoint"));
  CHECK_THAT(message(two_nodes("h:0")), Catch::Contains("port"));
  CHECK_THAT(message(two_nodes("h:70000")), Catch::Contains("port"));
  CHECK_THAT(message(two_nodes(":80")), Catch::Contains("no host"));
  AgentConfig c = two_nodes("h:1");
  c.rdzv_conf = {{"colour", "blue"}};
  CHECK_THAT(message(c), Catch::Contains("unknown key 'colour'"));
  c.rdzv_conf = {{"join_timeout", "soon"}};
  CHECK_THAT(message(c), Catch::Contains("join_timeout=soon"));
  c.rdzv_conf = {{"join_timeout", "-1"}};
  CHECK_THAT(message(c), Catch::Contains("join_timeout=-1"));
}

AgentConfig static_nodes(int nodes, int node_rank) {
  AgentConfig c;
  c.rdzv_backend = "static";
  c.job.min_nodes = c.job.max_nodes = nodes;
  c.node_rank = node_rank;
  c.master_addr = "10.0.0.7";
  c.master_port = 29511;
  c.job.max_restarts = 2;
  return c;
}

TEST_CASE("rdzv settings: static backend uses the master address and pins the rank",
          "[rdzv_settings]") {
  auto s = rdzv_settings(static_nodes(3, 2));
  REQUIRE(s);
  CHECK(s->host == "10.0.0.7");
  CHECK(s->port == 29511);
  CHECK(s->node_rank == 2u);
  CHECK(s->is_host == false);
  CHECK(s->config.min_nodes == 3);
  CHECK(s->config.max_nodes == 3);
  CHECK(s->config.max_restarts == 2);
  auto zero = rdzv_settings(static_nodes(3, 0));
  REQUIRE(zero);
  CHECK(zero->is_host == true);
  CHECK(zero->node_rank == 0u);

  AgentConfig conf = static_nodes(2, 1);
  conf.rdzv_conf = {{"join_timeout", "5"}, {"keep_alive_interval", "0.5"}};
  auto c = rdzv_settings(conf);
  REQUIRE(c);
  CHECK(c->config.join_timeout == 5s);
  CHECK(c->config.keep_alive_interval == 500ms);

  CHECK_FALSE(rdzv_settings(two_nodes("h:1"))->node_rank.has_value());  // c10d: assigned
}

TEST_CASE("rdzv settings: static backend bad input names the fix", "[rdzv_settings]") {
  auto message = [](AgentConfig c) {
    auto s = rdzv_settings(c);
    REQUIRE_FALSE(s);
    CHECK(s.status().code() == ErrorCode::kInvalidArgument);
    return s.status().message();
  };
  AgentConfig port0 = static_nodes(2, 1);
  port0.master_port = 0;
  CHECK_THAT(message(port0), Catch::Contains("--master-port PORT"));
  CHECK_THAT(message(static_nodes(2, 2)), Catch::Contains("--node-rank 0..1"));
  AgentConfig elastic = static_nodes(2, 0);
  elastic.job.min_nodes = 1;
  CHECK_THAT(message(elastic), Catch::Contains("elastic"));
  AgentConfig host = static_nodes(2, 0);
  host.rdzv_conf = {{"is_host", "true"}};
  CHECK_THAT(message(host), Catch::Contains("drop is_host"));
  AgentConfig exclude = static_nodes(2, 1);
  exclude.job.exclude_straggler = true;
  CHECK_THAT(message(exclude), Catch::Contains("drop --exclude-straggler"));
  CHECK_THAT(message(exclude), Catch::Contains("--rdzv-backend c10d"));
}

}  // namespace
}  // namespace ddp::agent
