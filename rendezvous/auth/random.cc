// The auth library's one OS effect: random bytes for challenges, key pairs and fresh secrets.
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "rendezvous/auth/auth.h"

namespace ddp::rendezvous::auth {

Result<Bytes32> random_bytes32() {
  Bytes32 out{};
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::getrandom(out.data() + got, out.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(std::string("getrandom failed: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  return out;
}

Result<std::string> fresh_secret() {
  auto bytes = random_bytes32();
  if (!bytes) return bytes.status();
  return to_hex(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
}

}  // namespace ddp::rendezvous::auth
