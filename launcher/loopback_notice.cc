// steps::notice_loopback: a job of several nodes whose rendezvous (c10d) or master (static)
// address is loopback cannot be reached from the other machines; say so before they wait.
#include <string_view>

#include "common/host_port.h"
#include "launcher/option_steps.h"

namespace ddp::launcher::steps {
namespace {

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

void notice_loopback(const RawOptions& raw, Invocation& out) {
  const agent::AgentConfig& c = out.config;
  if (c.job.max_nodes < 2 || c.standalone || out.launch.fan_out) return;
  const bool static_backend = c.rdzv_backend == "static";
  const bool etcd = c.rdzv_backend.rfind("etcd", 0) == 0;
  // etcd: a list of endpoints; every one on loopback makes the job this machine's only.
  std::string_view first = c.rdzv_endpoint;
  if (etcd) first = first.substr(0, first.find(','));
  auto parts = split_host_port(first, BareIpv6::kHost);  // "[::1]:29400" -> "::1"
  const std::string_view host = static_backend ? c.master_addr : parts ? parts->host : first;
  if (!is_loopback(host)) return;
  const bool given =
      raw.at("rdzv_endpoint").given || (static_backend && raw.at("master_addr").given);
  const char* name = static_backend ? "--master-addr" : "--rdzv-endpoint";
  out.notices.push_back("--nnodes " + raw.at("nnodes").text + " with " + name + " " +
                        std::string(host) + (given ? "" : " (the default)") +
                        ": a loopback address, which other machines cannot reach; give every " +
                        "node " + name + " set to an address of " +
                        (static_backend ? "node rank 0"
                         : etcd         ? "etcd"
                                        : "the rendezvous host") +
                        " that they can reach (fine when every node is on this machine)");
}

}  // namespace ddp::launcher::steps
