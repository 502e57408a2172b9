// Internal: the Gloo transport devices a process group of this SDK uses, chosen as PyTorch
// chooses them: one per interface in GLOO_SOCKET_IFNAME (comma separated) when set, else the
// device for this host's name (falling back to loopback). Throws c10::Error for an unknown
// interface.
#pragma once

#include <memory>
#include <vector>

namespace gloo::transport {
class Device;
}  // namespace gloo::transport

namespace ddp::detail {

std::vector<std::shared_ptr<::gloo::transport::Device>> gloo_devices();

}  // namespace ddp::detail
