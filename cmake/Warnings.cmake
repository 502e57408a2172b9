# ddp_set_warnings(target): the project's warning set, applied to every target we own; with
# DDP_WERROR (CI's host build) a warning fails the build.
option(DDP_WERROR "Treat compiler warnings as errors" OFF)
function(ddp_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wimplicit-fallthrough)
  # -Wnull-dereference is left out: GCC 12 reports it inside inlined Asio and libstdc++ code.
  if(DDP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
