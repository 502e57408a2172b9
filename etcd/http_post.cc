#include "etcd/http_post.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

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

asio::awaitable<Status> connect(beast::tcp_stream& stream, const Endpoint& e, Deadline deadline) {
  const std::string where = e.to_string();
  tcp::resolver resolver(stream.get_executor());
  auto [rec, results] = co_await resolver.async_resolve(e.host, std::to_string(e.port), kTuple);
  if (rec)
    co_return io_error("etcd at " + where + ": cannot resolve " + e.host + ": " + rec.message());
  stream.expires_at(deadline);
  auto [cec, ep] = co_await stream.async_connect(results, kTuple);
  if (cec) co_return transport_error(cec, where, "connecting");
  co_return Status::ok();
}

}  // namespace

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
                                        Deadline deadline) {
  const std::string where = endpoint.to_string();
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  if (Status s = co_await connect(stream, endpoint, deadline); !s) co_return s;
  auto req = make_request(endpoint, target, body);
  auto [wec, wn] = co_await http::async_write(stream, req, kTuple);
  if (wec) co_return transport_error(wec, where, "sending");
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kBodyLimit);
  auto [rec, rn] = co_await http::async_read(stream, buffer, parser, kTuple);
  if (rec) co_return transport_error(rec, where, "reading the answer");
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
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

asio::awaitable<Status> StreamingPost::open(const Endpoint& endpoint, const std::string& target,
                                            const Json& body, Deadline deadline) {
  where_ = endpoint.to_string();
  if (Status s = co_await connect(stream_, endpoint, deadline); !s) co_return s;
  auto req = make_request(endpoint, target, body);
  auto [wec, wn] = co_await http::async_write(stream_, req, kTuple);
  if (wec) co_return transport_error(wec, where_, "sending");
  parser_.emplace();
  parser_->body_limit(boost::none);
  auto [hec, hn] = co_await http::async_read_header(stream_, buffer_, *parser_, kTuple);
  if (hec) co_return transport_error(hec, where_, "reading the answer");
  stream_.expires_never();
  if (parser_->get().result() != http::status::ok) {
    // Read the (short) error body whole.
    std::string body_text;
    char chunk[4096];
    while (!parser_->is_done()) {
      parser_->get().body().data = chunk;
      parser_->get().body().size = sizeof chunk;
      stream_.expires_at(deadline);
      auto [ec, n] = co_await http::async_read(stream_, buffer_, *parser_, kTuple);
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
    auto [ec, n] = co_await http::async_read_some(stream_, buffer_, *parser_, kTuple);
    pending_.append(chunk, sizeof chunk - parser_->get().body().size);
    if (ec && ec != http::error::need_buffer) {
      if (ec == http::error::end_of_stream || ec == asio::error::eof) {
        co_return peer_gone("etcd at " + where_ + " closed the stream");
      }
      co_return transport_error(ec, where_, "watching");
    }
  }
}

void StreamingPost::close() {
  beast::error_code ignored;
  stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

}  // namespace ddp::etcd
