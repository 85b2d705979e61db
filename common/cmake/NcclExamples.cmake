# What every example's CMakeLists.txt shares: the toolkit, NCCL, MPI, the
# flags of common/toolchain.mk, and nccl_example(), which links a program
# with common/ (and instruments/) and adds its ctest.

# CUDA_HOME, as make takes it (a CMake variable or the environment).
if(NOT DEFINED CUDAToolkit_ROOT)
  if(DEFINED CUDA_HOME)
    set(CUDAToolkit_ROOT "${CUDA_HOME}")
  elseif(DEFINED ENV{CUDA_HOME})
    set(CUDAToolkit_ROOT "$ENV{CUDA_HOME}")
  endif()
endif()
find_package(CUDAToolkit REQUIRED)
find_package(NCCL 2.27 REQUIRED)
find_package(Threads REQUIRED)
if(MPI)
  find_package(MPI REQUIRED COMPONENTS C)
endif()

# The test suite links its simulation of CUDA and NCCL instead of the real
# libraries (as make's RUNTIME_LIBS); then the instruments link no CUPTI
# or cuBLAS either.
set(RUNTIME_LIBS "" CACHE STRING
    "replaces NCCL, the CUDA runtime, CUPTI and cuBLAS at link time (tests)")

# The flags of common/toolchain.mk: per-thread default streams (ranks that
# are threads must not share the legacy stream), GNU extensions of libc,
# and the toolkit's headers after the system's (a system nccl.h wins over
# the toolkit's copy).
# A lesson with a kernel of its own (main.cu) is compiled by nvcc: NCCL's
# headers are system headers there, ahead of the toolkit's (which may hold
# an older nccl.h), and the warnings reach the host compiler; NCCL's own
# initializers name only their structs' first fields.
function(nccl_example_flags target)
  target_compile_definitions(${target} PRIVATE
    CUDA_API_PER_THREAD_DEFAULT_STREAM=1 _GNU_SOURCE)
  foreach(dir ${CUDAToolkit_INCLUDE_DIRS})
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:C>:-idirafter${dir}>"
      "$<$<COMPILE_LANGUAGE:CUDA>:-isystem=${dir}>")
  endforeach()
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:C>:-Wall;-Wextra;-Werror>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror,-Wno-missing-field-initializers>")
  target_include_directories(${target} SYSTEM PRIVATE ${NCCL_INCLUDE_DIR})
  if(MPI)
    target_link_libraries(${target} PRIVATE MPI::MPI_C)
  endif()
endfunction()

# nccl_example(TARGET MIN_NCCL VERSION): TARGET (an executable made of its
# main.c) with common/ and the instruments (or their stand-in); built only
# when the NCCL found is at least VERSION. Its ctest runs it once.
function(nccl_example target)
  cmake_parse_arguments(ARG "" "MIN_NCCL" "" ${ARGN})
  if(ARG_MIN_NCCL AND NCCL_VERSION VERSION_LESS ARG_MIN_NCCL)
    message(WARNING "${target} needs NCCL >= ${ARG_MIN_NCCL}; found "
                    "${NCCL_VERSION} (${NCCL_INCLUDE_DIR}): not built")
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    return()
  endif()
  nccl_example_flags(${target})
  target_link_libraries(${target} PRIVATE example_common)
  if(NOT LEAN)
    target_link_libraries(${target} PRIVATE example_instruments)
  endif()
  if(RUNTIME_LIBS)
    target_link_libraries(${target} PRIVATE ${RUNTIME_LIBS})
  else()
    target_link_libraries(${target} PRIVATE NCCL::nccl CUDA::cudart_static)
    if(NOT LEAN)
      target_link_libraries(${target} PRIVATE ${INSTRUMENTS_LIBS})
    endif()
  endif()
  target_link_libraries(${target} PRIVATE Threads::Threads m ${CMAKE_DL_LIBS} rt)
  # Lazy binding, as common/example.mk says why: an NCCL too old for a
  # function is refused in one line by the program, not by the loader.
  target_link_options(${target} PRIVATE "LINKER:-z,lazy")
  get_target_property(sources ${target} SOURCES)
  if(sources MATCHES "\\.cu")
    target_link_libraries(${target} PRIVATE stdc++)
  endif()
  install(TARGETS ${target} RUNTIME DESTINATION bin)
  if(MPI)
    add_test(NAME ${target} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG}
             ${NP} ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS})
  else()
    add_test(NAME ${target} COMMAND ${target})
  endif()
  # Without a GPU the program says so and exits 1: ctest reports it as
  # skipped, with that line, rather than failed.
  set_tests_properties(${target} PROPERTIES SKIP_REGULAR_EXPRESSION "no usable GPU")
endfunction()
