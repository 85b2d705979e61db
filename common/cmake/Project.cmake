# The project around the examples, for the top-level CMakeLists.txt and for
# an example folder built alone (a copy of 01_allreduce/ or 02_allgather/
# beside common/, and instruments/ if you keep it). EXAMPLES_ROOT: the
# folder that holds common/.
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "build type" FORCE)
endif()

option(MPI "one process per GPU, started by mpirun" OFF)
option(LEAN "the lessons alone, without instruments/" OFF)
set(NP 2 CACHE STRING "processes ctest starts in the MPI build")

list(APPEND CMAKE_MODULE_PATH "${EXAMPLES_ROOT}/common/cmake")
include(NcclExamples) # finds CUDA, NCCL, MPI; defines nccl_example()

if(NOT EXISTS ${EXAMPLES_ROOT}/instruments/CMakeLists.txt)
  set(LEAN ON) # a copy without instruments/
endif()
add_subdirectory(${EXAMPLES_ROOT}/common ${CMAKE_BINARY_DIR}/common)
if(NOT LEAN)
  add_subdirectory(${EXAMPLES_ROOT}/instruments ${CMAKE_BINARY_DIR}/instruments)
endif()
enable_testing()
