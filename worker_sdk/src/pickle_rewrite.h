// Makes a pickle written by Python's torch.save readable by LibTorch 1.13's Unpickler.
//
// torch.save(model.state_dict()) pickles a collections.OrderedDict with a `_metadata`
// attribute. LibTorch's Unpickler turns every OrderedDict into None (it expects them only as a
// tensor's unused backward hooks) and cannot apply attributes (BUILD), so the state_dict
// arrives as None or fails. This rewrites the opcodes: each `OrderedDict()` (GLOBAL, or a memo
// GET of it, then EMPTY_TUPLE, REDUCE) becomes EMPTY_DICT (the class's memo slot is left empty,
// which the Unpickler fills with None), and each BUILD is removed together with its argument
// (the attribute state, here `_metadata`), found by tracking where each stack item starts.
// Python's single-item SETITEM and APPEND, which that Unpickler does not know, become MARK ...
// SETITEMS / APPENDS, and LONG1 integers shorter than 8 bytes are sign-extended to 8 (the only
// length it reads).
// Tensors (persistent ids, _rebuild_tensor_v2) and plain values pass through unchanged; the
// result unpickles to plain dicts in their saved order.
//
// Input: the bytes of the archive's data.pkl, pickle protocol 2 (torch.save's default).
// Protocol-4 opcodes, unknown opcodes, a stack that does not add up, or a later reuse of a
// value that only existed inside a removed attribute state come back as kInvalidArgument
// naming the opcode or memo slot and its offset. Pure function: no I/O, no LibTorch.
#pragma once

#include <string>

#include "common/status.h"

namespace ddp::detail {

Result<std::string> rewrite_python_pickle(const std::string& pickle);

}  // namespace ddp::detail
