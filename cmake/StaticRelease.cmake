# With DDP_STATIC_RELEASE (cmake/Dependencies.cmake): the C++ runtime linked into the programs,
# so they need nothing but glibc (scripts/release.sh checks which glibc symbols they use), and
# glibc_234.cc in place of the one newer glibc function that runtime calls.
if(DDP_STATIC_RELEASE)
  foreach(program ddprun ddp-rendezvous)
    target_sources(${program} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/release/glibc_234.cc)
    # It stands in for glibc's own functions: only the C headers it names (cmake/Pch.cmake).
    set_source_files_properties(${PROJECT_SOURCE_DIR}/cmake/release/glibc_234.cc
      TARGET_DIRECTORY ${program} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    target_link_options(${program} PRIVATE -static-libstdc++ -static-libgcc)
  endforeach()
endif()
