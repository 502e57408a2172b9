# DDP_COMMIT: the commit the build is made from ("unknown" outside a git checkout), with
# "-modified" when tracked files differ from it; `ddprun --version` prints it. Read at configure
# time; a change of HEAD re-runs the configure step, so the string stays true after a commit.
find_package(Git QUIET)
set(DDP_COMMIT unknown)
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _ddp_head
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _ddp_rc)
  if(_ddp_rc EQUAL 0)
    set(DDP_COMMIT ${_ddp_head})
    execute_process(COMMAND ${GIT_EXECUTABLE} diff --quiet HEAD --
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} RESULT_VARIABLE _ddp_dirty)
    if(NOT _ddp_dirty EQUAL 0)
      string(APPEND DDP_COMMIT "-modified")
    endif()
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --absolute-git-dir
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _ddp_git_dir
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  foreach(f HEAD packed-refs refs/heads/main)
    if(EXISTS ${_ddp_git_dir}/${f})
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_ddp_git_dir}/${f})
    endif()
  endforeach()
endif()
