#!/usr/bin/env bash
# The test suite (`make test`). Builds what it needs into tests/build, runs
# every case with a time limit (a hang fails instead of stalling) and ends
# with one line "N passed, N failed, N skipped"; exits 0 only if none failed.
#
# Without a GPU the examples run against ncclsim, a host simulation of the
# CUDA and NCCL calls they make (tests/sim). With a GPU the real programs run
# too, on 1..(GPU count) ranks. Logs: tests/build/logs/<case>.{out,err}.
#
# Output is TAP: "ok N - name", "not ok N - name: why" (then the case's
# stderr as "# " lines), "ok N - name # SKIP reason", and the plan "1..N"
# at the end, before the closing line.
#
# TEST_TIMEOUT=s    limit per case (default 60)
# TEST_FILTER=re    run only cases whose name matches the regular expression
# TEST_LIST=1       print the names of the cases (those TEST_FILTER keeps)
#                   without building or running anything
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
B=$ROOT/tests/build
LOG=$B/logs
TIMEOUT=${TEST_TIMEOUT:-60}
FILTER=${TEST_FILTER:-}
LIST=${TEST_LIST:-}
unset MAKEFLAGS MFLAGS MAKELEVEL # build the test variants as this script says
[ -n "$LIST" ] || rm -rf "$LOG" "$B/tmp"
mkdir -p "$LOG" "$B/tmp"
export TMPDIR=$B/tmp

passed=0 failed=0 skipped=0 number=0

# ---------------------------------------------------------------- helpers
# begin NAME: starts a case; returns 1 (skip it) if TEST_FILTER excludes it.
begin() {
  name=$1 why=""
  f=$LOG/${name//[^A-Za-z0-9_.=-]/_} # log file stem
  [ -z "$FILTER" ] || [[ $name =~ $FILTER ]] || return 1
  if [ -n "$LIST" ]; then
    echo "$name"
    return 1
  fi
}
# run CMD...: runs it with the time limit; sets $status.
run() {
  timeout -k 5 "$TIMEOUT" "$@" >"$f.out" 2>"$f.err"
  status=$?
}
want_status() {
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    why+="timed out after ${TIMEOUT}s (hang); "
  elif [ "$status" != "$1" ]; then
    why+="exit status $status, wanted $1; "
  fi
}
want_failure() { # any non-zero status that is not a time-out
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then why+="timed out (hang); "
  elif [ "$status" = 0 ]; then why+="exit status 0, wanted a failure; "; fi
}
want_out() { grep -qF -- "$1" "$f.out" || why+="stdout lacks '$1'; "; }
want_err() { grep -qF -- "$1" "$f.err" || why+="stderr lacks '$1'; "; }
no_out() { ! grep -qF -- "$1" "$f.out" || why+="stdout has '$1'; "; }
no_violation() {
  ! grep -q "ncclsim: \(LEAK\|RULE VIOLATION\)" "$f.err" ||
    why+="the simulation reported a leak or rule violation; "
}
want_out_file() { # exact comparison with an expected file
  diff -u "$1" "$f.out" >"$f.diff" ||
    why+="stdout differs from the expected output (see $f.diff); "
}
end() {
  number=$((number + 1))
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    echo "ok $number - $name"
  else
    failed=$((failed + 1))
    echo "not ok $number - $name: $why"
    sed 's/^/#   | /' "$f.err" 2>/dev/null | tail -n 8
  fi
}
skip() { # skip NAME REASON
  if begin "$1"; then
    number=$((number + 1))
    skipped=$((skipped + 1))
    echo "ok $number - $1 # SKIP $2"
  fi
}

# expected PROGRAM NRANKS COUNT HEADER [NGPUS]: the whole stdout of a good
# run; with NGPUS < NRANKS rank r uses device r mod NGPUS.
expected() {
  local prog=$1 n=$2 count=$3 header=$4 g=${5:-$2} r
  local mb recv_mb sum last=$(($2 - 1))
  mb=$(awk -v c="$count" 'BEGIN { printf "%.2f", c * 4 / 1048576 }')
  echo "$header"
  if [ "$prog" = allreduce_sm ]; then
    echo "Starting AllReduce example with $n ranks"
    for r in $(seq 0 $last); do echo "  Rank $r communicator initialized using device $((r % g))"; done
    echo "Symmetric Memory allocation"
    for r in $(seq 0 $last); do echo "  Rank $r allocating $mb MB per buffer"; done
    for r in $(seq 0 $last); do echo "  Rank $r data initialized (value: $r)"; done
    echo "Starting AllReduce with $count elements ($((count * 4 / 1048576)) MB)"
    echo "AllReduce completed successfully"
    sum=$((n * (n - 1) / 2))
    echo "Verification - Expected: $sum.0, Got: $sum.0"
  else
    recv_mb=$(awk -v c="$count" -v n="$n" 'BEGIN { printf "%.2f", c * n * 4 / 1048576 }')
    echo "Starting AllGather example with $n ranks (Copy Engine enabled)"
    for r in $(seq 0 $last); do echo "  Rank $r communicator initialized using device $((r % g)) (CTAPolicy=2)"; done
    echo "Symmetric Memory allocation"
    for r in $(seq 0 $last); do echo "  Rank $r allocating $mb MB send buffer, $recv_mb MB recv buffer"; done
    for r in $(seq 0 $last); do echo "  Rank $r data initialized (value: $r)"; done
    echo "Starting AllGather with $count elements per rank ($((count * n * 4 / 1048576)) MB total)"
    echo "AllGather completed successfully"
    for r in $(seq 0 $last); do echo "Verification - Segment $r: Expected: $r.0, Got: $r.0"; done
  fi
  echo "Results verified correctly"
  for r in $(seq 0 $last); do echo "  Rank $r symmetric memory windows deregistered"; done
  echo "All resources cleaned up successfully"
  if [ "$prog" = allreduce_sm ]; then
    echo "Example completed - demonstrated symmetric memory lifecycle"
  else
    echo "Example completed - demonstrated symmetric memory + copy engine allgather"
  fi
  echo
  echo "All NCCL communicators finalized successfully!"
}

# shared_header NRANKS NGPUS SMS: the lines before the block when NRANKS
# ranks share NGPUS GPUs of SMS multiprocessors each.
shared_header() {
  local n=$1 g=$2 sms=$3 per=$(((${1} + ${2} - 1) / ${2})) s=s
  [ "$g" = 1 ] && s=
  echo "$n ranks share $g GPU$s (NCCL_MULTI_RANK_GPU_ENABLE=1): results are real NCCL; bandwidths are one GPU's, not a link's"
  echo "NCCL_MAX_CTAS=$((sms / per)): each rank's NCCL kernels use at most $((sms / per)) of the GPU's $sms SMs, so that all $per ranks' kernels fit at once"
}

# ------------------------------------------------------------------ build
HAVE_MPI=0
if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
  HAVE_MPI=1
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  # Containers often forbid the ptrace-based single-copy transport.
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  MPIRUN=(mpirun --oversubscribe)
else
  NO_MPI="mpirun/mpicc not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"
fi

if [ -z "$LIST" ]; then
  echo "# Building test programs ..."
  if ! make -C tests -j"$(nproc)" >"$LOG/build.log" 2>&1; then
    sed 's/^/# /' "$LOG/build.log"
    echo "not ok 1 - build: make -C tests failed (see above)"
    echo "1..1"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
  fi
fi

NGPUS=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  NGPUS=$(nvidia-smi -L | grep -c '^GPU ')
fi
[ -n "$LIST" ] || echo "# GPUs visible: $NGPUS; MPI: $([ $HAVE_MPI = 1 ] && echo yes || echo "no ($NO_MPI)")"

mpi_cases() { # mpi_cases NAME: 0 if MPI cases can run, else reports a skip
  [ $HAVE_MPI = 1 ] && return 0
  skip "$1" "$NO_MPI"
  return 1
}

PROGRAMS="allreduce_sm allgather_ce"
SMALL=4096 # floats per rank in the simulated runs: fast, still many pages

# ------------------------------------------------------------- the build
# Switching MPI=0/1 must relink the program in the other mode.
if [ $HAVE_MPI = 1 ] && begin build/mode-switch; then
  dir=$B/modeswitch
  links_mpi() { ldd "$dir/allreduce_sm" | grep -q libmpi; }
  mk() { make --no-print-directory -s -C 01_allreduce/c BUILD_DIR="$dir/obj" BIN="$dir/allreduce_sm" "$@" >>"$f.out" 2>>"$f.err"; }
  run true
  mk MPI=0 && ! links_mpi || why+="MPI=0 build links libmpi; "
  mk MPI=1 && links_mpi || why+="MPI=1 after MPI=0 did not rebuild for MPI; "
  mk MPI=0 && ! links_mpi || why+="MPI=0 after MPI=1 kept the MPI binary; "
  end
elif [ $HAVE_MPI = 0 ]; then
  skip build/mode-switch "$NO_MPI"
fi
if begin build/help-writes-nothing; then
  run make --no-print-directory -C 01_allreduce/c help BUILD_DIR="$B/helponly"
  want_status 0
  [ ! -e "$B/helponly" ] || why+="make help created $B/helponly; "
  end
fi
if command -v clang >/dev/null && [ $HAVE_MPI = 1 ]; then
  if begin build/clang-MPI=1; then
    run make --no-print-directory -s -C 01_allreduce/c CC=clang MPI=1 BUILD_DIR="$B/clangmpi/obj" BIN="$B/clangmpi/allreduce_sm"
    want_status 0
    ldd "$B/clangmpi/allreduce_sm" 2>/dev/null | grep -q libmpi || why+="not linked with libmpi; "
    end
  fi
else
  skip build/clang-MPI=1 "clang or MPI not installed"
fi
if begin build/install; then
  run make --no-print-directory -s -C 02_allgather/c install BUILD_DIR="$B/install/obj" \
    BIN="$B/install/allgather_ce" DESTDIR="$B/install/root" PREFIX=/opt/symmem
  want_status 0
  [ -x "$B/install/root/opt/symmem/bin/allgather_ce" ] || why+="not installed under DESTDIR/PREFIX/bin; "
  end
fi
# Headers too old: the programs refuse to compile, saying why.
for case in "01_allreduce 22605 older than 2.27: symmetric windows need NCCL >= 2.27" \
  "02_allgather 22703 older than 2.28: allgather_ce needs NCCL >= 2.28"; do
  read -r ex code text <<<"$case"
  if begin "build/$ex-with-nccl.h-$code"; then
    run cc -std=c11 -fsyntax-only -Icommon/include -Itests/old-nccl -DOLD_NCCL_CODE=$code \
      -idirafter "${CUDA_HOME:-/usr/local/cuda}/include" "$ex/c/main.c"
    want_failure
    want_err "#error \"nccl.h is $text\""
    end
  fi
done
if begin build/bad-MPI-value; then
  run make --no-print-directory -C 01_allreduce/c MPI=yes BUILD_DIR="$B/badmpi"
  want_failure
  want_err "MPI=yes: use MPI=1 for the MPI build or MPI=0 (default) for threads"
  end
fi

# ------------------------------------------------------------ unit tests
if begin unit/options; then run "$B/unit/test_options"; want_status 0; end; fi
if begin unit/verify; then run "$B/unit/test_verify"; want_status 0; end; fi
for n in 1 2 3 4 5 6 7 8; do
  if begin "unit/bootstrap-pthread-$n"; then
    run "$B/unit/test_bootstrap" $n
    want_status 0
    want_out "line from rank $((n - 1))"
    [ "$(grep -c '^line from rank' "$f.out")" = $n ] || why+="not $n ordered lines; "
    [ "$(grep '^line from rank' "$f.out" | awk '{print $4}' | paste -sd,)" = "$(seq -s, 0 $((n - 1)))" ] ||
      why+="lines not in rank order; "
    end
  fi
  if begin "unit/bootstrap-tsan-$n"; then
    run "$B/unit/test_bootstrap_tsan" $n
    want_status 0
    no_out "WARNING: ThreadSanitizer"
    ! grep -q "ThreadSanitizer" "$f.err" || why+="ThreadSanitizer reported; "
    end
  fi
done
for n in 1 2 3 4; do
  mpi_cases "unit/bootstrap-mpi-$n" || continue
  if begin "unit/bootstrap-mpi-$n"; then
    run "${MPIRUN[@]}" -np $n "$B/unit/test_bootstrap_mpi"
    want_status 0
    [ "$(grep '^line from rank' "$f.out" | awk '{print $4}' | paste -sd,)" = "$(seq -s, 0 $((n - 1)))" ] ||
      why+="lines missing or not in rank order; "
    end
  fi
done

# --------------------------------- the real programs: options and no GPU
for p in $PROGRAMS; do
  bin=$B/real-pthread/$p
  if begin "options/$p-help"; then
    run "$bin" -h; want_status 0; want_out "Usage: $p"; end
  fi
  if begin "options/$p-unknown-option"; then
    run "$bin" --bogus; want_status 2; want_err "unknown option '--bogus'"; want_err "Usage: $p"; end
  fi
  for v in 0 abc 2x -5 99999999999999999999999; do
    if begin "options/$p-count-$v"; then
      run "$bin" -n "$v"; want_status 2; want_err "invalid count '$v'"; end
    fi
  done
  if begin "options/$p-count-missing"; then
    run "$bin" -n; want_status 2; want_err "option '-n' needs a value"; end
  fi
  for v in abc 2x 0 -1 "" 99999999999 " 2"; do
    if begin "options/$p-NTHREADS=$v"; then
      NTHREADS="$v" run "$bin"
      want_status 2; want_err "invalid NTHREADS='$v'"; want_err "use a whole number from 1 to"
      end
    fi
  done
  # No GPU: this machine, or a GPU machine with every GPU hidden.
  if begin "nogpu/$p-pthread"; then
    CUDA_VISIBLE_DEVICES= run "$bin"
    want_status 1; want_err "$p: no usable GPU: cudaGetDeviceCount failed:"
    [ "$(wc -l <"$f.err")" = 1 ] || why+="more than one line on stderr; "
    end
  fi
  if mpi_cases "nogpu/$p-mpi" && begin "nogpu/$p-mpi"; then
    CUDA_VISIBLE_DEVICES= run "${MPIRUN[@]}" -np 2 "$B/real-mpi/$p"
    want_status 1; want_err "$p: rank 1: no usable GPU: cudaGetDeviceCount failed:"
    end
  fi
done

# ----------------------------------------- simulated runs, 1..8 ranks
sim_run() { # sim_run VARIANT PROGRAM NRANKS [ARGS...]: runs with $status
  local variant=$1 prog=$2 n=$3
  shift 3
  if [[ $variant == asan-mpi ]]; then
    # LeakSanitizer would list Open MPI's own allocations; the simulation's
    # leak check still covers every CUDA/NCCL object, and asan-pthread runs
    # LeakSanitizer over the examples' code.
    ASAN_OPTIONS=detect_leaks=0 SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np "$n" "$B/$variant/$prog" "$@"
  elif [[ $variant == *mpi ]]; then
    SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np "$n" "$B/$variant/$prog" "$@"
  else
    SIM_DIR=$TMPDIR NTHREADS=$n run "$B/$variant/$prog" "$@"
  fi
}
header_for() { # header_for VARIANT NRANKS: the framework line before the block
  if [[ $1 == *mpi ]]; then echo "Number of processes: $2"; else echo "Creating $2 threads for ${SIM_DEVICES:-8} devices"; fi
}
output_case() { # output_case VARIANT PROGRAM NRANKS [COUNT]
  local variant=$1 prog=$2 n=$3 count=${4:-$SMALL}
  [[ $variant == *mpi ]] && { mpi_cases "sim/$variant/$prog-$n" || return; }
  begin "sim/$variant/$prog-$n" || return
  expected "$prog" "$n" "$count" "$(header_for "$variant" "$n")" >"$f.expected"
  sim_run "$variant" "$prog" "$n" -n "$count"
  want_status 0
  want_out_file "$f.expected"
  no_violation
  ! grep -q "Sanitizer\|runtime error:" "$f.err" || why+="a sanitizer reported; "
  end
}
for variant in sim-pthread sim-mpi; do
  for p in $PROGRAMS; do
    for n in 1 2 3 4 5 6 7 8; do output_case $variant $p $n; done
  done
done
for p in $PROGRAMS; do # the default count, as users run it
  output_case sim-pthread $p 4 1048576
done
for variant in asan-pthread tsan-pthread asan-mpi; do
  for p in $PROGRAMS; do
    for n in 1 2 4 8; do output_case $variant $p $n; done
  done
done

# ---------------------------------------------------- simulated faults
collective_of() { [ "$1" = allreduce_sm ] && echo ncclAllReduce || echo ncclAllGather; }
init_of() { [ "$1" = allreduce_sm ] && echo ncclCommInitRank || echo ncclCommInitRankConfig; }
for variant in sim-pthread sim-mpi; do
  mode=${variant#sim-}
  for p in $PROGRAMS; do
    for call in ncclMemAlloc ncclCommWindowRegister "$(collective_of $p)" "$(init_of $p)"; do
      c="fault/$mode/$p-$call-fails-on-rank-2"
      [ $mode = mpi ] && { mpi_cases "$c" || continue; }
      if begin "$c"; then
        SIM_FAIL=$call:2 sim_run $variant $p 4 -n $SMALL
        want_failure
        [ $mode = pthread ] && want_status 1
        want_err "$p: rank 2: main.c:"
        want_err "$call("
        want_err "injected failure of $call on rank 2"
        end
      fi
    done
    for bad in 2 0:0 3:$((SMALL - 1)); do
      c="fault/$mode/$p-wrong-result-rank-$bad"
      [ $mode = mpi ] && { mpi_cases "$c" || continue; }
      if begin "$c"; then
        SIM_WRONG_RESULT=$bad sim_run $variant $p 4 -n $SMALL
        want_status 1
        want_out "  Rank ${bad%%:*}: 1 of"
        want_out "Results verification failed"
        want_out "All resources cleaned up successfully"
        no_out "Results verified correctly"
        no_out "All NCCL communicators finalized successfully"
        no_violation
        end
      fi
    done
    c="fault/$mode/$p-no-symmetric-support"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_NO_SYMMETRIC=1 sim_run $variant $p 3 -n $SMALL
      want_status 0
      for r in 0 1 2; do
        want_out "  Rank $r: no symmetric window: this communicator has no symmetric-memory support; the collective runs on NCCL's regular path"
      done
      want_out "Results verified correctly"
      no_violation
      end
    fi
    c="fault/$mode/$p-nccl-2.26-too-old"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_NCCL_VERSION=22605 sim_run $variant $p 2 -n $SMALL
      want_status 1
      want_err "NCCL 2.26.5 is too old for"
      no_out "Starting"
      no_violation
      end
    fi
    c="fault/pthread/$p-bad-NTHREADS-with-gpus"
    if [ $mode = pthread ] && begin "$c"; then
      SIM_DEVICES=4 NTHREADS=abc SIM_DIR=$TMPDIR run "$B/sim-pthread/$p" -n $SMALL
      want_status 2
      want_err "invalid NTHREADS='abc': use a whole number from 1 to 4 (the number of visible GPUs)"
      end
    fi
    c="fault/mpi/$p-one-rank-without-gpu"
    if [ $mode = mpi ] && mpi_cases "$c" && begin "$c"; then
      SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np 1 env SIM_DEVICES=0 "$B/sim-mpi/$p" -n $SMALL : -np 1 "$B/sim-mpi/$p" -n $SMALL
      want_failure
      want_err "rank 0: no usable GPU: cudaGetDeviceCount failed"
      want_err "rank 1: stopping: another rank has no GPU of its own (see its message)"
      end
    fi
    c="fault/$mode/$p-no-gpu"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=0 sim_run $variant $p 2
      want_status 1
      want_err "no usable GPU: cudaGetDeviceCount failed: no CUDA-capable device is detected (cudaErrorNoDevice)"
      end
    fi
    c="fault/$mode/$p-more-ranks-than-gpus"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=2 sim_run $variant $p 3 -n $SMALL
      if [ $mode = pthread ]; then
        want_status 2
        want_err "NTHREADS=3 asks for more ranks than GPUs: 2 visible"
      else
        want_failure
        for r in 0 1 2; do want_err "rank $r: node-local rank $r of 3 on"; done
        want_err "only 2 GPU(s) visible there"
      fi
      end
    fi
    c="fault/$mode/$p-count-overflows"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      sim_run $variant $p 2 -n 4611686018427387903
      want_status 2
      want_err "count 4611686018427387903 is too large for 2 ranks"
      end
    fi
  done
done
# CTAPolicy needs 2.28: 2.27 is enough for allreduce_sm but not allgather_ce.
if begin fault/pthread/allgather_ce-nccl-2.27-too-old; then
  SIM_NCCL_VERSION=22703 sim_run sim-pthread allgather_ce 2 -n $SMALL
  want_status 1
  want_err "NCCL 2.27.3 is too old for the copy-engine policy (CTAPolicy ZERO): needs NCCL >= 2.28.0"
  end
fi
if begin fault/pthread/allreduce_sm-nccl-2.27-enough; then
  SIM_NCCL_VERSION=22703 sim_run sim-pthread allreduce_sm 2 -n $SMALL
  want_status 0
  end
fi

# ------------------------------------------------------------- --bench
nmodes_of() { [ "$1" = allreduce_sm ] && echo 2 || echo 3; }
for variant in sim-pthread sim-mpi asan-pthread; do
  for p in $PROGRAMS; do
    for n in 1 2 4; do
      [ $variant = asan-pthread ] && [ $n != 2 ] && continue
      c="bench/$variant/$p-$n"
      [[ $variant == *mpi ]] && { mpi_cases "$c" || continue; }
      begin "$c" || continue
      sim_run $variant $p $n --bench -b 1K -e 64K -f 4 -w 1 -i 2 --csv "$f.csv" --overlap
      want_status 0
      want_out "Benchmark results verified correctly"
      want_out "# peak algbw / busbw (GB/s):"
      want_out "# overlap at 65536 B"
      rows=$(grep -cE '^ +[0-9]+ +[0-9]+ ' "$f.out")
      [ "$rows" = 4 ] || why+="$rows table rows, wanted 4 (1K 4K 16K 64K); "
      modes=$(nmodes_of $p)
      lines=$(wc -l <"$f.csv" 2>/dev/null || echo 0)
      [ "$lines" = $((1 + 4 * modes + modes)) ] || why+="CSV has $lines lines, wanted $((1 + 5 * modes)); "
      [ "$(grep -c ',n/a,' "$f.csv" 2>/dev/null)" = $((4 * modes)) ] ||
        why+="engine column is not n/a without CUPTI; "
      no_violation
      end
    done
  done
done
if command -v gnuplot >/dev/null; then
  for p in $PROGRAMS; do
    csv="$LOG/bench_sim-pthread_$p-2.csv"
    if begin "bench/plot/$p"; then
      run tools/plot_bench.sh "$csv" "$f.png"
      want_status 0
      [ "$(head -c 4 "$f.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e47 ] || why+="no PNG written; "
      end
    fi
  done
  if begin "bench/plot/missing-csv"; then
    run tools/plot_bench.sh "$LOG/no-such.csv"
    want_status 1
    want_err "is empty or missing"
    end
  fi
else
  skip "bench/plot" "gnuplot not installed (Debian: apt-get install gnuplot-nox)"
fi
for p in $PROGRAMS; do
  if begin "bench/sim-pthread/$p-wrong-result"; then
    SIM_WRONG_RESULT=1 sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2
    want_status 1
    want_out "Benchmark results verification failed"
    want_err "wrong result on at least one rank"
    no_violation
    end
  fi
  if begin "bench/sim-pthread/$p-csv-write-fails"; then
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2 --csv /dev/full
    want_status 1
    want_err "writing --csv /dev/full failed"
    no_violation
    end
  fi
  if begin "bench/sim-pthread/$p-cublas-fails"; then
    SIM_FAIL=cublasSgemm_v2:1 sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2 --overlap
    want_status 1
    want_err "rank 1: overlap.c:"
    want_err "cublasSgemm(g->handle"
    want_err "failed: cuBLAS status 13"
    end
  fi
  if begin "bench/sim-pthread/$p-max-below-one-float-per-rank"; then
    sim_run sim-pthread $p 2 --bench -b 1 -e 2
    want_status 2
    want_err "-e 2 is smaller than one float per rank"
    no_violation
    end
  fi
  if begin "bench/sim-pthread/$p-csv-unwritable"; then
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K --csv /nonexistent-dir/x.csv
    want_status 1
    want_err "cannot write --csv /nonexistent-dir/x.csv"
    no_violation
    end
  fi
  for bad in "-b 64K -e 1K:-b 65536 is larger than -e 1024" "-f 1:invalid -f '1'" \
    "-i 0:invalid -i '0'" "-b abc:invalid -b 'abc'" "-e 1Q:invalid -e '1Q'" "-w -1:invalid -w '-1'"; do
    args=${bad%%:*}
    if begin "bench/options/$p ${args}"; then
      run "$B/real-pthread/$p" --bench $args
      want_status 2
      want_err "${bad#*:}"
      end
    fi
  done
  if begin "bench/options/$p --csv without --bench"; then
    run "$B/real-pthread/$p" --csv x.csv
    want_status 2
    want_err "option '--csv' only works with --bench"
    end
  fi
done

# ------------------------------------------- several ranks on one GPU
# NCCL >= 2.30 lets ranks share a GPU when NCCL_MULTI_RANK_GPU_ENABLE=1.
shared_run() { # shared_run VARIANT PROGRAM NRANKS NGPUS VERSION [ARGS...]
  local variant=$1 prog=$2 n=$3 g=$4 v=$5
  shift 5
  SIM_DEVICES=$g SIM_NCCL_VERSION=$v NCCL_MULTI_RANK_GPU_ENABLE=1 sim_run "$variant" "$prog" "$n" "$@"
}
for variant in sim-pthread sim-mpi; do
  mode=${variant#sim-}
  for p in $PROGRAMS; do
    for n in 2 3 4 5 6 7 8; do
      c="shared-gpu/$mode/$p-$n-ranks-1-gpu"
      [ $mode = mpi ] && { mpi_cases "$c" || continue; }
      begin "$c" || continue
      { shared_header $n 1 132
        if [ $mode = mpi ]; then echo "Number of processes: $n"; else echo "Creating $n threads for 1 devices"; fi
      } >"$f.header"
      expected $p $n $SMALL "$(cat "$f.header")" 1 >"$f.expected"
      shared_run $variant $p $n 1 23007 -n $SMALL
      want_status 0; want_out_file "$f.expected"; no_violation; end
    done
    c="shared-gpu/$mode/$p-3-ranks-2-gpus"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      { shared_header 3 2 132
        if [ $mode = mpi ]; then echo "Number of processes: 3"; else echo "Creating 3 threads for 2 devices"; fi
      } >"$f.header"
      expected $p 3 $SMALL "$(cat "$f.header")" 2 >"$f.expected"
      shared_run $variant $p 3 2 23007 -n $SMALL
      want_status 0; want_out_file "$f.expected"; no_violation; end
    fi
    c="shared-gpu/$mode/$p-nccl-2.29-refuses"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      shared_run $variant $p 2 1 22907 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 2
      want_err "NCCL_MULTI_RANK_GPU_ENABLE=1: ranks may share a GPU only with NCCL >= 2.30, and the loaded NCCL is 2.29.7"
      no_out "Starting"; end
    fi
    c="shared-gpu/$mode/$p-without-the-switch"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=0 sim_run $variant $p 2 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 2
      want_err "with NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share a GPU"
      no_out "Starting"; end
    fi
    c="shared-gpu/$mode/$p-switch-not-a-number"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=yes sim_run $variant $p 2 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 2
      want_err "invalid NCCL_MULTI_RANK_GPU_ENABLE='yes': NCCL ignores a value that is not a number"
      end
    fi
    c="shared-gpu/$mode/$p-own-NCCL_MAX_CTAS"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      NCCL_MAX_CTAS=8 shared_run $variant $p 4 1 23007 -n $SMALL
      want_status 0
      want_out "NCCL_MAX_CTAS=8 (yours): with 4 ranks per GPU it must leave every rank's kernels room"
      want_out "Results verified correctly"; end
    fi
    c="shared-gpu/$mode/$p-ncclCommWindowRegister-fails-on-rank-1"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_FAIL=ncclCommWindowRegister:1 shared_run $variant $p 4 1 23007 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 1
      want_err "$p: rank 1: main.c:"; want_err "injected failure of ncclCommWindowRegister on rank 1"; end
    fi
    c="shared-gpu/$mode/$p-wrong-result-rank-3"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_WRONG_RESULT=3 shared_run $variant $p 4 1 23007 -n $SMALL
      want_status 1; want_out "  Rank 3: 1 of"; want_out "Results verification failed"; no_violation; end
    fi
    for n in 2 4; do
      c="shared-gpu/$mode/$p-bench-$n-ranks"
      [ $mode = mpi ] && { mpi_cases "$c" || continue; }
      begin "$c" || continue
      shared_run $variant $p $n 1 23007 --bench -b 1K -e 64K -w 1 -i 2 --overlap
      want_status 0
      want_out "roof: copy of that size within GPU 0, which the ranks share"
      if [ $mode = mpi ]; then
        want_out "# WARNING: $n processes share 1 GPU(s): without MPS the GPU time-slices between processes"
      else
        want_out "# $n ranks share 1 GPU(s): times are one GPU doing every rank's part"
      fi
      want_out "Benchmark results verified correctly"; no_violation; end
    done
  done
done
for n in 2 8; do
  if begin "shared-gpu/asan-pthread/allgather_ce-$n"; then
    shared_run asan-pthread allgather_ce $n 1 23007 -n $SMALL
    want_status 0; want_out "Results verified correctly"; no_violation
    ! grep -q "Sanitizer\|runtime error:" "$f.err" || why+="a sanitizer reported; "
    end
  fi
  if begin "shared-gpu/tsan-pthread/allreduce_sm-$n"; then
    shared_run tsan-pthread allreduce_sm $n 1 23007 -n $SMALL
    want_status 0; want_out "Results verified correctly"
    ! grep -q "ThreadSanitizer" "$f.err" || why+="ThreadSanitizer reported; "
    end
  fi
done
for n in 1 3 8; do
  if begin "shared-gpu/unit/bootstrap-$n-ranks-on-2-gpus"; then
    run "$B/unit/test_bootstrap" $n 2; want_status 0; end
  fi
done

# ------------------------------------------ lifecycle rules are enforced
# Every rule the simulation enforces has a deliberately wrong program.
SIM_RULES=$(python3 - tests/sim/sim.c <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rules = set(re.findall(r'violation\(\s*[^,()]+,\s*"([a-z][a-zA-Z-]*)"', text))
rules |= set(re.findall(r'"ncclsim: RULE VIOLATION \[([a-z][a-zA-Z-]*)\]', text))
print(" ".join(sorted(rules)))
PY
)
RULE_PROGRAMS=$("$B/sim-pthread/rules" 2>&1 | sed -n 's/^usage: rules CASE, one of: //p' | tr ' ' '\n' | sort | paste -sd' ')
if begin rule/every-rule-has-a-wrong-program; then
  run true
  [ -n "$SIM_RULES" ] || why+="no rule found in tests/sim/sim.c; "
  [ "$SIM_RULES" = "$RULE_PROGRAMS" ] ||
    why+="rules in sim.c: '$SIM_RULES'; rule programs: '$RULE_PROGRAMS'; "
  end
fi
for rule in $SIM_RULES; do
  if begin "rule/$rule"; then
    SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" "$rule"
    want_status 3
    want_err "RULE VIOLATION [$rule]"
    end
  fi
done

# ------------------------------------------------ the real programs on GPUs
if [ "$NGPUS" -gt 0 ]; then
  for p in $PROGRAMS; do
    for n in $(seq 1 "$NGPUS"); do
      if begin "gpu/pthread/$p-$n"; then
        expected $p $n 1048576 "Creating $n threads for $NGPUS devices" >"$f.expected"
        NTHREADS=$n run "$B/real-pthread/$p"
        want_status 0; want_out_file "$f.expected"; end
      fi
      mpi_cases "gpu/mpi/$p-$n" || continue
      if begin "gpu/mpi/$p-$n"; then
        expected $p $n 1048576 "Number of processes: $n" >"$f.expected"
        run "${MPIRUN[@]}" -np $n "$B/real-mpi/$p"
        want_status 0; want_out_file "$f.expected"; end
      fi
    done
  done
  # Several ranks on one GPU: real NCCL >= 2.30 only.
  read -r NCCL_CODE GPU_SMS < <("$B/unit/gpu_facts" 2>/dev/null | sed 's/nccl=\([0-9]*\) sms=\([0-9]*\)/\1 \2/')
  if [ "${NCCL_CODE:-0}" -lt 23000 ]; then
    skip "shared-gpu/gpu/*" "the loaded NCCL (code ${NCCL_CODE:-unknown}) is older than 2.30, which lets ranks share a GPU (build with NCCL_HOME=<NCCL 2.30+>)"
  else
    for p in $PROGRAMS; do
      for n in $(seq $((NGPUS + 1)) $((NGPUS * 8 < 8 ? NGPUS * 8 : 8))); do
        if begin "shared-gpu/gpu/pthread/$p-$n"; then
          expected $p $n 1048576 "$(shared_header $n $NGPUS $GPU_SMS; echo "Creating $n threads for $NGPUS devices")" $NGPUS >"$f.expected"
          NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$n run "$B/real-pthread/$p"
          want_status 0; want_out_file "$f.expected"; end
        fi
        mpi_cases "shared-gpu/gpu/mpi/$p-$n" || continue
        if begin "shared-gpu/gpu/mpi/$p-$n"; then
          expected $p $n 1048576 "$(shared_header $n $NGPUS $GPU_SMS; echo "Number of processes: $n")" $NGPUS >"$f.expected"
          NCCL_MULTI_RANK_GPU_ENABLE=1 run "${MPIRUN[@]}" -np $n "$B/real-mpi/$p"
          want_status 0; want_out_file "$f.expected"; end
        fi
      done
      for n in 2 4; do
        if begin "shared-gpu/gpu/pthread/$p-bench-$n"; then
          NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$((n * NGPUS)) run "$B/real-pthread/$p" --bench -b 1K -e 64M -f 16 -w 2 -i 5 --overlap
          want_status 0; want_out "Benchmark results verified correctly"; no_out " none "; end
        fi
      done
    done
  fi
else
  skip "gpu/*" "no GPU visible (nvidia-smi lists none): the real programs ran only up to the GPU check"
  skip "shared-gpu/gpu/*" "no GPU visible (nvidia-smi lists none)"
fi

# ------------------------------------------------- the Python variants
PY_SCRIPTS="01_allreduce/python/allreduce_sm.py 02_allgather/python/allgather_ce.py"
if command -v python3 >/dev/null; then
  if begin python/compile; then
    run python3 -m py_compile $PY_SCRIPTS common/python/example_utils.py
    want_status 0
    end
  fi
  PYFLAKES=(pyflakes3)
  command -v pyflakes3 >/dev/null || PYFLAKES=(python3 -m pyflakes)
  if "${PYFLAKES[@]}" --version >/dev/null 2>&1; then
    if begin python/pyflakes; then
      run "${PYFLAKES[@]}" $PY_SCRIPTS common/python/example_utils.py
      want_status 0
      end
    fi
  else
    skip python/pyflakes "pyflakes not installed (Debian: apt-get install pyflakes3)"
  fi
fi
PY_REASON=""
if [ "$NGPUS" = 0 ]; then
  PY_REASON="no GPU visible"
elif [ $HAVE_MPI = 0 ]; then
  PY_REASON="$NO_MPI"
elif ! python3 -c "import nccl.core, cupy, mpi4py" >"$LOG/python-import.txt" 2>&1; then
  PY_REASON="nccl4py, cupy or mpi4py does not import: $(tail -n 1 "$LOG/python-import.txt")"
fi
# nccl4py loads its own libnccl; with NCCL_HOME set the Python cases preload
# that NCCL instead, so that they test the NCCL the C programs were built on.
PY_PRELOAD_LIB=
if [ -n "${NCCL_HOME:-}" ] && [ -e "$NCCL_HOME/lib/libnccl.so.2" ]; then
  PY_PRELOAD_LIB=$NCCL_HOME/lib/libnccl.so.2
fi
PY_PRELOAD=(-x "LD_PRELOAD=$PY_PRELOAD_LIB")
PY_SHARED_REASON=$PY_REASON
if [ -z "$PY_REASON" ]; then
  py_nccl=$(LD_PRELOAD=$PY_PRELOAD_LIB python3 -c "import nccl.core as n; print(n.get_version().libnccl.version)" 2>&1 | tail -n 1)
  echo "nccl4py loads libnccl $py_nccl" >>"$LOG/python-import.txt"
  python3 -c "import sys; from packaging.version import Version as V; sys.exit(V(sys.argv[1]) < V('2.30'))" "$py_nccl" 2>/dev/null ||
    PY_SHARED_REASON="nccl4py loads libnccl $py_nccl, older than 2.30 (set NCCL_HOME to an NCCL >= 2.30)"
fi
for script in $PY_SCRIPTS; do
  p=$(basename "$script" .py)
  if [ -n "$PY_REASON" ]; then
    skip "python/gpu/$p" "$PY_REASON"
    continue
  fi
  for n in $(seq 1 "$NGPUS"); do
    if begin "python/gpu/$p-$n"; then
      expected $p $n 1048576 "Number of processes: $n" >"$f.expected"
      run "${MPIRUN[@]}" "${PY_PRELOAD[@]}" -np $n python3 "$script"
      want_status 0; want_out_file "$f.expected"; end
    fi
  done
  if [ -n "$PY_SHARED_REASON" ]; then
    skip "shared-gpu/python/$p" "$PY_SHARED_REASON"
    continue
  fi
  for n in $(seq $((NGPUS + 1)) $((NGPUS * 4 < 8 ? NGPUS * 4 : 8))); do
    if begin "shared-gpu/python/$p-$n"; then
      expected $p $n 1048576 "$(shared_header $n $NGPUS $GPU_SMS; echo "Number of processes: $n")" $NGPUS >"$f.expected"
      NCCL_MULTI_RANK_GPU_ENABLE=1 run "${MPIRUN[@]}" "${PY_PRELOAD[@]}" -np $n python3 "$script"
      want_status 0; want_out_file "$f.expected"; end
    fi
  done
done

# ------------------------------------------- the docs match the programs
if command -v python3 >/dev/null; then
  if begin docs/readmes-match-code; then
    run python3 tests/check_docs.py
    want_status 0
    [ "$status" = 0 ] || why+="$(grep -v '^check_docs:' "$f.out" | head -n 3 | tr '\n' ' ')"
    end
  fi
else
  skip docs/readmes-match-code "python3 not installed"
fi

# ------------------------------ every error message has a test case
if [ -n "$FILTER" ]; then
  skip coverage/every-error-message-tested "needs the logs of the whole suite (TEST_FILTER is set)"
elif begin coverage/every-error-message-tested; then
  run python3 tests/check_messages.py "$LOG"
  want_status 0
  [ "$status" = 0 ] || why+="$(grep -v '^check_messages:' "$f.out" | head -n 5 | tr '\n' ' ')"
  end
fi

# --------------------------------------------------- static analysis
if command -v cppcheck >/dev/null; then
  if begin static/cppcheck; then
    run cppcheck --quiet --error-exitcode=1 --enable=warning,style,performance,portability \
      --std=c11 --inline-suppr -D__GNUC__ "-D_Noreturn=__attribute__((noreturn))" -DNCCL_VERSION_CODE=22809 "-DNCCL_VERSION(X,Y,Z)=((X)*10000+(Y)*100+(Z))" \
      -I common/include common 01_allreduce 02_allgather tests/sim tests/unit tests/rules
    want_status 0
    end
  fi
else
  skip static/cppcheck "cppcheck not installed (Debian: apt-get install cppcheck)"
fi

[ -n "$LIST" ] && exit 0
echo "1..$number"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
