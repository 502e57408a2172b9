// The transport under the etcd client: one HTTP/1.1 POST of a JSON body to one endpoint of the
// v3 gateway, on a fresh TCP connection bounded by a deadline. Unary calls read one JSON
// answer (post_json); a watch keeps reading newline-delimited JSON from the same response
// (StreamingPost). The gateway answers an error with a non-200 status and
// {"error", "message", "code": <gRPC code>}; grpc_status maps it.
//
// Errors: kIo (cannot connect, connection broken, gRPC UNAVAILABLE such as "no leader": try
// another endpoint), kTimeout (the deadline passed), kProtocol (not HTTP or not JSON),
// kNotFound (gRPC NOT_FOUND, e.g. an expired lease), kInvalidArgument (gRPC INVALID_ARGUMENT,
// OUT_OF_RANGE (compacted), FAILED_PRECONDITION, RESOURCE_EXHAUSTED (over 1.5 MiB), permission).
// Each message names the endpoint.
//
// Threading: coroutines on the caller's executor; a StreamingPost is used by one coroutine,
// and close() may be called from any handler on the same thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "etcd/codec.h"
#include "etcd/endpoints.h"

namespace ddp::etcd {

using Deadline = std::chrono::steady_clock::time_point;

// How to reach the gateway: plain HTTP, or HTTPS verifying the server against `cacert` (the
// system's trust store when empty) and, when `cert` and `key` are set, presenting that client
// certificate (etcd's --client-cert-auth). Files are read at every connection: a TLS file
// that cannot be loaded is kInvalidArgument naming it; a failed handshake (wrong CA, a
// server without TLS) is kInvalidArgument naming the endpoint.
struct Transport {
  bool tls = false;
  std::string cacert, cert, key;
};

// Transport failures another endpoint may not have.
inline bool retryable(const Status& s) {
  return s.code() == ErrorCode::kIo || s.code() == ErrorCode::kTimeout ||
         s.code() == ErrorCode::kPeerGone;
}

// A gRPC status code and message from the gateway as a Status naming `where`.
Status grpc_status(int code, const std::string& message, const std::string& where);

boost::asio::awaitable<Result<Json>> post_json(Endpoint endpoint, std::string target, Json body,
                                               Deadline deadline, Transport transport = {});

class Connection;  // a TCP or TLS stream (http_post.cc)

class StreamingPost {
 public:
  // (GCC 12 double-destroys a Transport passed by reference into a co_await expression: it
  // is a constructor argument instead.)
  StreamingPost(boost::asio::any_io_executor ex, Transport transport);
  ~StreamingPost();
  StreamingPost(const StreamingPost&) = delete;
  StreamingPost& operator=(const StreamingPost&) = delete;

  // Connects, sends, and reads the response header, all before `deadline`. A non-200 answer
  // is read whole and returned as its error.
  boost::asio::awaitable<Status> open(const Endpoint& endpoint, const std::string& target,
                                      const Json& body, Deadline deadline);
  // The next complete line of the body as JSON (blocks without a deadline: a watch may stay
  // silent for hours). kPeerGone at the end of the body, kIo when the connection breaks or
  // close() was called.
  boost::asio::awaitable<Result<Json>> next();
  void close();

 private:
  boost::asio::any_io_executor ex_;
  Transport transport_;
  std::unique_ptr<Connection> conn_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
  std::string pending_;  // body bytes after the last complete line
  std::string where_;
};

}  // namespace ddp::etcd
