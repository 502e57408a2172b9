#include "rendezvous/status/status_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <unordered_set>

#include "rendezvous/bind.h"
#include "rendezvous/status/router.h"
#include "rendezvous/status/status_source.h"

namespace ddp::rendezvous::status {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

struct Shared {
  Shared(asio::io_context& io, const Server& daemon, StatusOptions o)
      : acceptor(io), source(daemon, counters), options(std::move(o)) {}
  tcp::acceptor acceptor;
  HttpCounters counters;
  DaemonStatusSource source;
  StatusOptions options;
  bool stopped = false;
  std::unordered_set<beast::tcp_stream*> live;
};

// Registers a connection's stream for stop() and counts it, for as long as it lives.
class LiveEntry {
 public:
  LiveEntry(Shared& s, beast::tcp_stream& stream) : s_(s), stream_(stream) {
    s_.live.insert(&stream_);
    ++s_.counters.open_connections;
  }
  ~LiveEntry() {
    s_.live.erase(&stream_);
    --s_.counters.open_connections;
  }
  LiveEntry(const LiveEntry&) = delete;
  LiveEntry& operator=(const LiveEntry&) = delete;

 private:
  Shared& s_;
  beast::tcp_stream& stream_;
};

http::response<http::string_body> make_response(const Reply& reply, unsigned version, bool head,
                                                bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, "ddp-rendezvous");
  res.set(http::field::content_type, reply.content_type);
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  if (reply.method_not_allowed) res.set(http::field::allow, "GET, HEAD");
  res.keep_alive(keep_alive);
  if (head) {
    res.content_length(reply.body.size());
  } else {
    res.body() = reply.body;
    res.prepare_payload();
  }
  return res;
}

// The reply to a request that could not be read, or nullopt to just close (EOF, timeout).
std::optional<Reply> reply_to_read_error(const boost::system::error_code& ec) {
  auto text = [](int status, std::string body) {
    return Reply{status, "text/plain; charset=utf-8", std::move(body) + "\n", false};
  };
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return text(431, "431 request header fields too large (limit 8 KiB)");
  }
  if (ec == http::error::body_limit) return text(413, "413 the status port takes no request body");
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return std::nullopt;
  // Any other parser error: what came in is not an HTTP/1.x request.
  if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
    return text(400, "400 bad request: not an HTTP/1.x request");
  }
  return std::nullopt;
}

asio::awaitable<void> serve(std::shared_ptr<Shared> s, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  LiveEntry entry(*s, stream);
  beast::flat_buffer buffer(s->options.max_header_bytes + 1024);
  for (std::uint32_t n = 0; n < s->options.max_requests_per_connection; ++n) {
    http::request_parser<http::empty_body> parser;
    parser.header_limit(s->options.max_header_bytes);
    parser.body_limit(0);
    boost::system::error_code ec;
    stream.expires_after(s->options.request_timeout);
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (s->stopped) co_return;
    if (ec) {
      if (ec != http::error::end_of_stream) ++s->counters.bad_requests;
      if (std::optional<Reply> reply = reply_to_read_error(ec)) {
        auto res = make_response(*reply, 11, false, false);
        stream.expires_after(s->options.request_timeout);
        co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      }
      break;
    }
    const auto& req = parser.get();
    ++s->counters.requests;
    const bool keep_alive = req.keep_alive() && n + 1 < s->options.max_requests_per_connection;
    Reply reply = route(std::string_view(req.method_string().data(), req.method_string().size()),
                        std::string_view(req.target().data(), req.target().size()), s->source);
    auto res = make_response(reply, req.version(), req.method() == http::verb::head, keep_alive);
    stream.expires_after(s->options.request_timeout);
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || s->stopped || !keep_alive) break;
  }
  if (!s->stopped) {
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.close();
  }
}

// Over the cap: a fixed 503, written without waiting (a fresh socket's send buffer is empty).
void refuse(tcp::socket socket) {
  static constexpr std::string_view kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 38\r\n"
      "Connection: close\r\n\r\n503 too many status connections; retry\n";
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  // Read what already arrived: closing with unread bytes would reset the connection, and the
  // client could lose the 503 before reading it.
  char drain[4096];
  socket.read_some(asio::buffer(drain), ignored);
  socket.write_some(asio::buffer(kBusy), ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

asio::awaitable<void> accept_loop(std::shared_ptr<Shared> s) {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket =
        co_await s->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (s->stopped || ec == asio::error::operation_aborted) co_return;
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
      spdlog::warn("status port: accept failed: {}; raise the open-file limit (ulimit -n)",
                   ec.message());
      // Nothing signals a freed descriptor: wait a little instead of spinning.
      asio::steady_timer pause(s->acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (ec) continue;
    if (s->live.size() >= s->options.max_connections) {
      ++s->counters.rejected_connections;
      refuse(std::move(socket));
      continue;
    }
    asio::co_spawn(s->acceptor.get_executor(), serve(s, std::move(socket)), asio::detached);
  }
}

class StatusServerImpl final : public StatusServer {
 public:
  explicit StatusServerImpl(std::shared_ptr<Shared> s) : s_(std::move(s)) {
    const auto local = s_->acceptor.local_endpoint();
    port_ = local.port();
    host_ = local.address().to_string();
  }
  ~StatusServerImpl() override { stop(); }
  std::uint16_t port() const override { return port_; }
  std::string host() const override { return host_; }
  void stop() override {
    if (s_->stopped) return;
    s_->stopped = true;
    boost::system::error_code ignored;
    s_->acceptor.close(ignored);
    for (beast::tcp_stream* stream : s_->live) stream->close();
  }

 private:
  std::shared_ptr<Shared> s_;
  std::uint16_t port_ = 0;
  std::string host_;
};

}  // namespace

Result<std::unique_ptr<StatusServer>> StatusServer::start(asio::io_context& io,
                                                          const Server& daemon,
                                                          StatusOptions options) {
  auto s = std::make_shared<Shared>(io, daemon, std::move(options));
  if (Status bound = open_listener(s->acceptor, s->options.host, s->options.port, "--status-port");
      !bound) {
    return bound;
  }
  asio::co_spawn(io, accept_loop(s), asio::detached);
  auto server = std::make_unique<StatusServerImpl>(s);
  spdlog::info("status on http://{}/",
               format_endpoint(s->acceptor.local_endpoint().address(), server->port()));
  return std::unique_ptr<StatusServer>(std::move(server));
}

}  // namespace ddp::rendezvous::status
