// Test helper for job-secret tests: a raw connection to the daemon on the test's io_context
// that writes given bytes (so a capture can be replayed byte for byte) and keeps everything
// the daemon sends; and the bytes an agent writes first when it opens with a secret.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/auth/auth.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"
#include "tests/rendezvous/run_until.h"

namespace ddp::rendezvous::test {

// A JOIN of node `node` for a job of exactly `nodes` nodes; raw agents never heartbeat, so the
// keep-alive is long.
inline membership::JoinRequest join_request(const std::string& run_id, std::uint32_t nodes,
                                            const std::string& node) {
  membership::JoinRequest r;
  r.run_id = run_id;
  r.config.min_nodes = nodes;
  r.config.max_nodes = nodes;
  r.config.keep_alive_interval = std::chrono::seconds(10);
  r.node = {node, "127.0.0.1", 40000, 1};
  return r;
}

// What RdzvClient writes first: AUTH_OPEN and the JOIN signed over the open's challenge.
inline std::string open_bytes(const std::string& secret, const membership::JoinRequest& join,
                              std::int64_t stamp, const auth::Nonce* given = nullptr) {
  auto drawn = auth::random_bytes32();
  REQUIRE(drawn);
  const auth::Nonce nonce = given != nullptr ? *given : *drawn;
  const std::string covered = auth_covered(std::nullopt, membership::encode_request(join));
  const auth::Key key = auth::job_key(secret, join.run_id);
  const auth::Mac mac =
      auth::frame_mac(key, auth::open_challenge(nonce, stamp), 0, join.run_id, covered);
  return encode_auth_open({join.run_id, nonce, stamp}) + encode_auth_frame(0, mac, covered);
}

struct Raw {
  explicit Raw(boost::asio::io_context& io) : socket(io) {}
  boost::asio::ip::tcp::socket socket;
  std::string in;
  std::array<char, 4096> buffer{};
  std::string out;

  void connect(boost::asio::io_context& io, std::uint16_t port) {
    std::optional<boost::system::error_code> done;
    socket.async_connect({boost::asio::ip::make_address("127.0.0.1"), port},
                         [&](boost::system::error_code ec) { done = ec; });
    REQUIRE(run_until(io, [&] { return done.has_value(); }));
    REQUIRE_FALSE(*done);
    read();
  }
  void send(std::string bytes) {
    out = std::move(bytes);
    boost::asio::async_write(socket, boost::asio::buffer(out),
                             [](boost::system::error_code, std::size_t) {});
  }
  void read() {
    socket.async_read_some(boost::asio::buffer(buffer),
                           [this](boost::system::error_code ec, std::size_t n) {
                             if (ec) return;
                             in.append(buffer.data(), n);
                             read();
                           });
  }
  std::uint8_t first() const { return static_cast<std::uint8_t>(in.at(0)); }
  // The pushes after `skip` bytes, decoded.
  std::vector<membership::Payload> pushes(std::size_t skip = 0) const {
    std::vector<membership::Payload> out_pushes;
    std::string_view rest = std::string_view(in).substr(skip);
    while (!rest.empty()) {
      auto d = membership::decode_push(rest);
      if (d.state != membership::DecodeState::kComplete) break;
      out_pushes.push_back(d.message);
      rest.remove_prefix(d.consumed);
    }
    return out_pushes;
  }
};

}  // namespace ddp::rendezvous::test
