// What a coordinator taking over an etcd job replays, and in which order (pure).
#include "rendezvous/etcd_hub/etcd_takeover.h"

#include <catch2/catch.hpp>

namespace ddp::rendezvous {
namespace {

using Kind = ReplayStep::Kind;

etcd::KeyValue kv(std::string key, std::int64_t create, std::int64_t mod) {
  etcd::KeyValue k;
  k.key = std::move(key);
  k.create_revision = create;
  k.mod_revision = mod;
  return k;
}

struct Fixture {
  EtcdKeys keys{"/ddprun", "job"};
  JobState state;
  std::vector<etcd::KeyValue> nodes, requests;
  Fixture() {
    // Round 4 formed at revision 30 with c (the coordinator), a, b by group rank.
    state = JobState{4, 1, 0, {{"c", 10}, {"a", 11}, {"b", 12}}, 30};
    nodes = {kv(keys.node("a"), 11, 11), kv(keys.node("b"), 12, 12)};
    requests = {kv(keys.request("a", 3), 25, 25),   // round 3's answer: before the round
                kv(keys.request("b", 4), 34, 34),   // b's failure while c was frozen
                kv(keys.request("a", 4), 41, 41)};  // a stopped after c's key went (40)
  }
};

TEST_CASE("takeover: the round resumes with its participants, losses in revision order",
          "[etcd_takeover]") {
  Fixture f;
  auto plan = plan_takeover(f.keys, f.state, f.nodes, f.requests, 40);
  REQUIRE(plan.resume_running);
  REQUIRE(plan.roster_nodes.size() == 3);
  CHECK_FALSE(plan.roster_nodes[0]);
  CHECK(plan.roster_nodes[1] == std::optional<std::size_t>(0));
  CHECK(plan.roster_nodes[2] == std::optional<std::size_t>(1));
  REQUIRE(plan.steps.size() == 3);  // the request older than the round is not replayed
  CHECK((plan.steps[0].kind == Kind::kRequest && plan.steps[0].index == 1));
  CHECK((plan.steps[1].kind == Kind::kGone && plan.steps[1].index == 0));
  CHECK((plan.steps[2].kind == Kind::kRequest && plan.steps[2].index == 2));
}

TEST_CASE("takeover: an unknown loss revision puts the losses last", "[etcd_takeover]") {
  Fixture f;
  auto plan = plan_takeover(f.keys, f.state, f.nodes, f.requests, 0);
  REQUIRE(plan.steps.size() == 3);
  CHECK(plan.steps[2].kind == Kind::kGone);
}

TEST_CASE("takeover: late joiners replay at their JOIN, a reused key is a new node",
          "[etcd_takeover]") {
  Fixture f;
  f.nodes.push_back(kv(f.keys.node("late"), 35, 35));
  f.nodes[1].create_revision = 50;  // b's key now is another agent's (same key, new JOIN)
  auto plan = plan_takeover(f.keys, f.state, f.nodes, f.requests, 40);
  REQUIRE(plan.resume_running);
  CHECK_FALSE(plan.roster_nodes[2]);
  std::vector<std::pair<Kind, std::int64_t>> order;
  for (const auto& s : plan.steps) order.emplace_back(s.kind, s.revision);
  CHECK(order == std::vector<std::pair<Kind, std::int64_t>>{{Kind::kRequest, 34},
                                                            {Kind::kJoin, 35},
                                                            {Kind::kGone, 40},
                                                            {Kind::kGone, 40},
                                                            {Kind::kRequest, 41},
                                                            {Kind::kJoin, 50}});
}

TEST_CASE("takeover: no roster or nobody of it left: JOINs only, in revision order",
          "[etcd_takeover]") {
  Fixture f;
  for (const auto& state :
       {std::optional<JobState>{}, std::optional<JobState>{JobState{4, 1, 0, {{"gone", 9}}, 30}}}) {
    auto plan = plan_takeover(f.keys, state, {f.nodes[1], f.nodes[0]}, f.requests, 40);
    CHECK_FALSE(plan.resume_running);
    REQUIRE(plan.steps.size() == 2);
    CHECK((plan.steps[0].kind == Kind::kJoin && plan.steps[0].revision == 11));
    CHECK((plan.steps[1].kind == Kind::kJoin && plan.steps[1].revision == 12));
  }
}

TEST_CASE("takeover: the job state round-trips with its roster, other data is refused",
          "[etcd_takeover]") {
  JobState s{7, 2, 1, {{"h:1", 5}, {"h:2", 9}}, 0};
  auto stored = kv("/p/state", 3, 44);
  stored.value = encode_job_state(s);
  auto back = decode_job_state(stored);
  REQUIRE(back);
  CHECK(back->round == 7);
  CHECK(back->restart_count == 2);
  CHECK(back->departures == 1);
  REQUIRE(back->roster.size() == 2);
  CHECK(back->roster[1].node_key == "h:2");
  CHECK(back->roster[1].id == 9);
  CHECK(back->revision == 44);
  auto other = kv("/p/state", 3, 44);
  other.value = "not ddprun's";
  CHECK_FALSE(decode_job_state(other));
  other.value = R"({"round": 1, "roster": [["x"]]})";
  CHECK_FALSE(decode_job_state(other));
  other.value = R"({"round": 3})";  // before rosters were recorded
  auto old = decode_job_state(other);
  REQUIRE(old);
  CHECK(old->roster.empty());
}

}  // namespace
}  // namespace ddp::rendezvous
