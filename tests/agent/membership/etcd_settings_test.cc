// --rdzv-backend etcd settings (pure) and the job's key layout.
#include "agent/membership/etcd_settings.h"

#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;

AgentConfig etcd_job(std::string endpoints, std::map<std::string, std::string> conf = {}) {
  AgentConfig c;
  c.rdzv_backend = "etcd";
  c.rdzv_endpoint = std::move(endpoints);
  c.job.min_nodes = 1;
  c.job.max_nodes = 3;
  c.rdzv_conf = std::move(conf);
  return c;
}

TEST_CASE("etcd settings: endpoints, prefix, lease and the shared keys", "[etcd_settings]") {
  for (const char* b : {"etcd", "etcd-v2", "etcd-v3"}) CHECK(is_etcd_backend(b));
  CHECK_FALSE(is_etcd_backend("c10d"));
  auto s = etcd_settings(etcd_job("e1,e2:2380", {{"etcd_prefix", "/jobs/"},
                                                 {"lease_ttl", "3"},
                                                 {"join_timeout", "7"},
                                                 {"last_call_timeout", "0.5"},
                                                 {"read_timeout", "4"},
                                                 {"protocol", "http"}}));
  REQUIRE(s);
  REQUIRE(s->endpoints.size() == 2);
  CHECK(s->endpoints[0].port == 2379);
  CHECK(s->endpoints[1].port == 2380);
  CHECK(s->prefix == "/jobs");
  CHECK(s->lease_ttl == 3s);
  CHECK(s->rdzv.config.join_timeout == 7s);
  CHECK(s->rdzv.config.last_call_timeout == 500ms);
  CHECK(s->rdzv.connect_timeout == 4s);
  CHECK(s->rdzv.config.max_nodes == 3);
  CHECK(s->rdzv.host == "e1");  // the first endpoint
  CHECK(s->rdzv.port == 2379);
  // The elected host's daemon drops a silent node after lease_ttl (3 s here).
  CHECK(s->rdzv.config.heartbeat_budget() == 3s);
  auto d = etcd_settings(etcd_job("e1"));
  REQUIRE(d);
  CHECK(d->prefix == "/ddprun");
  CHECK(d->lease_ttl == 5s);
  auto shortest = etcd_settings(etcd_job("e1", {{"lease_ttl", "1"}}));
  REQUIRE(shortest);
  CHECK(shortest->lease_ttl == 1s);
  auto beats = etcd_settings(etcd_job("e1", {{"keep_alive_interval", "2"}}));
  REQUIRE(beats);
  CHECK(beats->rdzv.config.heartbeat_budget() == 6s);  // given: kept
  CHECK_FALSE(d->tls);
  auto t = etcd_settings(etcd_job(
      "e1", {{"protocol", "https"}, {"cacert", "/ca.pem"}, {"cert", "/c.pem"}, {"key", "/c.key"}}));
  REQUIRE(t);
  CHECK(t->tls);
  CHECK(t->cacert == "/ca.pem");
  CHECK(t->key == "/c.key");
}

TEST_CASE("etcd settings: bad input names the key and the fix", "[etcd_settings]") {
  auto error = [](AgentConfig c) {
    auto s = etcd_settings(c);
    REQUIRE_FALSE(s);
    CHECK(s.status().code() == ErrorCode::kInvalidArgument);
    return s.status().message();
  };
  CHECK_THAT(error(etcd_job("")), Catch::Contains("--rdzv-endpoint"));
  CHECK_THAT(error(etcd_job("a,,b")), Catch::Contains("empty entry"));
  CHECK_THAT(error(etcd_job("a", {{"lease_ttl", "0"}})), Catch::Contains("lease_ttl"));
  CHECK_THAT(error(etcd_job("a", {{"lease_ttl", "1.5"}})), Catch::Contains("whole seconds"));
  CHECK_THAT(error(etcd_job("a", {{"lease_ttl", "3601"}})), Catch::Contains("1 to 3600"));
  // The presence mesh's key is gone: refused, naming what replaced it.
  for (const char* any : {"1", "0", "soon"}) {
    CHECK(error(etcd_job("a", {{"presence_timeout", any}})) ==
          "--rdzv-conf presence_timeout: removed; a lost node is noticed at lease_ttl, lower it "
          "with --rdzv-conf lease_ttl=SECONDS");
  }
  CHECK_THAT(error(etcd_job("a", {{"colour", "red"}})),
             !Catch::Contains("presence_timeout") && Catch::Contains("lease_ttl, protocol"));
  CHECK_THAT(error(etcd_job("a", {{"protocol", "ftp"}})), Catch::Contains("http or https"));
  CHECK_THAT(error(etcd_job("a", {{"cert", "/c.pem"}})), Catch::Contains("protocol=https"));
  CHECK_THAT(error(etcd_job("a", {{"protocol", "https"}, {"cert", "/c.pem"}})),
             Catch::Contains("cert and key go together"));
  CHECK_THAT(error(etcd_job("a", {{"is_host", "1"}})), Catch::Contains("drop is_host"));
  CHECK(error(etcd_job("a", {{"colour", "red"}})) ==
        "--rdzv-conf: unknown key 'colour'; use join_timeout, last_call_timeout, close_timeout, "
        "read_timeout, etcd_prefix, lease_ttl, protocol, cacert, cert, key");
  // The TLS checks come before the shared keys, as they always did.
  CHECK_THAT(error(etcd_job("a", {{"cacert", "/ca.pem"}, {"zzz", "1"}})),
             Catch::Contains("protocol=https"));
  CHECK_THAT(error(etcd_job("a", {{"join_timeout", "soon"}})), Catch::Contains("join_timeout"));
}

TEST_CASE("etcd keys of a job", "[etcd_settings]") {
  EtcdSettings s;
  s.prefix = "/jobs";
  EtcdKeys k(s, "job1");
  CHECK(k.host() == "/jobs/job1/host");
  CHECK(k.state() == "/jobs/job1/state");
  CHECK(k.finished() == "/jobs/job1/finished");
}

}  // namespace
}  // namespace ddp::agent
