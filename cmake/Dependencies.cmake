# Every third-party dependency is found here, once. All come from Debian packages
# (scripts/setup.sh installs them).
# DDP_STATIC_RELEASE (scripts/release.sh): ddprun and ddp-rendezvous linked statically against
# everything but glibc: libstdc++ and libgcc, Boost, OpenSSL, and spdlog and fmt compiled in from
# their headers (Debian ships no static spdlog or fmt). cmake/StaticRelease.cmake adds the flags.
option(DDP_STATIC_RELEASE "Link the programs statically against all but glibc" OFF)
if(DDP_STATIC_RELEASE)
  set(Boost_USE_STATIC_LIBS ON)
  set(OPENSSL_USE_STATIC_LIBS ON)
endif()

find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
# ddp_spdlog: what every target links for logging (see DDP_STATIC_RELEASE above).
add_library(ddp_spdlog INTERFACE)
if(DDP_STATIC_RELEASE)
  find_package(fmt REQUIRED)
  target_link_libraries(ddp_spdlog INTERFACE fmt::fmt-header-only)
  target_compile_definitions(ddp_spdlog INTERFACE SPDLOG_FMT_EXTERNAL)
else()
  target_link_libraries(ddp_spdlog INTERFACE spdlog::spdlog)
endif()
find_package(nlohmann_json 3.11 REQUIRED)
if(DDP_BUILD_TESTS)
  find_package(Catch2 REQUIRED)  # v2 (>= 2.13) or v3: tests include it through tests/catch.h
  if(Catch2_VERSION VERSION_LESS 2.13)
    message(FATAL_ERROR "Catch2 ${Catch2_VERSION} is too old: install Catch2 2.13 or 3.x")
  endif()
  # A run whose test spec matches no case must fail: v2 needs --warn NoTests, v3 does so itself.
  set(DDP_CATCH_STRICT_ARGS "")
  if(Catch2_VERSION VERSION_LESS 3)
    set(DDP_CATCH_STRICT_ARGS --warn NoTests)
  endif()
  include(Catch)
endif()
if(NOT DDP_SDK_ONLY)
  # Asio is header-only; Process v2 needs filesystem, and is a compiled library of its own in
  # newer Boost (proc/CMakeLists.txt).
  find_package(Boost 1.81 REQUIRED COMPONENTS filesystem OPTIONAL_COMPONENTS process)
  find_package(CLI11 REQUIRED)
  # Boost.Asio defaults shared by every target that includes it.
  add_library(ddp_asio INTERFACE)
  target_link_libraries(ddp_asio INTERFACE Boost::headers Threads::Threads)
  target_compile_definitions(ddp_asio INTERFACE BOOST_ASIO_NO_DEPRECATED BOOST_ASIO_HAS_CO_AWAIT)
endif()

# LibTorch is used only by worker_sdk/ (and the benchmarks/tests that drive PyTorch's C++ store).
if(DDP_BUILD_WORKER_SDK OR DDP_BUILD_BENCH)
  find_package(Torch QUIET)
  if(Torch_FOUND)
    # Debian's libtorch is built with Gloo; c10d's ProcessGroupGloo header needs this define.
    add_library(ddp_torch INTERFACE)
    target_link_libraries(ddp_torch INTERFACE ${TORCH_LIBRARIES})
    target_include_directories(ddp_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
    target_compile_definitions(ddp_torch INTERFACE USE_C10D_GLOO)
    set(DDP_HAVE_TORCH ON)
  else()
    message(WARNING "LibTorch not found: worker SDK, PyTorch-store benchmark and C++ interop test are skipped")
    set(DDP_HAVE_TORCH OFF)
  endif()
endif()
