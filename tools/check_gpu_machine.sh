#!/usr/bin/env bash
# make test-gpu: what only a machine with a GPU can check, on top of
# `make test` (which runs everywhere): the suite's GPU cases (the real
# programs on 1..(GPU count) ranks, and with NCCL >= 2.30 on up to 8 ranks
# sharing the GPUs), compute-sanitizer on every program (memcheck with its
# leak check; racecheck and synccheck on the device API lesson's kernel),
# the docs' blocks marked <!-- needs a GPU ... --> run as written (NCCL_HOME
# for their /path/to/nccl), NCCL's own log of what it chose, and where
# PyTorch is (/opt/torch/.venv/bin/python or python3; TORCH_PYTHON), What
# ran under torchrun (tests/whatran/torch_check.sh). Logs go to
# DIR (default ./gpu-logs); one line per step, then "N passed, N failed".
#   [NCCL_HOME=dir] [CHECK_BENCH=1] tools/check_gpu_machine.sh [DIR]
# CHECK_BENCH=1 adds --bench --overlap at 2 and 4 ranks sharing a GPU.
# Exit status: 0 if every step passed, 1 if one failed, 2 without a GPU.
set -u
cd "$(dirname "$0")/.." || exit 1
case ${1:-} in
  -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "check_gpu_machine.sh: no GPU here (nvidia-smi -L lists none): it checks a machine with GPUs; without one, run make test" >&2
  exit 2
fi
out=${1:-gpu-logs}
mkdir -p "$out" && out=$(cd "$out" && pwd)
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
[ -n "${NCCL_HOME:-}" ] && export NCCL_HOME
. tests/lib/tree_files.sh # copy_tree: the docs' copies, from git or not
limit=${CHECK_TIMEOUT:-120} # seconds per program run outside the suite
passed=0 failed=0
step() { # NAME STATUS [DETAIL]: one line per step, counted
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok   $1${3:+: $3}"
  else failed=$((failed + 1)); echo "FAIL $1: exit $2${3:+; $3}"; fi
}
start=$(date +%s)
# Whether NCCL of version code $1 lets ranks share a GPU: from 2.30.0, with
# NCCL_MULTI_RANK_GPU_ENABLE=1 (no such variable before).
can_share() { [ "${1:-0}" -ge 23000 ]; }

{
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1
  nvcc --version 2>/dev/null | tail -n 1
  echo "NCCL_HOME=${NCCL_HOME:-(unset: the system NCCL)}"
  mpirun --version 2>/dev/null | head -n 1
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

# 1. The suite's GPU cases (TEST_GPU=1), what they need built first: the
# watchdog's hang cases, which mostly wait on their time limits, beside
# the others.
B=$PWD/tests/build
prebuilt="real-programs-pthread real-programs-mpi unit/gpu_facts hooks/stall_in_register.so
  hooks/stall_in_collective.so hooks/cupti_enable_fails.so"
# shellcheck disable=SC2046 # the list's words are the targets
make -s -C tests -j"$(nproc)" $(for t in $prebuilt; do [[ $t == */* ]] && echo "$B/$t" || echo "$t"; done) \
  >"$out/build.log" 2>&1 || step "build the real programs" $? "$out/build.log"
export TEST_PREBUILT=$(echo $prebuilt) # the two runs below rebuild none of it
"$B/unit/gpu_facts" >>"$out/machine.txt" 2>&1
code=$(sed -n 's/^nccl=\([0-9]*\).*/\1/p' "$out/machine.txt")
gpu_cases() { # NAME FILTER: one run of the suite's GPU cases, in the background
  TEST_GPU=1 TEST_LOGS=$out/suite-$1 TEST_FILTER=$2 bash tests/run_tests.sh >"$out/gpu-cases-$1.log" 2>&1 &
}
gpu_cases hang '^gpu/hang/'
hang_pid=$!
gpu_cases other '^(gpu/(pthread|mpi|facts|what-ran|shared-gpu|emulated-nodes|cupti)|python/(gpu|shared-gpu))/'
other_pid=$!

# 2. compute-sanitizer. NCCL's allocator first probes fabric handles, which
# it would list as API errors: --report-api-errors no keeps real errors.
sanitize=(timeout -k 5 "$limit" compute-sanitizer --report-api-errors no)
sanitized() { # NAME LOG COMMAND...: a sanitizer run, its summary as the detail
  local name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1
  local status=$?
  if [ $status = 0 ] && ! grep -q 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' "$log"; then
    status=1
  fi
  step "$name" $status "$(grep -h 'ERROR SUMMARY\|LEAK SUMMARY\|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
}
for p in allreduce_sm allgather_ce; do
  NTHREADS=1 sanitized "memcheck $p, threads" "$out/memcheck-$p-pthread.log" "${sanitize[@]}" --leak-check full "$B/real-pthread/$p"
  sanitized "memcheck $p, MPI" "$out/memcheck-$p-mpi.log" mpirun -np 1 "${sanitize[@]}" --leak-check full "$B/real-mpi/$p"
  if can_share "${code:-0}"; then
    NCCL_MULTI_RANK_GPU_ENABLE=1 sanitized "memcheck $p, 2 MPI ranks sharing a GPU" "$out/memcheck-$p-mpi-2-shared.log" \
      mpirun -np 2 -x NCCL_MULTI_RANK_GPU_ENABLE "${sanitize[@]}" --leak-check full "$B/real-mpi/$p"
  fi
done
# The device API lesson needs NCCL >= 2.30.7 and its headers (NCCL_HOME).
lsa=$out/lsa-build/allreduce_lsa
if [ "${code:-0}" -ge 23007 ] && make -s -C 03_allreduce_lsa/c ${NCCL_HOME:+NCCL_HOME="$NCCL_HOME"} \
  BUILD_DIR="$out/lsa-build" BIN="$lsa" >"$out/lsa-build.log" 2>&1; then
  for tool in memcheck racecheck synccheck; do
    NTHREADS=1 sanitized "$tool allreduce_lsa, 1 rank" "$out/$tool-allreduce_lsa-1.log" "${sanitize[@]}" --tool $tool "$lsa"
  done
  NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=2 sanitized "racecheck allreduce_lsa, 2 ranks sharing a GPU" \
    "$out/racecheck-allreduce_lsa-2-shared.log" "${sanitize[@]}" --tool racecheck "$lsa" -n 65536
else
  echo "skip allreduce_lsa under compute-sanitizer: NCCL ${code:-?} (needs 2.30.7 and its headers in NCCL_HOME; $out/lsa-build.log)"
fi

# 3. The docs' blocks that need a GPU, as written, in a scratch copy of the
# tree; /path/to/nccl is NCCL_HOME. With one GPU, several ranks share it.
# The pages run at once, each in its own copy; nvcc builds for this GPU
# only (CUDA_ARCH, as a user of one kind of GPU sets it). Blocks that need
# more than this tree and NCCL are left out (pip and a package index, a
# build of nccl-tests, a program of your own).
gpus=$(nvidia-smi -L | grep -c '^GPU ')
share=$([ "$gpus" -lt 4 ] && can_share "${code:-0}" && echo 1)
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
python3 tests/checks/doc_blocks.py --needs | grep -P '\ta GPU' | grep -vE 'pip|nccl-tests|of your own' | cut -d: -f1 | sort -u >"$out/doc-pages.txt"
pages=()
while read -r page; do
  [ -z "${NCCL_HOME:-}" ] && grep -q /path/to/nccl "$page" && { echo "skip $page: its blocks need NCCL_HOME"; continue; }
  copy=$out/docs-tree/${page//\//_}
  rm -rf "$copy" && copy_tree "$copy" "$out"
  python3 tests/checks/doc_blocks.py --script "$page" "a GPU" "$copy" |
    sed "s|/path/to/nccl[-0-9.]*|${NCCL_HOME:-}|g" >"$copy.sh"
  DOC_REPO=$copy CUDA_ARCH=$arch NCCL_MULTI_RANK_GPU_ENABLE=${share:-${NCCL_MULTI_RANK_GPU_ENABLE:-0}} \
    timeout -k 5 $((limit * 3)) bash "$copy.sh" >"$copy.log" 2>&1 &
  pages+=("$page:$!:$copy.log")
done <"$out/doc-pages.txt"
for p in "${pages[@]}"; do
  IFS=: read -r page pid log <<<"$p"
  wait "$pid"
  step "the GPU blocks of $page${share:+ (ranks sharing the GPU)}" $? "$(tail -n 1 "$log")"
done

for run in hang:$hang_pid other:$other_pid; do
  wait "${run#*:}"
  step "GPU cases of the suite (${run%%:*})" $? "$(tail -n 1 "$out/gpu-cases-${run%%:*}.log")"
  grep -E '^not ok' "$out/gpu-cases-${run%%:*}.log"
done

# 4. What NCCL chose, in its own words.
for p in allreduce_sm allgather_ce; do
  NTHREADS=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,REG timeout "$limit" "$B/real-pthread/$p" >"$out/nccl-debug-$p.log" 2>&1
  step "NCCL's log of $p" $? "$(grep -m 1 -h '\[Symmetric\]\|\[Copy Engine\]\|Kernel' "$out/nccl-debug-$p.log" | sed 's/^.*NCCL INFO //')"
done

# 5. PyTorch, where it is here: torchrun of a program of ours with and
# without tools/libwhatran.so preloaded (tests/whatran/torch_check.sh).
make -s -C tools whatran >"$out/whatran-build.log" 2>&1
while IFS= read -r line; do
  case $line in "ok   "*) passed=$((passed + 1)) ;; "FAIL "*) failed=$((failed + 1)) ;; esac
  echo "$line"
done < <(bash tests/whatran/torch_check.sh "$out" "$PWD/tools/libwhatran.so")

if [ "${CHECK_BENCH:-0}" = 1 ] && can_share "${code:-0}"; then
  for p in allreduce_sm allgather_ce; do
    for n in 2 4; do
      log=$out/bench-$p-$n-shared
      NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$n timeout -k 5 "$limit" "$B/real-pthread/$p" --bench --overlap --csv "$log.csv" >"$log.txt" 2>&1
      step "bench $p, $n ranks sharing a GPU" $? "$(tail -n 1 "$log.txt")"
    done
  done
fi
echo "$passed passed, $failed failed ($(($(date +%s) - start)) s; logs in $out)"
[ "$failed" = 0 ]
