// Real etcd processes for tests: a cluster of 1..N members on loopback, on free ports (etcd
// cannot bind port 0: ports are picked free, and a member that fails to start is retried on
// new ports), data in /dev/shm, killed and removed by the destructor. Skips the test case
// (tests/skip.h) when no etcd binary is installed.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "etcd/endpoints.h"

namespace ddp::testing {

class EtcdCluster {
 public:
  // Starts `members` etcd processes forming one cluster; returns once they are spawned (a
  // client's first call waits for them to answer: the client retries until its timeout).
  // With `tls_dir` (make_test_certificates()), clients must use https with its ca.pem and
  // present client.pem/client.key.
  explicit EtcdCluster(int members = 1, std::vector<std::string> extra_args = {},
                       std::string tls_dir = {});
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  const std::vector<etcd::Endpoint>& endpoints() const { return endpoints_; }
  std::string endpoints_text() const;
  // Sends `sig` to member i (SIGKILL: the member is gone; SIGSTOP: frozen).
  void signal(int member, int sig);

 private:
  std::vector<etcd::Endpoint> endpoints_;
  std::vector<pid_t> pids_;
  std::string dir_;
};

// A CA (ca.pem), a server certificate for 127.0.0.1 (server.pem/.key), a client certificate
// (client.pem/.key) signed by it, and an unrelated CA (other.pem), made with the openssl
// command in a new directory under /dev/shm; the directory. Skips when openssl is missing.
std::string make_test_certificates();

// A TCP port nobody listens on now (bound to port 0 and released).
int free_port();

}  // namespace ddp::testing
