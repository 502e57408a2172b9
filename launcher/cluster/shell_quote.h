// Quoting for POSIX shells (sh, dash, bash, zsh), used for the command ssh hands to the remote
// login shell. A word made only of characters no shell treats specially
// ([A-Za-z0-9] and _ @ % + : , . / -) is left bare; anything else, and the empty word, is
// put in single quotes, with each ' written as '\'' . Inside single quotes nothing is special,
// newlines included, so the shell turns every quoted word back into exactly the original
// bytes. (csh and fish read some of this differently; the remote login shell must be POSIX.)
// Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ddp::launcher::cluster {

std::string shell_quote(std::string_view word);

// The words quoted and joined by single spaces.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace ddp::launcher::cluster
