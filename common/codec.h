// The one byte codec of ddprun's wire formats: PyTorch's TCPStore protocol, the job-secret
// messages and the native rendezvous messages. Integers are raw host-order bytes, which is what
// PyTorch's TCPStore sends (little-endian; other byte orders are refused at compile time);
// str := u64 length | bytes. Pure and header-only.
//
// Reader reads fields in order. The first short read or limit violation sticks: later reads
// are no-ops returning defaults, so a decoder reads straight through and checks once, with
// finish(). Two kinds of input:
//   - a stream (the bytes received so far): a short read means "incomplete", and needed()
//     says how many bytes the input must hold before decoding can get further;
//   - a record (record(): `u32 n | n bytes` whose n bytes are all at hand): a field that
//     starts at the record's end was not sent (the sender is older) and reads as its default;
//     a field cut by the end is an error, and so is a missing record; bytes after the last
//     field the reader knows (sent by a newer peer) are skipped.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace ddp::codec {

static_assert(std::endian::native == std::endian::little,
              "TCPStore's wire format is the sender's raw integers: ddprun needs little-endian");

enum class DecodeState : std::uint8_t { kIncomplete, kError, kComplete };

// What a decoder made of the front of its input.
template <typename T>
struct Decoded {
  DecodeState state = DecodeState::kIncomplete;
  T value{};                 // kComplete
  std::size_t consumed = 0;  // kComplete: bytes of the input the message used
  std::size_t needed = 0;    // kIncomplete: the smallest input size that can make progress
  std::string error;         // kError: names the problem, e.g. "key of 5000 bytes exceeds ..."
};

// Appends the bytes of `v`.
template <typename T>
void put(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out.append(raw, sizeof(T));
}

// Appends u64 length | bytes.
inline void put_str(std::string& out, std::string_view s) {
  put<std::uint64_t>(out, s.size());
  out.append(s);
}

// Appends `u32 n | what write() appends` (a record, read back with Reader::record()).
template <typename Write>
void put_record(std::string& out, Write&& write) {
  const std::size_t at = out.size();
  put<std::uint32_t>(out, 0);
  write();
  const auto n = static_cast<std::uint32_t>(out.size() - at - sizeof(std::uint32_t));
  std::memcpy(out.data() + at, &n, sizeof n);
}

class Reader {
 public:
  // A stream reader (see above); `max_bytes` bounds how far any declared length may reach.
  explicit Reader(std::string_view in,
                  std::size_t max_bytes = std::numeric_limits<std::size_t>::max())
      : in_(in), max_bytes_(max_bytes) {}

  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    if (!ok() || (record_ && pos_ == in_.size())) return v;
    if (in_.size() - pos_ < sizeof(T)) {
      short_of(pos_ + sizeof(T));
      return v;
    }
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // A u8 that must be 0 or 1.
  bool flag(const char* what) {
    const auto v = get<std::uint8_t>();
    if (v > 1) fail(std::string(what) + " flag is " + std::to_string(v) + "; expected 0 or 1");
    return v == 1;
  }

  // A str of at most `limit` bytes, checked before anything is allocated.
  std::string str(const char* what, std::size_t limit) {
    std::string s;
    if (const auto n = length(what, get<std::uint64_t>(), limit); n != 0) {
      s.assign(in_.data() + pos_, n);
      pos_ += n;
    }
    return s;
  }

  // Skips n bytes whose length was read already (e.g. a fixed-size field).
  std::string_view bytes(const char* what, std::size_t n) {
    if (length(what, n, n) == 0) return {};
    pos_ += n;
    return in_.substr(pos_ - n, n);
  }

  // A u64 count of `what`, at most `limit`, checked before the caller reserves anything.
  std::size_t count(const char* what, std::size_t limit) {
    const auto n = get<std::uint64_t>();
    if (n > limit) {
      fail(std::to_string(n) + " " + what + " exceed the limit of " + std::to_string(limit));
      return 0;
    }
    return static_cast<std::size_t>(n);
  }

  // A record `u32 n | n bytes` (see above): a reader over its n bytes, whose failure is also
  // this reader's (so this reader must outlive it); this reader moves past them. Unlike a
  // field, a record is never defaulted: one missing at the end of its enclosing record (a list
  // shorter than its count, a flag without its record) is an error.
  Reader record(const char* what) {
    Reader r(std::string_view(), max_bytes_);
    r.record_ = true;
    r.parent_ = this;
    if (ok() && record_ && pos_ == in_.size()) {
      fail(std::string(what) + " is missing: its enclosing record ends before it");
    }
    const auto n = get<std::uint32_t>();
    if (length(what, n, max_bytes_) != 0) {
      r.in_ = in_.substr(pos_, n);
      pos_ += n;
    }
    if (!ok()) r.fail("");  // never read: the caller checks this reader
    return r;
  }

  void fail(std::string message) {
    if (!ok()) return;
    error_ = message.empty() ? "failed" : std::move(message);
    if (parent_ != nullptr) parent_->fail(error_);
  }
  bool ok() const { return needed_ == 0 && error_.empty(); }
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return in_.size() - pos_; }
  std::size_t needed() const { return needed_; }
  const std::string& error() const { return error_; }

  // The outcome, with `value` when complete; consumed = pos().
  template <typename T>
  Decoded<T> finish(T value) const {
    Decoded<T> d;
    if (!error_.empty()) {
      d.state = DecodeState::kError;
      d.error = error_;
    } else if (needed_ != 0) {
      d.needed = needed_;
    } else {
      d.state = DecodeState::kComplete;
      d.value = std::move(value);
      d.consumed = pos_;
    }
    return d;
  }

 private:
  // Checks a declared length `n` of `what` against `limit` and the input; returns n when all
  // n bytes are at hand, else 0 (with the failure or shortfall recorded).
  std::size_t length(const char* what, std::uint64_t n, std::size_t limit) {
    if (!ok() || n == 0) return 0;
    if (n > limit) {
      fail(std::string(what) + " of " + std::to_string(n) + " bytes exceeds the limit of " +
           std::to_string(limit) + " bytes");
      return 0;
    }
    if (n > max_bytes_ - pos_) {
      fail("message of more than " + std::to_string(max_bytes_) + " bytes exceeds the limit");
      return 0;
    }
    if (in_.size() - pos_ < n) {
      short_of(pos_ + static_cast<std::size_t>(n));
      return 0;
    }
    return static_cast<std::size_t>(n);
  }

  void short_of(std::size_t size) {
    if (record_) {
      fail("a field runs past the end of its record");
    } else {
      needed_ = size;
    }
  }

  std::string_view in_;
  std::size_t max_bytes_;
  std::size_t pos_ = 0;
  std::size_t needed_ = 0;
  std::string error_;
  bool record_ = false;
  Reader* parent_ = nullptr;
};

// ---- ddprun's native messages: `u8 type | u32 n | n bytes of fields` ----------------------

// One native message: its type, then what write(out) appends, as a record.
template <typename Write>
std::string message(std::uint8_t type, Write&& write) {
  std::string out;
  put<std::uint8_t>(out, type);
  put_record(out, [&] { write(out); });
  return out;
}

// Reads a native message at the front of a stream: its type, and a record reader over its
// fields whose failures are `outer`'s (`in` is not ok() when the message is incomplete or
// larger than `max_bytes`; `outer` says which). Not movable: `in` points at `outer`.
struct Envelope {
  Envelope(std::string_view input, std::size_t max_bytes)
      : outer(input, max_bytes), type(outer.get<std::uint8_t>()), in(outer.record("message")) {}
  Envelope(const Envelope&) = delete;
  Envelope& operator=(const Envelope&) = delete;

  // Fails the message unless its type is `expected`.
  void expect(std::uint8_t expected) {
    if (outer.ok() && type != expected) {
      in.fail("expected message type " + std::to_string(expected) + ", got " +
              std::to_string(type));
    }
  }

  template <typename T>
  Decoded<T> finish(T value) const {
    return outer.finish(std::move(value));
  }

  Reader outer;
  std::uint8_t type = 0;
  Reader in;
};

}  // namespace ddp::codec
