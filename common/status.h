// The one error vocabulary of ddprun: Status for operations that return nothing,
// Result<T> for those that return a value. Expected failures (bad configuration,
// timeouts, peers that went away, protocol violations, workers that failed) travel
// as values; exceptions thrown by dependencies are caught where they arise and
// converted here. Plain value types: copyable, no allocation on the OK path.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ddp {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad user input or configuration; the message names the fix
  kTimeout,          // a deadline passed
  kPeerGone,         // the other side closed or vanished
  kProtocol,         // malformed, oversized or unknown bytes on the wire
  kIo,               // an OS call failed (bind, connect, spawn, write)
  kNotFound,         // a key, file or resource that is not there
  kCancelled,        // stopped on request (shutdown, signal)
  kWorkerFailed,     // a worker exited non-zero or was killed
  kInternal,         // a bug: an invariant did not hold
  kAddressInUse,     // bind: another process holds the address and port
  kJobFinished,      // the rendezvous job (run id) already ended; start a new one
  kUnauthenticated,  // the job's secret was missing or did not match (job secrets)
};

std::string_view error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "timeout: waited 5s for key /x" style text for logs and error lines.
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {ErrorCode::kInvalidArgument, std::move(m)};
}
inline Status timeout_error(std::string m) { return {ErrorCode::kTimeout, std::move(m)}; }
inline Status peer_gone(std::string m) { return {ErrorCode::kPeerGone, std::move(m)}; }
inline Status protocol_error(std::string m) { return {ErrorCode::kProtocol, std::move(m)}; }
inline Status io_error(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
inline Status not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status cancelled(std::string m) { return {ErrorCode::kCancelled, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Status address_in_use(std::string m) { return {ErrorCode::kAddressInUse, std::move(m)}; }
inline Status job_finished(std::string m) { return {ErrorCode::kJobFinished, std::move(m)}; }
inline Status unauthenticated(std::string m) { return {ErrorCode::kUnauthenticated, std::move(m)}; }

// Either a T or a non-OK Status. Constructing from an OK Status is a bug (kInternal).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(v_).is_ok()) v_ = internal_error("Result built from an OK status");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  // Precondition: is_ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // OK status when holding a value.
  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ddp
