// Internal to wire.cc / wire_events.cc: field writer and reader with sticky failure.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_codec.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous::membership::codec {

using bytes::put;
inline void put_str(std::string& out, std::string_view s) {
  put<std::uint64_t>(out, s.size());
  out.append(s);
}
void put_failure(std::string& out, const Failure& f);
// A lower bound on a failure's encoding: three empty strings, six integers, two empty lists
// (the hang, step and no_restart fields not counted).
inline constexpr std::size_t kMinFailureBytes = 3 * 8 + 4 * 4 + 2 * 8 + 2 * 8;

// Reads fields in order. The first short read or limit violation sticks: later reads are
// no-ops, so decoders read straight through and check once at the end.
class Reader {
 public:
  Reader(std::string_view in, const WireLimits& limits) : in_(in), limits_(limits) {}

  template <typename T>
  T get() {
    T v{};
    if (!ok()) return v;
    if (!bytes::get(in_, pos_, v)) needed_ = pos_ + sizeof(T);
    return v;
  }
  bool get_bool(const char* what);
  std::string name(const char* what) { return str(what, limits_.max_name_bytes); }
  std::string text(const char* what) { return str(what, limits_.max_text_bytes); }
  // A count of `what`, at most `limit`, checked before anything is reserved.
  std::size_t count(const char* what, std::size_t limit);
  Failure failure();
  // A Diagnosis list, checked against its bounds (diagnosis.h).
  std::vector<std::string> lines(const char* what);

  void fail(std::string message) {
    if (ok()) error_ = std::move(message);
  }
  bool ok() const { return needed_ == 0 && error_.empty(); }
  std::size_t remaining() const { return in_.size() - pos_; }

  template <typename T>
  Decoded<T> finish(T message) const {
    Decoded<T> d;
    if (!error_.empty()) {
      d.state = DecodeState::kError;
      d.error = error_;
    } else if (needed_ != 0) {
      d.state = DecodeState::kIncomplete;
      d.needed = needed_;
    } else {
      d.state = DecodeState::kComplete;
      d.message = std::move(message);
      d.consumed = pos_;
    }
    return d;
  }

 private:
  std::string str(const char* what, std::size_t limit);

  std::string_view in_;
  const WireLimits& limits_;
  std::size_t pos_ = 0;
  std::size_t needed_ = 0;
  std::string error_;
};

}  // namespace ddp::rendezvous::membership::codec
