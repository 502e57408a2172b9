// What etcd's v3 JSON gateway does to values, undone in one place (pure, no I/O):
// - keys and values are base64 (standard alphabet, padded);
// - 64-bit integers (revisions, lease ids, TTLs, counts) arrive as JSON strings;
// - a field at its default value is omitted: a missing revision is 0, a missing `value` is
//   the empty string, a missing `succeeded` of a txn is false, a missing event `type` is PUT.
// Every accessor here treats a missing field as its default and a field of the wrong shape
// as a protocol error (kProtocol naming the field), never an exception.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp::etcd {

using Json = nlohmann::json;

std::string base64_encode(std::string_view bytes);
// kProtocol on a character outside the alphabet or a bad length.
Result<std::string> base64_decode(std::string_view text);

// `object[field]` as an int64: a JSON string of digits (the gateway's form) or a number;
// 0 when absent.
Result<std::int64_t> int_field(const Json& object, const char* field);
// `object[field]` base64-decoded; "" when absent.
Result<std::string> bytes_field(const Json& object, const char* field);

// One key as etcd returns it (mvccpb.KeyValue).
struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;
};
Result<KeyValue> decode_key_value(const Json& kv);

}  // namespace ddp::etcd
