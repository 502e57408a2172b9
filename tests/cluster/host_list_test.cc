// Slurm host-list expansion: the forms Slurm writes, and clear errors for everything else.
#include "launcher/cluster/host_list.h"

#include "tests/catch.h"

using ddp::launcher::cluster::expand_host_list;
using Hosts = std::vector<std::string>;

namespace {

Hosts expand(const std::string& list) {
  auto r = expand_host_list(list, "SLURM_JOB_NODELIST");
  INFO(list << " -> " << r.status().to_string());
  REQUIRE(r);
  return *r;
}

std::string error(const std::string& list) {
  auto r = expand_host_list(list, "SLURM_JOB_NODELIST");
  INFO(list);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
  CHECK(r.status().message().find("SLURM_JOB_NODELIST='" + list + "'") != std::string::npos);
  return r.status().message();
}

}  // namespace

TEST_CASE("single hosts and plain lists", "[cluster][hostlist]") {
  CHECK(expand("gpu-a") == Hosts{"gpu-a"});
  CHECK(expand("a,b,c") == Hosts{"a", "b", "c"});
  CHECK(expand("node7") == Hosts{"node7"});
  // Slurm also separates by spaces and tabs, and skips empty items.
  CHECK(expand("a b\tc,,d,") == Hosts{"a", "b", "c", "d"});
  CHECK(expand("n1.cluster.example") == Hosts{"n1.cluster.example"});
}

TEST_CASE("ranges keep the zero padding of their start", "[cluster][hostlist]") {
  CHECK(expand("node[01-04,07],gpu-a") ==
        Hosts{"node01", "node02", "node03", "node04", "node07", "gpu-a"});
  CHECK(expand("n[08-11]") == Hosts{"n08", "n09", "n10", "n11"});
  CHECK(expand("n[8-11]") == Hosts{"n8", "n9", "n10", "n11"});
  CHECK(expand("n[001-002]") == Hosts{"n001", "n002"});
  CHECK(expand("n[1-010]") == Hosts{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"});
  CHECK(expand("n[98-101]") == Hosts{"n98", "n99", "n100", "n101"});
  CHECK(expand("n[5]") == Hosts{"n5"});
  CHECK(expand("[1-2]") == Hosts{"1", "2"});
  // Order as written, not sorted.
  CHECK(expand("n[7,1-2]") == Hosts{"n7", "n1", "n2"});
}

TEST_CASE("commas inside brackets belong to the range, between names they separate",
          "[cluster][hostlist]") {
  CHECK(expand("a[1,3],b[2-3],c") == Hosts{"a1", "a3", "b2", "b3", "c"});
  CHECK(expand("x-[1-2] y[3]") == Hosts{"x-1", "x-2", "y3"});
}

TEST_CASE("several bracket groups expand in Slurm's order", "[cluster][hostlist]") {
  CHECK(expand("rack[1-2]-node[01-02]") ==
        Hosts{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"});
  CHECK(expand("r[1,3]n[5]") == Hosts{"r1n5", "r3n5"});
  // Three groups: the last innermost, then the one before it, the first inside that.
  CHECK(expand("a[1-2]b[1-2]c[1-2]") ==
        Hosts{"a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"});
}

TEST_CASE("duplicates are kept as Slurm keeps them", "[cluster][hostlist]") {
  CHECK(expand("n1,n[1-2]") == Hosts{"n1", "n1", "n2"});
}

TEST_CASE("malformed lists are errors naming the problem", "[cluster][hostlist]") {
  CHECK_THAT(error("node[01-04"), Catch::Contains("never closed"));
  CHECK_THAT(error("node01-04]"), Catch::Contains("']' without '['"));
  CHECK_THAT(error("node[[1-2]]"), Catch::Contains("nested"));
  CHECK_THAT(error("node[]"), Catch::Contains("empty brackets"));
  CHECK_THAT(error("node[4-1]"), Catch::Contains("ends below its start"));
  CHECK_THAT(error("node[a-b]"), Catch::Contains("not a number"));
  CHECK_THAT(error("node[-1]"), Catch::Contains("not a number"));
  CHECK_THAT(error("node[1--2]"), Catch::Contains("not a number"));
  CHECK_THAT(error("node[1-]"), Catch::Contains("not a number"));
  CHECK_THAT(error("node[1,,2]"), Catch::Contains("not a number"));
  CHECK_THAT(error("node[1-2]x"), Catch::Contains("text after ']'"));
  CHECK_THAT(error(""), Catch::Contains("names no hosts"));
  CHECK_THAT(error(" , "), Catch::Contains("names no hosts"));
  CHECK_THAT(error("n[0-9999999]"), Catch::Contains("more than"));
  CHECK_THAT(error("a[0-9999]b[0-9999]"), Catch::Contains("more than"));
}
