// Who and where this process is, for names that must differ between runs and machines: the
// machine's host name and a fresh random run id. The one place either is made.
#pragma once

#include <string>

namespace ddp {

// gethostname(2); "localhost" when it cannot be read.
std::string host_name();

// A random UUID version 4 ("3f2b...-...-4...-[89ab]...-..."), as torchrun names a --standalone
// run, from getrandom(2) (std::random_device should the kernel refuse).
std::string random_run_id();

}  // namespace ddp
