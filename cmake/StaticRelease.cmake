# The release programs ddprun_release and ddp-rendezvous_release (scripts/release.sh), built
# only on request into static/: the programs' own objects and libraries, linked statically
# against everything but glibc, so they run on any x86-64 Linux with glibc >= 2.34 (release.sh
# checks which glibc symbols they use): libstdc++ and libgcc, the static archives that
# ddp_third_party names (cmake/Dependencies.cmake), spdlog and fmt from release/logging.cc, and
# release/glibc_234.cc in place of the newer glibc functions that runtime calls. Defined only
# where every one of those archives exists.
set(missing ${DDP_RELEASE_ARCHIVES})
list(FILTER missing INCLUDE REGEX "-NOTFOUND$")
if(missing)
  message(STATUS "release programs not defined: no ${missing}")
  return()
endif()
set(release ${CMAKE_CURRENT_LIST_DIR}/release)
add_library(ddp_release_runtime OBJECT EXCLUDE_FROM_ALL ${release}/glibc_234.cc
                                                        ${release}/logging.cc)
target_compile_definitions(ddp_release_runtime PRIVATE SPDLOG_COMPILED_LIB SPDLOG_FMT_EXTERNAL)
ddp_set_warnings(ddp_release_runtime)
foreach(program ddprun ddp-rendezvous)
  add_executable(${program}_release EXCLUDE_FROM_ALL)
  target_link_libraries(${program}_release PRIVATE ddp_release_runtime ${program}_objects)
  target_link_options(${program}_release PRIVATE -static-libstdc++ -static-libgcc)
  set_target_properties(${program}_release PROPERTIES DDP_RELEASE ON OUTPUT_NAME ${program}
                        RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/static)
endforeach()
