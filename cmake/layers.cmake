# layers.cmake — components as static libraries and the rule that keeps their layers.
#
#   cuda_agent_component(judge DEPS common task ...)   # src/judge/*.cc → cuda_agent_judge
#   cuda_agent_check_layers()                          # after every component is declared
#
# With CUDA_AGENT_PCH on, every component's sources share one precompiled header of the library
# headers they include most (CUDA_AGENT_PCH_HEADERS, in the first component: common); the tests
# have their own (the same plus GoogleTest, cuda_agent_precompile_test_headers).
#
# A component may include headers of itself and of the components in its dependency closure (what
# it may link). cuda_agent_check_layers reads every source's `#include "X/..."` lines and stops the
# configuration with the file, the line and the allowed list when X is outside that closure.

set(CUDA_AGENT_TEST_SOURCES "")
set(CUDA_AGENT_COMPONENT_NAMES "")

function(cuda_agent_component name)
  cmake_parse_arguments(arg "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cc)
  set(library_sources "")
  set(test_sources "")
  foreach(source ${sources})
    if(source MATCHES "_test\\.cc$")
      list(APPEND test_sources ${source})
    elseif(NOT source MATCHES "/main\\.cc$" AND NOT source MATCHES "_library\\.cc$")
      list(APPEND library_sources ${source})
    endif()
  endforeach()
  file(GLOB sub_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*/*.cc)
  foreach(source ${sub_sources})
    if(source MATCHES "_test\\.cc$")
      list(APPEND test_sources ${source})
    else()
      list(APPEND library_sources ${source})
    endif()
  endforeach()
  set(target cuda_agent_${name})
  if(library_sources)
    add_library(${target} STATIC ${library_sources})
    set(scope PUBLIC)
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${target} ${scope} ${CMAKE_SOURCE_DIR}/src)
  if(CUDA_AGENT_PCH AND library_sources)
    if(TARGET cuda_agent_common AND NOT name STREQUAL "common")
      target_precompile_headers(${target} REUSE_FROM cuda_agent_common)
    else()
      target_precompile_headers(${target} PRIVATE ${CUDA_AGENT_PCH_HEADERS})
    endif()
  endif()
  target_link_libraries(${target} ${scope} nlohmann_json::nlohmann_json Threads::Threads
                        ${CMAKE_DL_LIBS} m)
  # The closure: the declared components and everything they may use.
  set(closure ${name})
  foreach(dep ${arg_DEPS})
    if(NOT TARGET cuda_agent_${dep})
      message(FATAL_ERROR "component ${name}: dependency ${dep} is not declared before it")
    endif()
    target_link_libraries(${target} ${scope} cuda_agent_${dep})
    get_property(dep_closure GLOBAL PROPERTY CUDA_AGENT_CLOSURE_${dep})
    list(APPEND closure ${dep} ${dep_closure})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY CUDA_AGENT_CLOSURE_${name} ${closure})
  set_property(GLOBAL APPEND PROPERTY CUDA_AGENT_COMPONENTS ${name})
  set(CUDA_AGENT_TEST_SOURCES ${CUDA_AGENT_TEST_SOURCES} ${test_sources} PARENT_SCOPE)
endfunction()

# The test binary's precompiled header: the components' headers and GoogleTest's.
function(cuda_agent_precompile_test_headers target)
  if(CUDA_AGENT_PCH)
    target_precompile_headers(${target} PRIVATE ${CUDA_AGENT_PCH_HEADERS} <gtest/gtest.h>)
  endif()
endfunction()

function(cuda_agent_check_layers)
  get_property(components GLOBAL PROPERTY CUDA_AGENT_COMPONENTS)
  set(problems "")
  foreach(name ${components})
    get_property(closure GLOBAL PROPERTY CUDA_AGENT_CLOSURE_${name})
    file(GLOB_RECURSE files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cc
         ${CMAKE_SOURCE_DIR}/src/${name}/*.h)
    foreach(file ${files})
      file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
      foreach(line ${includes})
        string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" used "${line}")
        list(FIND components ${used} known)
        list(FIND closure ${used} allowed)
        if(known GREATER -1 AND allowed EQUAL -1)
          file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${file})
          string(REPLACE ";" " " allowed_text "${closure}")
          list(APPEND problems "  ${rel}: ${line} — ${name} may use only: ${allowed_text}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(problems)
    string(REPLACE ";" "\n" text "${problems}")
    message(FATAL_ERROR "layer violations (docs/architecture.md):\n${text}")
  endif()
endfunction()
