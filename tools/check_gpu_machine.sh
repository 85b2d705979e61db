#!/usr/bin/env bash
# Checks a machine with GPUs: the whole test suite (its GPU cases run the
# real programs on 1..(GPU count) ranks in both modes), compute-sanitizer's
# memory and leak check on both programs in both modes, and NCCL's own log
# of what it chose. Writes everything to DIR (default ./gpu-logs) and prints
# the summary lines.
#   tools/check_gpu_machine.sh [DIR]
set -u
cd "$(dirname "$0")/.." || exit 1
out=${1:-gpu-logs}
mkdir -p "$out"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none

{
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1
  nvcc --version 2>/dev/null | tail -n 1
  grep -h '^#define NCCL_VERSION_CODE' /usr/include/nccl.h /usr/local/cuda/include/nccl.h 2>/dev/null
  mpirun --version 2>/dev/null | head -n 1
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

make test >"$out/make_test.log" 2>&1
status=$?
grep -E '^(FAIL|SKIP)|passed, .* failed' "$out/make_test.log"
cp -r tests/build/logs "$out/test-logs"

# NCCL's allocator first probes fabric handles, which compute-sanitizer would
# list as API errors: --report-api-errors no keeps real errors only.
sanitize=(compute-sanitizer --leak-check full --report-api-errors no)
for p in allreduce_sm allgather_ce; do
  NTHREADS=1 "${sanitize[@]}" "tests/build/real-pthread/$p" >"$out/sanitizer-$p-pthread.log" 2>&1
  echo "sanitizer $p pthread: exit $?; $(grep -h 'ERROR SUMMARY\|LEAK SUMMARY' "$out/sanitizer-$p-pthread.log" | tr '\n' ' ')"
  mpirun -np 1 "${sanitize[@]}" "tests/build/real-mpi/$p" >"$out/sanitizer-$p-mpi.log" 2>&1
  echo "sanitizer $p mpi: exit $?; $(grep -h 'ERROR SUMMARY\|LEAK SUMMARY' "$out/sanitizer-$p-mpi.log" | tr '\n' ' ')"
  NTHREADS=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,REG "tests/build/real-pthread/$p" >"$out/nccl-debug-$p.log" 2>&1
  echo "NCCL log $p: exit $?"
done
exit $status
