// Python's string.Template(text).safe_substitute(values), which torchelastic applies to worker
// arguments (${local_rank}) and to --log-line-prefix-template: `$name` and `${name}` (name:
// [_a-zA-Z][_a-zA-Z0-9]*) become values[name] when present, `$$` becomes `$`, and anything
// else, unknown names included, stays as written. Pure; any thread.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace ddp::agent {

std::string safe_substitute(std::string_view text,
                            const std::map<std::string, std::string, std::less<>>& values);

}  // namespace ddp::agent
