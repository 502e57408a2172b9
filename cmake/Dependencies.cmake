# Every third-party dependency is found here, once. All come from Debian packages
# (scripts/setup.sh installs them).
# The release programs (cmake/StaticRelease.cmake; target property DDP_RELEASE) are linked
# statically against everything but glibc, from the same objects as the others:
# ddp_third_party(<name> SHARED <targets> STATIC <archives>) is what a target links for a
# library: its shared-library targets everywhere (their compile usage included), and for the
# release programs its static archives (lib<name>.a) instead.
set(DDP_RELEASE_LINK "$<BOOL:$<TARGET_PROPERTY:DDP_RELEASE>>")
set(DDP_RELEASE_ARCHIVES "")  # each archive found; StaticRelease.cmake needs all of them
function(ddp_third_party name)
  cmake_parse_arguments(A "" "" "SHARED;STATIC" ${ARGN})
  add_library(${name} INTERFACE)
  foreach(target ${A_SHARED})
    target_link_libraries(${name} INTERFACE "$<$<NOT:${DDP_RELEASE_LINK}>:${target}>")
  endforeach()
  foreach(archive ${A_STATIC})
    find_library(DDP_ARCHIVE_${archive} lib${archive}.a)
    if(DDP_ARCHIVE_${archive})
      target_link_libraries(${name} INTERFACE "$<${DDP_RELEASE_LINK}:${DDP_ARCHIVE_${archive}}>")
    endif()
    list(APPEND DDP_RELEASE_ARCHIVES ${DDP_ARCHIVE_${archive}})
  endforeach()
  set(DDP_RELEASE_ARCHIVES ${DDP_RELEASE_ARCHIVES} PARENT_SCOPE)
endfunction()

find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
# ddp_spdlog: what every target links for logging (the release programs compile spdlog and fmt
# in: cmake/release/logging.cc).
ddp_third_party(ddp_spdlog SHARED spdlog::spdlog)
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
  if(TARGET Boost::process)
    ddp_third_party(ddp_boost_process SHARED Boost::filesystem Boost::process
                    STATIC boost_process boost_filesystem boost_atomic)
  else()
    ddp_third_party(ddp_boost_process SHARED Boost::filesystem STATIC boost_filesystem boost_atomic)
  endif()
  find_package(OpenSSL REQUIRED)
  ddp_third_party(ddp_ssl SHARED OpenSSL::SSL OpenSSL::Crypto STATIC ssl crypto)
  ddp_third_party(ddp_crypto SHARED OpenSSL::Crypto STATIC crypto)
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
