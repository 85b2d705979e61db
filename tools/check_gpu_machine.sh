#!/usr/bin/env bash
# Checks a machine with GPUs: the whole test suite (its GPU cases run the
# real programs on 1..(GPU count) ranks in both modes and, with NCCL >= 2.30,
# on up to 8 ranks sharing the GPUs), compute-sanitizer's memory and leak
# check on both programs in both modes (and at 2 MPI ranks sharing a GPU),
# NCCL's own log of what it chose, and --bench --overlap with 2 and 4 ranks
# sharing the GPUs. Writes everything to DIR (default ./gpu-logs) and prints
# the summary lines.
#   [NCCL_HOME=dir] [CHECK_BENCH=0] tools/check_gpu_machine.sh [DIR]
# CHECK_BENCH=0 leaves out the two --bench runs per program (about a minute).
set -u
cd "$(dirname "$0")/.." || exit 1
case ${1:-} in
  -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
# It starts with `make clean` (your builds go): only where there is a GPU.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "check_gpu_machine.sh: no GPU here (nvidia-smi -L lists none): it checks a machine with GPUs; without one, run make test" >&2
  exit 2
fi
out=${1:-gpu-logs}
mkdir -p "$out"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
[ -n "${NCCL_HOME:-}" ] && export NCCL_HOME
limit=${CHECK_TIMEOUT:-120} # seconds per program run outside make test

{
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1
  nvcc --version 2>/dev/null | tail -n 1
  echo "NCCL_HOME=${NCCL_HOME:-(unset: the system NCCL)}"
  mpirun --version 2>/dev/null | head -n 1
} >"$out/machine.txt" 2>&1

make clean >/dev/null 2>&1
make test >"$out/make_test.log" 2>&1
status=$?
"tests/build/unit/gpu_facts" >>"$out/machine.txt" 2>&1
cat "$out/machine.txt"
grep -E '^not ok|# SKIP|passed, .* failed' "$out/make_test.log"
cp -r tests/build/logs "$out/test-logs"
code=$(sed -n 's/^nccl=\([0-9]*\).*/\1/p' "$out/machine.txt")

# NCCL's allocator first probes fabric handles, which compute-sanitizer would
# list as API errors: --report-api-errors no keeps real errors only.
sanitize=(timeout -k 5 "$limit" compute-sanitizer --leak-check full --report-api-errors no)
summary() { echo "$1: exit $2; $(grep -h 'ERROR SUMMARY\|LEAK SUMMARY' "$3" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"; }
for p in allreduce_sm allgather_ce; do
  log=$out/sanitizer-$p-pthread.log
  NTHREADS=1 "${sanitize[@]}" "tests/build/real-pthread/$p" >"$log" 2>&1
  summary "sanitizer $p pthread" $? "$log"
  log=$out/sanitizer-$p-mpi.log
  mpirun -np 1 "${sanitize[@]}" "tests/build/real-mpi/$p" >"$log" 2>&1
  summary "sanitizer $p mpi" $? "$log"
  log=$out/nccl-debug-$p.log
  NTHREADS=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,REG timeout "$limit" "tests/build/real-pthread/$p" >"$log" 2>&1
  echo "NCCL log $p: exit $?"
done

[ "${code:-0}" -ge 23000 ] || { echo "NCCL older than 2.30: no shared-GPU runs"; exit $status; }
export NCCL_MULTI_RANK_GPU_ENABLE=1
for p in allreduce_sm allgather_ce; do
  log=$out/sanitizer-$p-mpi-2-shared.log
  mpirun -np 2 "${sanitize[@]}" "tests/build/real-mpi/$p" >"$log" 2>&1
  summary "sanitizer $p mpi, 2 ranks sharing a GPU" $? "$log"
  log=$out/nccl-tuning-$p-2-shared.log
  NTHREADS=2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout "$limit" "tests/build/real-pthread/$p" >"$log" 2>&1
  echo "NCCL TUNING log $p, 2 ranks sharing a GPU: exit $?"
  grep -m 2 -h '\[Symmetric\]\|\[Copy Engine\]' "$log" | sed 's/^/  /'
  for n in 2 4; do
    [ "${CHECK_BENCH:-1}" = 0 ] && break
    log=$out/bench-$p-$n-shared
    start=$(date +%s)
    NTHREADS=$n timeout -k 5 "$limit" "tests/build/real-pthread/$p" --bench --overlap --csv "$log.csv" >"$log.txt" 2>&1
    echo "bench $p, $n ranks sharing a GPU: exit $? in $(($(date +%s) - start)) s; $(tail -n 1 "$log.txt")"
  done
done
exit $status
