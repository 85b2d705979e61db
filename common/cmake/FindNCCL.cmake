# FindNCCL: NCCL's header and library.
#
# Looks in NCCL_HOME or NCCL_ROOT (a CMake variable or the environment),
# then the compiler's default places (/usr/include, /usr/lib/...), then the
# CUDA toolkit (CUDAToolkit_INCLUDE_DIRS, CUDAToolkit_LIBRARY_DIR). Finds an
# install tree (lib/libnccl.so) and the pip wheel's layout
# (site-packages/nvidia/nccl: only lib/libnccl.so.2).
#
# Sets NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY and NCCL_VERSION (from
# nccl.h), and the imported target NCCL::nccl. Honours find_package's
# version argument: find_package(NCCL 2.27 REQUIRED).

set(_nccl_hints)
foreach(_v NCCL_HOME NCCL_ROOT)
  if(DEFINED ${_v} AND NOT "${${_v}}" STREQUAL "")
    list(APPEND _nccl_hints "${${_v}}")
  elseif(DEFINED ENV{${_v}} AND NOT "$ENV{${_v}}" STREQUAL "")
    list(APPEND _nccl_hints "$ENV{${_v}}")
  endif()
endforeach()

if(_nccl_hints)
  # Only there: a NCCL_HOME that lacks NCCL is an error, not a fallback.
  find_path(NCCL_INCLUDE_DIR nccl.h PATHS ${_nccl_hints}
            PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 PATHS ${_nccl_hints}
               PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
else()
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS ${CUDAToolkit_LIBRARY_DIR})
endif()

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_defines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part}[ \t]+([0-9]+)" _m "${_nccl_defines}")
    set(_nccl_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
