// Linked into the release programs only (cmake/StaticRelease.cmake): the definitions that
// Debian's libfmt and libspdlog shared libraries hold, compiled here from those libraries'
// headers, since Debian ships no static archive of either. The product's objects are compiled
// against the shared libraries' headers (fmt in its compiled mode, spdlog with
// SPDLOG_COMPILED_LIB and SPDLOG_FMT_EXTERNAL), so they need exactly these symbols. Written for
// the fmt 9 and spdlog 1.10 of Debian 12, where release.sh builds; another version that needs
// more fails the link, naming the missing symbol.
#include <fmt/format-inl.h>  // fmt's non-template definitions (FMT_HEADER_ONLY is not defined)

FMT_BEGIN_NAMESPACE
namespace detail {
// Declared `extern template` by fmt/format.h: the library instantiates them, so must we.
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE

// spdlog's definitions (its -inl.h headers, which SPDLOG_COMPILED_LIB keeps out of users).
#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_color_sinks-inl.h>
#include <spdlog/sinks/stdout_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

#include <mutex>

// The sink templates the programs use (the default logger's colour sink in the registry, and
// the plain stderr logger the launcher installs) and the bases they derive from.
template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>;
template class spdlog::sinks::stdout_sink_base<spdlog::details::console_nullmutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template std::shared_ptr<spdlog::logger> spdlog::stderr_logger_st<spdlog::synchronous_factory>(
    const std::string&);
