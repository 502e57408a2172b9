# `cpack -G DEB` (in the build directory): one Debian package, ddprun_<version>_<arch>.deb,
# with everything `cmake --install` gives (cmake/Install.cmake). Install it with
# `apt install ./ddprun_<version>_<arch>.deb`; the shared-library dependencies are computed by
# dpkg-shlibdeps (dpkg-dev). The worker SDK needs LibTorch's headers to be used (suggested).
set(CPACK_PACKAGE_NAME ddprun)
set(CPACK_PACKAGE_VENDOR "ddprun")
set(CPACK_PACKAGE_CONTACT "ddprun maintainers <ddprun@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Launcher for distributed PyTorch training, a drop-in for torchrun")
set(CPACK_PACKAGE_DESCRIPTION
  "ddprun starts and supervises the workers of a distributed PyTorch job with torchrun's\n\
command line and environment; ddp-rendezvous is its TCPStore-compatible daemon. Includes\n\
the C++ worker SDK (CMake package ddp_worker_sdk) and the Python examples.")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, libtorch-dev")
set(CPACK_STRIP_FILES ON)
include(CPack)
