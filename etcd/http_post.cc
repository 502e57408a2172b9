#include "etcd/http_post.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <optional>

namespace ddp::etcd {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// The gateway's limit is 1.5 MiB per request; answers (a range of a whole job) may be larger.
constexpr std::uint64_t kBodyLimit = 64ull << 20;

Status transport_error(const beast::error_code& ec, const std::string& where, const char* doing) {
  if (ec == beast::error::timeout)
    return timeout_error("etcd at " + where + ": timed out " + doing);
  return io_error("etcd at " + where + ": " + doing + ": " + ec.message());
}

Status error_from_body(unsigned status, const std::string& body, const std::string& where) {
  Json j = Json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("code")) {
    auto code = int_field(j, "code");
    std::string message = j.value("message", j.value("error", std::string("(no message)")));
    return grpc_status(code ? static_cast<int>(*code) : 2, message, where);
  }
  return protocol_error("etcd at " + where + ": HTTP " + std::to_string(status) +
                        " without a gRPC error: " + body.substr(0, 200) +
                        " (is this an etcd >= 3.4 client URL?)");
}

http::request<http::string_body> make_request(const Endpoint& e, const std::string& target,
                                              const Json& body) {
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, e.to_string());
  req.set(http::field::content_type, "application/json");
  req.body() = body.dump();
  req.prepare_payload();
  return req;
}

Result<std::unique_ptr<asio::ssl::context>> make_context(const Transport& t) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  beast::error_code ec;
  if (t.cacert.empty()) {
    ctx->set_default_verify_paths(ec);
  } else {
    ctx->load_verify_file(t.cacert, ec);
  }
  if (ec) return invalid_argument("--rdzv-conf cacert=" + t.cacert + ": " + ec.message());
  if (!t.cert.empty()) {
    ctx->use_certificate_chain_file(t.cert, ec);
    if (ec) return invalid_argument("--rdzv-conf cert=" + t.cert + ": " + ec.message());
  }
  if (!t.key.empty()) {
    ctx->use_private_key_file(t.key, asio::ssl::context::pem, ec);
    if (ec) return invalid_argument("--rdzv-conf key=" + t.key + ": " + ec.message());
  }
  ctx->set_verify_mode(asio::ssl::verify_peer);
  return ctx;
}

}  // namespace

// One connection to one endpoint: plain TCP, or TLS over TCP. Every HTTP operation is
// written once for both.
class Connection {
 public:
  explicit Connection(asio::any_io_executor ex) : ex_(std::move(ex)) {}

  asio::awaitable<Status> open(const Endpoint& e, Deadline deadline, const Transport& t) {
    const std::string where = e.to_string();
    if (t.tls) {
      auto ctx = make_context(t);
      if (!ctx) co_return ctx.status();
      ctx_ = std::move(ctx).value();
      tls_.emplace(ex_, *ctx_);
    } else {
      tcp_.emplace(ex_);
    }
    asio::ip::tcp::resolver resolver(ex_);
    auto [rec, results] = co_await resolver.async_resolve(e.host, std::to_string(e.port), kTuple);
    if (rec) {
      co_return io_error("etcd at " + where + ": cannot resolve " + e.host + ": " + rec.message());
    }
    lowest().expires_at(deadline);
    auto [cec, ep] = co_await lowest().async_connect(results, kTuple);
    if (cec) co_return transport_error(cec, where, "connecting");
    if (!tls_) co_return Status::ok();
    beast::error_code ec;
    tls_->set_verify_callback(asio::ssl::host_name_verification(e.host), ec);
    // SNI (SSL_set_tlsext_host_name, a macro with a C cast).
    ::SSL_ctrl(tls_->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(e.host.c_str()));
    auto [hec] = co_await tls_->async_handshake(asio::ssl::stream_base::client, kTuple);
    if (hec == beast::error::timeout) co_return transport_error(hec, where, "in the TLS handshake");
    if (hec.category() == asio::error::get_ssl_category()) {
      co_return invalid_argument("etcd at " + where + ": TLS handshake failed: " + hec.message() +
                                 "; check --rdzv-conf cacert/cert/key and that etcd serves "
                                 "https there");
    }
    if (hec) co_return transport_error(hec, where, "in the TLS handshake");
    co_return Status::ok();
  }

  beast::tcp_stream& lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *tcp_; }

  template <typename Message>
  asio::awaitable<std::tuple<beast::error_code, std::size_t>> write(Message& m) {
    if (tls_) co_return co_await http::async_write(*tls_, m, kTuple);
    co_return co_await http::async_write(*tcp_, m, kTuple);
  }
  template <typename Parser>
  asio::awaitable<std::tuple<beast::error_code, std::size_t>> read(beast::flat_buffer& b,
                                                                   Parser& p) {
    if (tls_) co_return co_await http::async_read(*tls_, b, p, kTuple);
    co_return co_await http::async_read(*tcp_, b, p, kTuple);
  }
  template <typename Parser>
  asio::awaitable<std::tuple<beast::error_code, std::size_t>> read_header(beast::flat_buffer& b,
                                                                          Parser& p) {
    if (tls_) co_return co_await http::async_read_header(*tls_, b, p, kTuple);
    co_return co_await http::async_read_header(*tcp_, b, p, kTuple);
  }
  template <typename Parser>
  asio::awaitable<std::tuple<beast::error_code, std::size_t>> read_some(beast::flat_buffer& b,
                                                                        Parser& p) {
    if (tls_) co_return co_await http::async_read_some(*tls_, b, p, kTuple);
    co_return co_await http::async_read_some(*tcp_, b, p, kTuple);
  }

  void close() {
    if (!tcp_ && !tls_) return;
    beast::error_code ignored;
    lowest().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    lowest().close();
  }

 private:
  asio::any_io_executor ex_;
  std::unique_ptr<asio::ssl::context> ctx_;  // outlives tls_
  std::optional<beast::tcp_stream> tcp_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
};

Status grpc_status(int code, const std::string& message, const std::string& where) {
  const std::string text = "etcd at " + where + ": " + message;
  switch (code) {
    case 4:  // DEADLINE_EXCEEDED
      return timeout_error(text);
    case 5:  // NOT_FOUND
      return not_found(text);
    case 3:   // INVALID_ARGUMENT
    case 7:   // PERMISSION_DENIED
    case 8:   // RESOURCE_EXHAUSTED
    case 9:   // FAILED_PRECONDITION
    case 11:  // OUT_OF_RANGE
    case 16:  // UNAUTHENTICATED
      return invalid_argument(text);
    default:  // 14 UNAVAILABLE (no leader, stopping), 1 CANCELLED, 10 ABORTED, ...
      return io_error(text);
  }
}

asio::awaitable<Result<Json>> post_json(Endpoint endpoint, std::string target, Json body,
                                        Deadline deadline, Transport transport) {
  const std::string where = endpoint.to_string();
  Connection stream(co_await asio::this_coro::executor);
  if (Status s = co_await stream.open(endpoint, deadline, transport); !s) co_return s;
  auto req = make_request(endpoint, target, body);
  auto [wec, wn] = co_await stream.write(req);
  if (wec) co_return transport_error(wec, where, "sending");
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kBodyLimit);
  auto [rec, rn] = co_await stream.read(buffer, parser);
  if (rec) co_return transport_error(rec, where, "reading the answer");
  stream.close();
  auto& res = parser.get();
  if (res.result() != http::status::ok) {
    co_return error_from_body(res.result_int(), res.body(), where);
  }
  Json j = Json::parse(res.body(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    co_return protocol_error("etcd at " + where + ": the answer is not a JSON object");
  }
  co_return j;
}

StreamingPost::StreamingPost(asio::any_io_executor ex, Transport transport)
    : ex_(ex),
      transport_(std::move(transport)),
      conn_(std::make_unique<Connection>(std::move(ex))) {}
StreamingPost::~StreamingPost() = default;

asio::awaitable<Status> StreamingPost::open(const Endpoint& endpoint, const std::string& target,
                                            const Json& body, Deadline deadline) {
  where_ = endpoint.to_string();
  if (Status s = co_await conn_->open(endpoint, deadline, transport_); !s) co_return s;
  auto req = make_request(endpoint, target, body);
  auto [wec, wn] = co_await conn_->write(req);
  if (wec) co_return transport_error(wec, where_, "sending");
  parser_.emplace();
  parser_->body_limit(boost::none);
  auto [hec, hn] = co_await conn_->read_header(buffer_, *parser_);
  if (hec) co_return transport_error(hec, where_, "reading the answer");
  conn_->lowest().expires_never();
  if (parser_->get().result() != http::status::ok) {
    // Read the (short) error body whole.
    std::string body_text;
    char chunk[4096];
    while (!parser_->is_done()) {
      parser_->get().body().data = chunk;
      parser_->get().body().size = sizeof chunk;
      conn_->lowest().expires_at(deadline);
      auto [ec, n] = co_await conn_->read(buffer_, *parser_);
      body_text.append(chunk, sizeof chunk - parser_->get().body().size);
      if (ec && ec != http::error::need_buffer) break;
    }
    co_return error_from_body(parser_->get().result_int(), body_text, where_);
  }
  co_return Status::ok();
}

asio::awaitable<Result<Json>> StreamingPost::next() {
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      Json j = Json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        co_return protocol_error("etcd at " + where_ + ": a watch line is not JSON");
      }
      co_return j;
    }
    if (!parser_ || parser_->is_done())
      co_return peer_gone("etcd at " + where_ + " ended the stream");
    char chunk[16384];
    parser_->get().body().data = chunk;
    parser_->get().body().size = sizeof chunk;
    // read_some: returns once some body arrived (read would wait for the whole body).
    auto [ec, n] = co_await conn_->read_some(buffer_, *parser_);
    pending_.append(chunk, sizeof chunk - parser_->get().body().size);
    if (ec && ec != http::error::need_buffer) {
      if (ec == http::error::end_of_stream || ec == asio::error::eof) {
        co_return peer_gone("etcd at " + where_ + " closed the stream");
      }
      co_return transport_error(ec, where_, "watching");
    }
  }
}

void StreamingPost::close() { conn_->close(); }

}  // namespace ddp::etcd
