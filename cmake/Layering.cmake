# The build holds the layering (docs: design.md, "CMake holds the layering"): no target exports
# ${PROJECT_SOURCE_DIR}. Each target that owns headers gets an include root of its own,
# ${PROJECT_BINARY_DIR}/include/<target>/, holding only the headers directly in its folder
# (not its subfolders: those belong to other targets), as symlinks under their project-relative
# path. A target can therefore include a header only if it links the owner (directly, or
# through PUBLIC links). tests/checks/layering_check.py checks the same rule from the link graph
# this file writes (ddp_layering_write_table) and names any include that the links do not cover.

# ddp_header_root(<target> [PUBLIC|PRIVATE|INTERFACE] [FOLDER f] [PREFIX p]): the include root
# ${PROJECT_BINARY_DIR}/include/<target>/<p>/ with a symlink per header (*.h, *.hpp) directly in
# ${PROJECT_SOURCE_DIR}/<f>. FOLDER defaults to the calling directory, PREFIX (the path the
# headers are included under) to FOLDER. The scope defaults to PUBLIC (INTERFACE for an
# interface library); the root is a BUILD_INTERFACE include, so installed exports never see it.
# The glob is CONFIGURE_DEPENDS: a header added or removed re-runs CMake at the next build, and
# a link whose header is gone is removed.
function(ddp_header_root target)
  cmake_parse_arguments(A "PUBLIC;PRIVATE;INTERFACE" "FOLDER;PREFIX" "" ${ARGN})
  get_target_property(type ${target} TYPE)
  if(A_PRIVATE)
    set(scope PRIVATE)
  elseif(A_INTERFACE OR type STREQUAL "INTERFACE_LIBRARY")
    set(scope INTERFACE)
  else()
    set(scope PUBLIC)
  endif()
  if(NOT A_FOLDER)
    file(RELATIVE_PATH A_FOLDER ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  if(NOT A_PREFIX)
    set(A_PREFIX ${A_FOLDER})
  endif()
  set(root ${PROJECT_BINARY_DIR}/include/${target})
  set(dest ${root}/${A_PREFIX})

  file(GLOB headers CONFIGURE_DEPENDS LIST_DIRECTORIES false
       ${PROJECT_SOURCE_DIR}/${A_FOLDER}/*.h ${PROJECT_SOURCE_DIR}/${A_FOLDER}/*.hpp)
  set(wanted "")
  foreach(header IN LISTS headers)
    get_filename_component(name ${header} NAME)
    list(APPEND wanted ${name})
  endforeach()
  # Stale entries first (a header removed or renamed since the last configure).
  file(GLOB present LIST_DIRECTORIES false RELATIVE ${dest} ${dest}/*)
  foreach(name IN LISTS present)
    if(NOT name IN_LIST wanted)
      file(REMOVE_RECURSE ${dest}/${name})
    endif()
  endforeach()
  file(MAKE_DIRECTORY ${dest})
  foreach(header IN LISTS headers)
    get_filename_component(name ${header} NAME)
    if(NOT IS_SYMLINK ${dest}/${name})
      file(CREATE_LINK ${header} ${dest}/${name} SYMBOLIC)
    endif()
  endforeach()

  target_include_directories(${target} ${scope} $<BUILD_INTERFACE:${root}>)
  set_property(TARGET ${target} APPEND PROPERTY DDP_HEADER_ROOTS "${A_PREFIX}=${A_FOLDER}")
endfunction()

# ddp_layering_external(NAME n FOLDER f [SOURCES s...] LINKS t...): sources built outside a CMake
# target of this project (a custom command, a separate consumer project), entered in the
# layering table as a pseudo-target that links LINKS. SOURCES are relative to the project; with
# none, every source directly in FOLDER.
function(ddp_layering_external)
  cmake_parse_arguments(A "" "NAME;FOLDER" "SOURCES;LINKS" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY DDP_LAYERING_EXTERNAL ${A_NAME})
  set_property(GLOBAL PROPERTY DDP_LAYERING_EXTERNAL_${A_NAME}_FOLDER ${A_FOLDER})
  set_property(GLOBAL PROPERTY DDP_LAYERING_EXTERNAL_${A_NAME}_SOURCES ${A_SOURCES})
  set_property(GLOBAL PROPERTY DDP_LAYERING_EXTERNAL_${A_NAME}_LINKS ${A_LINKS})
endfunction()

function(_ddp_layering_collect dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _ddp_layering_collect(${sub} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# _ddp_layering_record(<text var> name type roots links interface sources): one target's
# record, appended to <text var>; a -NOTFOUND list (property unset) counts as empty.
function(_ddp_layering_record var name type roots links interfaces sources)
  set(text "${${var}}target ${name}\ntype ${type}\n")
  foreach(key IN ITEMS root link interface source)
    if(NOT ${key}s)
      continue()
    endif()
    foreach(v IN LISTS ${key}s)
      string(APPEND text "${key} ${v}\n")
    endforeach()
  endforeach()
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# ddp_layering_write_table(<file>): the link graph as the layering check reads it, one record
# per target of this project (called once, after every add_subdirectory):
#   target <name>
#   type <CMake TYPE>
#   root <include prefix>=<source folder>     (ddp_header_root)
#   link <dep>                                (LINK_LIBRARIES: what the target itself links)
#   interface <dep>                           (INTERFACE_LINK_LIBRARIES: what its users get)
#   source <path relative to the project>
# Entries keep CMake's generator expressions; the check reads $<BUILD_INTERFACE:x> as x and
# drops $<LINK_ONLY:x> (a static library's PRIVATE link: no headers) and $<INSTALL_INTERFACE:x>.
function(ddp_layering_write_table file)
  _ddp_layering_collect(${PROJECT_SOURCE_DIR} targets)
  set(text "# Written by cmake/Layering.cmake at configure time: the layering check's input.\n")
  string(APPEND text "project ${PROJECT_SOURCE_DIR}\nexclude ${PROJECT_BINARY_DIR}\n")
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "UTILITY" OR type STREQUAL "GLOBAL_TARGET")
      continue()
    endif()
    get_target_property(roots ${t} DDP_HEADER_ROOTS)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${t} LINK_LIBRARIES)
    endif()
    get_target_property(interface ${t} INTERFACE_LINK_LIBRARIES)
    get_target_property(srcdir ${t} SOURCE_DIR)
    get_target_property(sources ${t} SOURCES)
    set(rel_sources "")
    foreach(s IN LISTS sources)
      if(s MATCHES "^\\$<" OR s MATCHES "-NOTFOUND$")
        continue()
      endif()
      if(NOT IS_ABSOLUTE ${s})
        set(s ${srcdir}/${s})
      endif()
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${s})
      list(APPEND rel_sources ${rel})
    endforeach()
    _ddp_layering_record(text ${t} ${type} "${roots}" "${links}" "${interface}" "${rel_sources}")
  endforeach()
  get_property(externals GLOBAL PROPERTY DDP_LAYERING_EXTERNAL)
  foreach(n IN LISTS externals)
    get_property(folder GLOBAL PROPERTY DDP_LAYERING_EXTERNAL_${n}_FOLDER)
    get_property(sources GLOBAL PROPERTY DDP_LAYERING_EXTERNAL_${n}_SOURCES)
    get_property(links GLOBAL PROPERTY DDP_LAYERING_EXTERNAL_${n}_LINKS)
    if(NOT sources)
      file(GLOB sources LIST_DIRECTORIES false RELATIVE ${PROJECT_SOURCE_DIR}
           ${PROJECT_SOURCE_DIR}/${folder}/*.cc ${PROJECT_SOURCE_DIR}/${folder}/*.h)
    endif()
    _ddp_layering_record(text ${n} EXECUTABLE "" "${links}" "" "${sources}")
  endforeach()
  file(WRITE ${file} "${text}")
endfunction()
