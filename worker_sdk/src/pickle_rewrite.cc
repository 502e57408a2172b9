#include "pickle_rewrite.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace ddp::detail {
namespace {

// Pickle opcodes (Python's Lib/pickle.py), protocol 0 to 2.
enum : char {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kFloat = 'F',
  kInt = 'I',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kLong = 'L',
  kBinInt2 = 'M',
  kNone = 'N',
  kPersId = 'P',
  kBinPersId = 'Q',
  kReduce = 'R',
  kString = 'S',
  kBinString = 'T',
  kShortBinString = 'U',
  kUnicode = 'V',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kGet = 'g',
  kBinGet = 'h',
  kInst = 'i',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kObj = 'o',
  kPut = 'p',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = '\x80',
  kNewObj = '\x81',
  kTuple1 = '\x85',
  kTuple2 = '\x86',
  kTuple3 = '\x87',
  kNewTrue = '\x88',
  kNewFalse = '\x89',
  kLong1 = '\x8a',
  kLong4 = '\x8b',
  kShortBinBytes = 'C',
  kBinBytes = 'B',
};

constexpr const char* kOrderedDict = "collections\nOrderedDict\n";

class Reader {
 public:
  explicit Reader(const std::string& s, std::size_t pos = 0) : s_(s), pos_(pos) {}
  std::size_t pos() const { return pos_; }
  bool done() const { return pos_ >= s_.size(); }
  bool has(std::size_t n) const { return s_.size() - pos_ >= n; }
  char peek(std::size_t ahead = 0) const { return has(ahead + 1) ? s_[pos_ + ahead] : '\0'; }
  std::uint64_t uint_le(std::size_t at, std::size_t width) const {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s_[at + i])) << (8 * i);
    return v;
  }
  // Length of the instruction at pos() (opcode included), or nullopt when unknown/truncated.
  std::optional<std::size_t> length() const {
    auto fixed = [&](std::size_t n) -> std::optional<std::size_t> {
      return has(1 + n) ? std::optional<std::size_t>(1 + n) : std::nullopt;
    };
    auto counted = [&](std::size_t width) -> std::optional<std::size_t> {
      if (!has(1 + width)) return std::nullopt;
      const std::uint64_t n = uint_le(pos_ + 1, width);
      return has(1 + width + n) ? std::optional<std::size_t>(1 + width + n) : std::nullopt;
    };
    auto lines = [&](int count) -> std::optional<std::size_t> {
      std::size_t at = pos_ + 1;
      for (int i = 0; i < count; ++i) {
        const std::size_t nl = s_.find('\n', at);
        if (nl == std::string::npos) return std::nullopt;
        at = nl + 1;
      }
      return at - pos_;
    };
    switch (peek()) {
      case kMark:
      case kStop:
      case kPop:
      case kPopMark:
      case kDup:
      case kNone:
      case kBinPersId:
      case kReduce:
      case kAppend:
      case kBuild:
      case kDict:
      case kEmptyDict:
      case kAppends:
      case kList:
      case kEmptyList:
      case kObj:
      case kSetItem:
      case kTuple:
      case kEmptyTuple:
      case kSetItems:
      case kNewObj:
      case kTuple1:
      case kTuple2:
      case kTuple3:
      case kNewTrue:
      case kNewFalse:
        return 1;
      case kBinInt1:
      case kBinGet:
      case kBinPut:
      case kProto:
        return fixed(1);
      case kBinInt2:
        return fixed(2);
      case kBinInt:
      case kLongBinGet:
      case kLongBinPut:
        return fixed(4);
      case kBinFloat:
        return fixed(8);
      case kShortBinString:
      case kShortBinBytes:
      case kLong1:
        return counted(1);
      case kBinString:
      case kBinUnicode:
      case kBinBytes:
      case kLong4:
        return counted(4);
      case kFloat:
      case kInt:
      case kLong:
      case kPersId:
      case kString:
      case kUnicode:
      case kGet:
      case kPut:
        return lines(1);
      case kGlobal:
      case kInst:
        return lines(2);
      default:
        return std::nullopt;
    }
  }
  std::string_view view(std::size_t n) const { return std::string_view(s_).substr(pos_, n); }
  void skip(std::size_t n) { pos_ += n; }

 private:
  const std::string& s_;
  std::size_t pos_;
};

std::string hex_opcode(char op) {
  static const char* digits = "0123456789abcdef";
  const auto b = static_cast<unsigned char>(op);
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Where each item on the unpickler's stack starts in the output, so that a BUILD's argument
// can be cut out again. kMarkFlag tags MARK entries.
class StackModel {
 public:
  static constexpr std::size_t kMarkFlag = std::size_t{1} << 63;

  // Applies `op` (about to be written at output offset `at`); false on a malformed stack.
  bool apply(char op, std::size_t at) {
    switch (op) {
      case kMark:
        items_.push_back(at | kMarkFlag);
        return true;
      case kProto:
      case kStop:
      case kPut:
      case kBinPut:
      case kLongBinPut:
      case kBinPersId:
      case kTuple1:
        return op == kBinPersId || op == kTuple1 ? !items_.empty() : true;
      case kPop:
      case kAppend:
      case kBuild:
        return pop(1);
      case kSetItem:
        return pop(2);
      case kTuple2:
      case kReduce:
      case kNewObj:
        return merge(2);
      case kTuple3:
        return merge(3);
      case kSetItems:
      case kAppends:
      case kPopMark:
        return pop_mark().has_value();
      case kTuple:
      case kList:
      case kDict:
      case kInst:
      case kObj: {
        auto start = pop_mark();
        if (!start) return false;
        items_.push_back(*start);
        return true;
      }
      default:  // everything else pushes one item
        items_.push_back(at);
        return true;
    }
  }
  // Output offset where the n-th item from the top starts (n = 1: the top), when the top n
  // items are values (no MARK among them).
  std::optional<std::size_t> start_of(std::size_t n) const {
    if (n == 0 || items_.size() < n) return std::nullopt;
    for (std::size_t i = items_.size() - n; i < items_.size(); ++i) {
      if (items_[i] & kMarkFlag) return std::nullopt;
    }
    return items_[items_.size() - n];
  }

 private:
  bool pop(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (items_.empty() || (items_.back() & kMarkFlag)) return false;
      items_.pop_back();
    }
    return true;
  }
  // Pops n items and pushes one starting where the first of them started.
  bool merge(std::size_t n) {
    if (items_.size() < n) return false;
    const std::size_t start = items_[items_.size() - n];
    if (!pop(n)) return false;
    items_.push_back(start);
    return true;
  }
  std::optional<std::size_t> pop_mark() {
    while (!items_.empty() && !(items_.back() & kMarkFlag)) items_.pop_back();
    if (items_.empty()) return std::nullopt;
    const std::size_t start = items_.back() & ~kMarkFlag;
    items_.pop_back();
    return start;
  }
  std::vector<std::size_t> items_;
};

}  // namespace

Result<std::string> rewrite_python_pickle(const std::string& pickle) {
  Reader in(pickle);
  std::string out;
  out.reserve(pickle.size());
  StackModel stack;
  std::set<std::uint64_t> ordered_dict_memo;  // memo slots holding the OrderedDict class
  std::set<std::uint64_t> dropped_memo;       // memo slots set inside a dropped BUILD argument
  std::vector<std::pair<std::size_t, std::uint64_t>> gets;  // (output offset, memo slot)
  auto malformed = [&](char op) {
    return invalid_argument("malformed pickle: opcode " + hex_opcode(op) + " at offset " +
                            std::to_string(in.pos()) + " does not match the stack");
  };
  while (!in.done()) {
    const char op = in.peek();
    const auto len = in.length();
    if (!len) {
      if (op == '\x93' || op == '\x94' || op == '\x95') {
        return invalid_argument("pickle protocol 4 (opcode " + hex_opcode(op) + " at offset " +
                                std::to_string(in.pos()) +
                                ") is not supported; save with torch.save's default protocol 2");
      }
      return invalid_argument("unknown or truncated pickle opcode " + hex_opcode(op) +
                              " at offset " + std::to_string(in.pos()));
    }
    const bool is_get = op == kBinGet || op == kLongBinGet;
    const std::uint64_t memo =
        is_get || op == kBinPut || op == kLongBinPut ? in.uint_le(in.pos() + 1, *len - 1) : 0;
    const bool ordered_dict = (op == kGlobal && in.view(*len).substr(1) == kOrderedDict) ||
                              (is_get && ordered_dict_memo.count(memo) > 0);
    if (ordered_dict) {
      in.skip(*len);
      if (in.peek() == kBinPut || in.peek() == kLongBinPut) {  // memoized: leave the slot empty
        const auto put_len = *in.length();
        ordered_dict_memo.insert(in.uint_le(in.pos() + 1, put_len - 1));
        in.skip(put_len);
      }
      if (in.peek() != kEmptyTuple || in.peek(1) != kReduce) {
        return invalid_argument(
            "collections.OrderedDict used otherwise than called without "
            "arguments at offset " +
            std::to_string(in.pos()));
      }
      in.skip(2);
      stack.apply(kEmptyDict, out.size());
      out += kEmptyDict;  // OrderedDict() -> {}
      continue;
    }
    if (op == kSetItem || op == kAppend) {  // unsupported: MARK before the operands, SETITEMS
      const auto start = stack.start_of(op == kSetItem ? 2 : 1);
      if (!start || !stack.apply(op, out.size())) return malformed(op);
      out.insert(*start, 1, kMark);
      for (auto& get : gets) get.first += get.first >= *start ? 1 : 0;
      out += op == kSetItem ? kSetItems : kAppends;
      in.skip(*len);
      continue;
    }
    if (op == kLong1) {  // the Unpickler reads 8-byte LONG1s only: sign-extend shorter ones
      const std::size_t n = *len - 2;
      if (n > 8) {
        return invalid_argument("integer of " + std::to_string(n) + " bytes at offset " +
                                std::to_string(in.pos()) + " does not fit in 64 bits");
      }
      const std::string_view digits = in.view(*len).substr(2);
      const bool negative = n > 0 && (static_cast<unsigned char>(digits.back()) & 0x80);
      stack.apply(op, out.size());
      out += kLong1;
      out += '\x08';
      out.append(digits);
      out.append(8 - n, negative ? '\xff' : '\x00');
      in.skip(*len);
      continue;
    }
    if (op == kBuild) {  // drop the attribute state and the BUILD: the object stays as it is
      const auto start = stack.start_of(1);
      if (!start || !stack.apply(op, out.size())) return malformed(op);
      for (Reader cut(out, *start); !cut.done();) {  // memo slots set in the dropped bytes
        const auto n = cut.length();
        if (cut.peek() == kBinPut || cut.peek() == kLongBinPut) {
          dropped_memo.insert(cut.uint_le(cut.pos() + 1, *n - 1));
        }
        cut.skip(*n);
      }
      out.resize(*start);
      while (!gets.empty() && gets.back().first >= *start) gets.pop_back();
      in.skip(*len);
      continue;
    }
    if (!stack.apply(op, out.size())) return malformed(op);
    if (is_get) gets.emplace_back(out.size(), memo);
    out.append(in.view(*len));
    in.skip(*len);
  }
  for (const auto& [offset, memo] : gets) {
    if (dropped_memo.count(memo) > 0) {
      return invalid_argument("the pickle reuses a value (memo " + std::to_string(memo) +
                              ") from object attributes that cannot be read here");
    }
  }
  return out;
}

}  // namespace ddp::detail
