# With DDP_STATIC_RELEASE (cmake/Dependencies.cmake): the C++ runtime linked into the programs,
# so they need nothing but glibc (scripts/release.sh checks which glibc symbols they use).
if(DDP_STATIC_RELEASE)
  foreach(program ddprun ddp-rendezvous)
    target_link_options(${program} PRIVATE -static-libstdc++ -static-libgcc)
  endforeach()
endif()
