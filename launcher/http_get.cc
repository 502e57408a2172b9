#include "launcher/http_get.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "common/host_port.h"

namespace ddp::launcher {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

Result<HttpAnswer> http_get(const std::string& host, std::uint16_t port, const std::string& target,
                            std::chrono::milliseconds deadline) {
  const std::string where = join_host_port(host, port);
  asio::io_context io(1);
  asio::ip::tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, where);
  req.set(http::field::user_agent, "ddprun-status");
  req.set(http::field::accept, "application/json");
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::uint64_t{256} << 20);
  boost::system::error_code failure;
  const char* stage = "resolve";
  auto fail = [&](const char* what, boost::system::error_code ec) {
    stage = what;
    failure = ec;
  };
  stream.expires_after(deadline);
  resolver.async_resolve(host, std::to_string(port), [&](auto ec, auto results) {
    if (ec) return fail("resolve", ec);
    stream.async_connect(results, [&](auto ec2, auto) {
      if (ec2) return fail("connect to", ec2);
      http::async_write(stream, req, [&](auto ec3, std::size_t) {
        if (ec3) return fail("send to", ec3);
        http::async_read(stream, buffer, parser, [&](auto ec4, std::size_t) {
          if (ec4) return fail("read from", ec4);
        });
      });
    });
  });
  io.run_for(deadline + std::chrono::seconds(1));
  if (failure == beast::error::timeout || (!failure && !parser.is_done())) {
    return timeout_error("no answer from the status port " + where + " within " +
                         std::to_string(deadline.count()) + " ms");
  }
  if (failure) {
    return io_error(std::string("cannot ") + stage + " the status port " + where + ": " +
                    failure.message() + "; is the daemon running with --status-port " +
                    std::to_string(port) + "?");
  }
  return HttpAnswer{static_cast<int>(parser.get().result_int()), parser.get().body()};
}

}  // namespace ddp::launcher
