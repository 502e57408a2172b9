# Precompiled headers, for build time only: the standard, Boost.Asio and spdlog headers that
# most sources include (and Catch2 in tests) are parsed once per set of compile
# flags, by a donor target that builds nothing else, and every target with those flags reuses
# that one header (target_precompile_headers(<target> REUSE_FROM <donor>)).
# Every source still includes what it uses; -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON builds without
# (the check that no source leans on the force-included headers).
# GCC uses a precompiled header only under the same flags: each -D of the donor defined alike
# in the user (more are fine), the same -O and -Wpedantic. So there is one donor per flag set:
# the product's Asio targets, the pure libraries without Asio's defines (below), and the tests
# at -O0 (tests/CMakeLists.txt). CMake adds -Winvalid-pch: with DDP_WERROR a mismatch fails the
# build instead of silently parsing the headers again.
# LibTorch targets use none (tests/worker_sdk/CMakeLists.txt says why).
set(DDP_PCH_STD <algorithm> <chrono> <cstdint> <filesystem> <functional> <map> <memory>
    <optional> <string> <string_view> <vector>)
set(DDP_PCH_ASIO <boost/asio/awaitable.hpp> <boost/asio/co_spawn.hpp> <boost/asio/detached.hpp>
    <boost/asio/io_context.hpp> <boost/asio/ip/tcp.hpp> <boost/asio/post.hpp>
    <boost/asio/steady_timer.hpp> <boost/asio/use_awaitable.hpp> <boost/asio/write.hpp>
    <spdlog/spdlog.h>)
# Left out: nlohmann/json.hpp. A dozen sources include it, and with it in the precompiled header
# every source paid about 0.9 s more to load it than those twelve save (GCC 12).

# ddp_pch_donor(<name> LINKS lib... HEADERS header...): an object library that only builds the
# precompiled HEADERS under the flags LINKS give (in the calling folder's compile options).
function(ddp_pch_donor name)
  cmake_parse_arguments(A "" "" "LINKS;HEADERS" ${ARGN})
  set(source ${CMAKE_CURRENT_BINARY_DIR}/${name}.cc)
  file(CONFIGURE OUTPUT ${source} CONTENT "// ${name}: builds its precompiled header only\n")
  add_library(${name} OBJECT ${source})
  target_link_libraries(${name} PRIVATE ${A_LINKS})
  target_precompile_headers(${name} PRIVATE ${A_HEADERS})
  ddp_set_warnings(${name})
endfunction()

if(NOT DDP_SDK_ONLY)
  # The product's Asio libraries and programs (-O of the build type).
  ddp_pch_donor(ddp_pch_asio LINKS ddp_asio ddp_spdlog HEADERS ${DDP_PCH_STD} ${DDP_PCH_ASIO})
  # The pure libraries (membership, cluster, auth): the standard headers alone.
  ddp_pch_donor(ddp_pch_std HEADERS ${DDP_PCH_STD})
endif()
