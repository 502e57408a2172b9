#include "tests/etcd/etcd_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "tests/skip.h"

extern char** environ;

namespace ddp::testing {
namespace {

const char* etcd_binary() {
  for (const char* p : {"/usr/bin/etcd", "/usr/local/bin/etcd"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return nullptr;
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot spawn etcd");
  return pid;
}

}  // namespace

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string make_test_certificates() {
  if (::access("/usr/bin/openssl", X_OK) != 0) skip("openssl is not installed");
  char tmpl[] = "/dev/shm/ddp-etcd-tls-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
  const std::string dir = tmpl;
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string script =
      "set -e; cd " + dir + "; exec 2>openssl.log; " + "openssl req -x509 " + key +
      " -keyout ca.key -out ca.pem -days 2 -subj /CN=ddp-test-ca; " + "openssl req -x509 " + key +
      " -keyout other.key -out other.pem -days 2 -subj /CN=other; " +
      "printf "
      "'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > "
      "ext; " +
      "for n in server client; do openssl req " + key +
      " -keyout $n.key -out $n.csr -subj /CN=$n; " +
      "openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $n.pem -days 2 " +
      "-extfile ext; done";
  std::ofstream(dir + "/gen.sh") << script << "\n";
  if (std::system(("bash " + dir + "/gen.sh").c_str()) != 0) {
    throw std::runtime_error("openssl failed; see " + dir + "/openssl.log");
  }
  return dir;
}

EtcdCluster::EtcdCluster(int members, std::vector<std::string> extra_args, std::string tls_dir) {
  const char* binary = etcd_binary();
  if (!binary) skip("etcd is not installed (apt-get install etcd-server)");
  char tmpl[] = "/dev/shm/ddp-etcd-test-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
  dir_ = tmpl;
  // A port another process takes between free_port() and etcd's bind makes that member exit
  // at once; the cluster is then started again on new ports (a few tries).
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::vector<int> client_ports, peer_ports;
    std::string initial;
    for (int i = 0; i < members; ++i) {
      client_ports.push_back(free_port());
      peer_ports.push_back(free_port());
      if (!initial.empty()) initial += ",";
      initial += "m" + std::to_string(i) + "=http://127.0.0.1:" + std::to_string(peer_ports[i]);
    }
    endpoints_.clear();
    for (int i = 0; i < members; ++i) {
      const std::string client = std::string(tls_dir.empty() ? "http" : "https") +
                                 "://127.0.0.1:" + std::to_string(client_ports[i]);
      const std::string peer = "http://127.0.0.1:" + std::to_string(peer_ports[i]);
      const std::string data = dir_ + "/m" + std::to_string(i) + "-" + std::to_string(attempt);
      std::vector<std::string> args = {binary,
                                       "--name=m" + std::to_string(i),
                                       "--data-dir=" + data,
                                       "--listen-client-urls=" + client,
                                       "--advertise-client-urls=" + client,
                                       "--listen-peer-urls=" + peer,
                                       "--initial-advertise-peer-urls=" + peer,
                                       "--initial-cluster=" + initial,
                                       "--initial-cluster-state=new",
                                       "--heartbeat-interval=50",
                                       "--election-timeout=500"};
      if (!tls_dir.empty()) {
        args.insert(args.end(), {"--cert-file=" + tls_dir + "/server.pem",
                                 "--key-file=" + tls_dir + "/server.key",
                                 "--trusted-ca-file=" + tls_dir + "/ca.pem", "--client-cert-auth"});
      }
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      pids_.push_back(spawn(args, dir_ + "/m" + std::to_string(i) + ".log"));
      endpoints_.push_back({"127.0.0.1", static_cast<std::uint16_t>(client_ports[i])});
    }
    // A member that lost a port race exits within moments; the others are killed and all
    // start again. Waiting here is the point: etcd has no readiness signal but its answers.
    ::usleep(300 * 1000);
    bool all_alive = true;
    for (pid_t pid : pids_) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) all_alive = false;
    }
    if (all_alive) return;
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    pids_.clear();
  }
  throw std::runtime_error("etcd did not start; see the logs in " + dir_);
}

EtcdCluster::~EtcdCluster() {
  for (pid_t pid : pids_) {
    if (pid <= 0) continue;
    ::kill(pid, SIGCONT);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string EtcdCluster::endpoints_text() const {
  std::string out;
  for (const auto& e : endpoints_) {
    if (!out.empty()) out += ',';
    out += e.to_string();  // appended, not "," + ...: GCC 12 warns falsely on that (-Wrestrict)
  }
  return out;
}

void EtcdCluster::signal(int member, int sig) {
  ::kill(pids_.at(member), sig);
  if (sig == SIGKILL) {
    ::waitpid(pids_[member], nullptr, 0);
    pids_[member] = -1;
  }
}

}  // namespace ddp::testing
