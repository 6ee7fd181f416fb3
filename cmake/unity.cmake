# Unity sources of our own, in place of CMake's UNITY_BUILD.
#
# CMake's unity sources include each file by its absolute path (`#include "/home/me/baton/src/x.cpp"`),
# which ends up in the preprocessed text (its line markers), so a compiler cache keyed on that text
# never hits from a clone in another folder (CMake 4.0's UNITY_BUILD_RELOCATABLE fixes this; Debian
# 12 has 3.25). Ours include each file by its path relative to the unity source itself
# (`#include "../../../src/core/clock.cpp"`): with ccache's base_dir the whole compile is then the
# same text in every clone whose build folder sits at the same place in it (build/, build-sanitize/).
#
# Each target's own C++ sources, in the order it lists them, go 8 to a unity source, like CMake's
# default batch. Left to compile alone: generated sources (they live in the build folder), sources
# named by a generator expression, and targets of one source.

set(BATON_UNITY_BATCH_SIZE 8)

function(baton_unity_target target)
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY|SHARED_LIBRARY|EXECUTABLE)$")
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  if(NOT sources)
    return()
  endif()
  get_target_property(target_dir ${target} SOURCE_DIR)
  set(alone "")
  set(batched "")
  foreach(source IN LISTS sources)
    if(source MATCHES "\\$<")
      list(APPEND alone "${source}")
      continue()
    endif()
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${target_dir}")
    string(FIND "${path}" "${PROJECT_SOURCE_DIR}/" in_source)
    string(FIND "${path}" "${PROJECT_BINARY_DIR}/" in_build)
    if(path MATCHES "\\.cpp$" AND in_source EQUAL 0 AND NOT in_build EQUAL 0)
      list(APPEND batched "${path}")
    else()
      list(APPEND alone "${path}")
    endif()
  endforeach()
  list(LENGTH batched count)
  if(count LESS 2)
    return()
  endif()

  set(unity_dir "${PROJECT_BINARY_DIR}/unity/${target}")
  set(position 0)
  foreach(path IN LISTS batched)
    math(EXPR batch "${position} / ${BATON_UNITY_BATCH_SIZE}")
    math(EXPR position "${position} + 1")
    file(RELATIVE_PATH relative "${unity_dir}" "${path}")
    string(APPEND content_${batch} "#include \"${relative}\"\n")
  endforeach()
  set(unity_sources "")
  foreach(index RANGE ${batch})
    # file(CONFIGURE) rewrites a file only when its text changes: nothing recompiles at a
    # re-configure that did not change the lists.
    file(CONFIGURE OUTPUT "${unity_dir}/unity_${index}.cpp" CONTENT "${content_${index}}" @ONLY)
    list(APPEND unity_sources "${unity_dir}/unity_${index}.cpp")
  endforeach()
  set_property(TARGET ${target} PROPERTY SOURCES ${unity_sources} ${alone})
endfunction()

# Every target defined in DIR and the directories below it.
function(baton_unity_directory dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    baton_unity_target(${target})
  endforeach()
  get_property(subdirectories DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    baton_unity_directory("${subdirectory}")
  endforeach()
endfunction()
