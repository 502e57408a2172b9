#include "common/status.h"

namespace ddp {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kPeerGone:
      return "peer gone";
    case ErrorCode::kProtocol:
      return "protocol error";
    case ErrorCode::kIo:
      return "I/O error";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kWorkerFailed:
      return "worker failed";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kAddressInUse:
      return "address in use";
    case ErrorCode::kJobFinished:
      return "job finished";
    case ErrorCode::kUnauthenticated:
      return "unauthenticated";
  }
  return "unknown error";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string out(error_code_name(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace ddp
