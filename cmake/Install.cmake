# `cmake --install <build> --prefix P`: P/bin/ddprun and P/bin/ddp-rendezvous, their man pages
# (P/share/man/man1, generated from --help by help2man at build time), the user documentation
# and the Python examples (P/share/doc/ddprun), and, where LibTorch was found, the worker SDK
# package (worker_sdk/CMakeLists.txt: component worker_sdk, find_package(ddp_worker_sdk)).
# Component "runtime" holds everything but the SDK.
include(GNUInstallDirs)

install(TARGETS ddprun ddp-rendezvous RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT runtime)

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
  COMPONENT runtime FILES_MATCHING PATTERN "*.md")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/python/
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/python COMPONENT runtime
  FILES_MATCHING PATTERN "*.py")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/scripts/jobs/
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/jobs COMPONENT runtime)

# Man pages: help2man runs each program's --help with the program found on PATH, so the
# usage line names `ddprun`, not the build path. Without help2man (scripts/setup.sh installs
# it) the pages are left out with a warning.
find_program(DDP_HELP2MAN help2man)
if(DDP_HELP2MAN)
  set(_ddp_man_dir ${PROJECT_BINARY_DIR}/man)
  set(_ddp_man_pages "")
  foreach(prog ddprun ddp-rendezvous)
    if(prog STREQUAL "ddprun")
      set(_name "launch distributed PyTorch training (torchrun's command line)")
    else()
      set(_name "TCPStore-compatible rendezvous and store daemon")
    endif()
    add_custom_command(OUTPUT ${_ddp_man_dir}/${prog}.1
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_ddp_man_dir}
      COMMAND ${CMAKE_COMMAND} -E env "PATH=$<TARGET_FILE_DIR:${prog}>:$ENV{PATH}"
              ${DDP_HELP2MAN} --no-info --no-discard-stderr
              --version-string=${PROJECT_VERSION} --name=${_name}
              --output=${_ddp_man_dir}/${prog}.1 ${prog}
      DEPENDS ${prog}
      COMMENT "Man page ${prog}.1 from ${prog} --help"
      VERBATIM)
    list(APPEND _ddp_man_pages ${_ddp_man_dir}/${prog}.1)
  endforeach()
  add_custom_target(man_pages ALL DEPENDS ${_ddp_man_pages})
  install(FILES ${_ddp_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
else()
  message(WARNING "help2man not found: man pages are not built (apt install help2man)")
endif()
