# The suite owns its environment: sourced first by run_tests.sh and
# fault_matrix.sh, it clears every variable of the caller's shell that
# changes what the programs, NCCL, CUDA, mpirun or the builds do, so that a
# verdict never depends on what the caller exported. A case that needs such
# a variable sets it for its own run.
#
# Kept, because they are how the suite reaches this machine's GPUs and
# libraries, or are the suite's own controls:
#   PATH, HOME, LD_LIBRARY_PATH      where the programs, mpirun and libraries are
#   CUDA_VISIBLE_DEVICES             which GPUs the user lends the suite:
#                                    kept as TEST_GPUS for the real GPU
#                                    cases alone, and cleared (the
#                                    simulation reads it too)
#   CUDA_HOME, NCCL_HOME             the toolkit and NCCL to build against
#   NCCL_NVLS_ENABLE                 set to 0 on shared GPU hosts, to keep
#                                    NVLink multicast off: never unset it
#   NCCL_MATRIX, NCCL_MATRIX_DOWNLOAD, NCCL_WHEELS   the NCCL matrix's own
#   TEST_*, FAULT_JOBS               the runners' own options
#   other OMPI_MCA_*, PMIX_MCA_*, PRTE_MCA_*  how this machine's Open MPI
#                                    starts processes (the H200 machine sets
#                                    OMPI_MCA_plm and PMIX_MCA_gds: mpirun
#                                    needs them there)
# Cleared (the patterns below): every other NCCL_*; NTHREADS; CUDA launch
# settings; what says "this process is a rank of an mpirun job" (so that
# the suite run under mpirun does not take its programs for ranks); MPI
# settings that change how many ranks mpirun starts or where (hostfiles,
# hosts, mapping), MPICH's and batch systems' (Slurm, PBS, LSF); the
# simulation's and the test hooks' switches; sanitizer options and
# LD_PRELOAD; make variables that change a build (CC, CFLAGS, MPI, MPI_HOME,
# ...).
#
# TEST_KEEP_ENV=1 keeps everything: the suite's own check that this file
# matters (checks/hermetic-*) runs with it once, and wants failures.

SUITE_CLEARED=""
own_environment() {
  [ "${TEST_KEEP_ENV:-0}" = 1 ] && return 0
  local v
  for v in $(compgen -e); do
    case $v in
      NCCL_HOME | NCCL_NVLS_ENABLE | NCCL_MATRIX | NCCL_MATRIX_DOWNLOAD | NCCL_WHEELS) ;;
      CUDA_VISIBLE_DEVICES)
        # The GPUs lent to the suite: its real GPU cases set it from
        # TEST_GPUS (programs.sh, gpu_run); the simulation reads it too,
        # so nothing else sees it.
        export TEST_GPUS=${TEST_GPUS-$CUDA_VISIBLE_DEVICES}
        unset CUDA_VISIBLE_DEVICES
        SUITE_CLEARED+="CUDA_VISIBLE_DEVICES(kept as TEST_GPUS) "
        ;;
      NCCL_* | NTHREADS | CUDA_LAUNCH_BLOCKING | CUDA_DEVICE_MAX_CONNECTIONS | \
        OMPI_COMM_WORLD_* | OMPI_UNIVERSE_SIZE | OMPI_MCA_orte_ess_* | OMPI_MCA_ess_base_* | \
        PMIX_RANK | PMIX_NAMESPACE | PMIX_SERVER_* | PMIX_SYSTEM_* | \
        *_MCA_*hostfile* | *_MCA_*rmaps* | *_MCA_*_host | *_MCA_orte_*host* | \
        MPIEXEC_* | HYDRA_* | I_MPI_* | MPICH_* | SLURM_* | PBS_* | LSB_* | \
        SIM_* | STALL_RANK | LD_PRELOAD | ASAN_OPTIONS | UBSAN_OPTIONS | TSAN_OPTIONS | LSAN_OPTIONS | \
        CC | CFLAGS | CPPFLAGS | LDFLAGS | MPI | MPI_HOME | MPICC | V | HAVE_CUPTI | HAVE_CUBLAS | \
        CXX | CXXFLAGS | NVCC | CUDA_ARCH | LEAN | NP | LSA_NCCL_HOME | FACTS_BIN | \
        GAPS_* | WHATRAN_* | FAIL_RANK | HANG_FINALIZE_RANK | STALL_CALLOC_COUNT | PMI_RANK | \
        RUNTIME_LIBS | MODE_LIBS | BUILD_DIR | BIN | PREFIX | DESTDIR | MAKEFLAGS | MFLAGS | MAKELEVEL)
        unset "$v"
        SUITE_CLEARED+="$v "
        ;;
    esac
  done
}
own_environment

# GNU make cannot name a file whose path has a space, and the suite's
# builds name files under the checkout. From a checkout whose path has one,
# the suite works through a link to it whose path has none, in a folder of
# the user's own (tests/lib/path_without_spaces.sh), and everything it
# starts sees that path: SUITE_ROOT (tests/Makefile and the Python checks
# take the checkout from it).
. "$(dirname "${BASH_SOURCE[0]}")/path_without_spaces.sh"
case $PWD in
  *[[:space:]]*)
    if ! suite_link=$(path_without_spaces "$PWD") || ! cd "$suite_link"; then
      echo "tests: the checkout's path has a space ('$PWD'), and no link to it without one could be made" >&2
      exit 2
    fi
    ;;
esac
export SUITE_ROOT=$PWD
