# With DDP_STATIC_RELEASE (cmake/Dependencies.cmake): the C++ runtime linked into the programs,
# so they need nothing but glibc (scripts/release.sh checks which glibc symbols they use), and
# glibc_234.cc in place of the one newer glibc function that runtime calls.
if(DDP_STATIC_RELEASE)
  foreach(program ddprun ddp-rendezvous)
    target_sources(${program} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/release/glibc_234.cc)
    target_link_options(${program} PRIVATE -static-libstdc++ -static-libgcc)
  endforeach()
endif()
