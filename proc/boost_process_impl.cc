// Boost.Process v2's compiled part, built once for ddp_proc (BOOST_PROCESS_V2_SEPARATE_COMPILATION
// is defined for the library's sources): the only translation unit that includes src.hpp.
#include <boost/process/v2/src.hpp>
