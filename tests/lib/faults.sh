# The fault matrix's cells, shared by the suite's subset (tests/suites/
# 55-fault-matrix.sh, in `make test`) and the whole matrix
# (tests/fault_matrix.sh, `make test-faults`). Sourced after tap.sh and
# programs.sh.
#
# A cell is one line "ACTION MODE PROGRAM HOW NRANKS RANK CALL":
#   ACTION  fails (SIM_FAIL=CALL:RANK) or hangs (SIM_HANG=CALL:RANK)
#   MODE    pthread or mpi
#   HOW     lesson (the example as users run it), bench (a small --bench
#           --overlap), or shared (the lesson with every rank on one GPU,
#           NCCL 2.30.7 simulated)
# Whether the cell's rank makes its call is known before the cell runs: a
# census, one clean run of each configuration (MODE PROGRAM HOW NRANKS) with
# SIM_CALLS_LOG, lists every call each rank makes. A cell whose rank makes
# the call must end the whole job in time with the documented status, naming
# rank, place and call; one whose rank never makes it must end with the
# simulation's INJECTION UNUSED (exit 70), and runs without a short
# --timeout: nothing hangs there, and a call that is merely slow on a loaded
# machine must not end it. What was injected is kept in $INJECTED_LOG, and
# `fault_every_call_injected` fails if some injectable call was never
# injected: the matrix cannot pass by injecting nothing.

FAULT_TIMEOUT=2 # --timeout of the hang cells, in seconds
BENCH_ARGS="--bench -b 4K -e 4K -w 1 -i 2 --overlap"
INJECTED_LOG=$LOG/fault-matrix-injected.txt
SKIPPED_LOG=$LOG/fault-matrix-skipped.txt # calls of cells that could not run here
CENSUS_DIR=$LOG/census

# Every call the simulation can fail or hang (its own list, tests/sim/state.c).
injectable_calls() {
  sed -n '/injectable\[\] = {/,/};/p' "$ROOT/tests/sim/state.c" | grep -o '"[A-Za-z0-9_]*"' | tr -d '"'
}

# The ranks a cell names: the first, a middle and the last of N.
fault_ranks() { # N
  case $1 in
    1) echo 0 ;;
    2) echo 0 1 ;;
    *) echo 0 $(($1 / 2)) $(($1 - 1)) ;;
  esac
}

# fault_name_of ACTION MODE PROGRAM HOW N R CALL: the cell's case name, in
# CELL_NAME (no subshell: the whole matrix is named on every run).
fault_name_of() {
  if [ "$1" = fails ]; then
    CELL_NAME="fault-matrix/$2/$3/$4/$7-fails-on-rank-$6-of-$5"
  else
    CELL_NAME="fault-matrix/hang/$2/$3/$4/$7-on-rank-$6-of-$5"
  fi
}

# fault_args HOW: the program's options for a cell of that kind.
fault_args() {
  if [ "$1" = bench ]; then echo "$BENCH_ARGS"; else echo "-n $SMALL"; fi
}

# fault_run MODE PROGRAM HOW N [ARGS...]: runs one configuration (the
# variables set for the call, such as SIM_HANG, reach the program).
fault_run() {
  local mode=$1 p=$2 how=$3 n=$4
  shift 4
  if [ "$how" = shared ]; then
    shared_run sim-$mode "$p" "$n" 1 23007 "$@"
  else
    sim_run sim-$mode "$p" "$n" "$@"
  fi
}

# fault_census MODE PROGRAM HOW N: makes (once) and names the census file of
# that configuration; fails, saying why on stderr, if its clean run failed.
fault_census() {
  local file=$CENSUS_DIR/$1-$2-$3-$4.txt
  if [ -e "$file.failed" ]; then # tried once already
    echo "the clean run of $1 $2 $3 $4 (the census) failed: see $CENSUS_DIR/$1-$2-$3-$4.err" >&2
    return 1
  elif [ ! -e "$file" ]; then
    mkdir -p "$CENSUS_DIR"
    local -a args
    read -ra args <<<"$(fault_args "$3")"
    # A case of its own in a subshell: its logs, status and reasons stay there.
    (
      f=$CENSUS_DIR/$1-$2-$3-$4 why="" unbuilt=""
      SIM_CALLS_LOG=$f.calls fault_run "$@" "${args[@]}"
      [ "$status" = 0 ] && [ -s "$f.calls" ] || exit 1
      sort -u "$f.calls" >"$file.tmp" && mv "$file.tmp" "$file"
    ) || {
      : >"$file.failed"
      fault_census "$@"
      return 1
    }
  fi
  echo "$file"
}

# fault_cell ACTION MODE PROGRAM HOW N R CALL: runs one cell as a case.
fault_cell() {
  local action=$1 mode=$2 p=$3 how=$4 n=$5 r=$6 call=$7 name start took census makes=0
  fault_name_of "$@"
  name=${FAULT_CELL_NAME:-$CELL_NAME}
  if [ "$mode" = mpi ] && [ $HAVE_MPI = 0 ]; then
    [ -z "$LIST" ] && { [ -z "$FILTER" ] || [[ $name =~ $FILTER ]]; } && echo "$call" >>"$SKIPPED_LOG"
    mpi_cases "$name"
    return 0
  fi
  begin "$name" || return 0
  if ! census=$(fault_census "$mode" "$p" "$how" "$n" 2>"$f.census"); then
    why+="$(cat "$f.census"); "
    end
    return 0
  fi
  grep -qx "$call $r" "$census" && makes=1
  local -a args
  read -ra args <<<"$(fault_args "$how")"
  [ "$action" = hangs ] && [ $makes = 1 ] && args+=(--timeout $FAULT_TIMEOUT)
  local inject=SIM_FAIL
  [ "$action" = hangs ] && inject=SIM_HANG
  start=$(date +%s%N)
  local -x "$inject=$call:$r" # for this cell's run only
  fault_run "$mode" "$p" "$how" "$n" "${args[@]}"
  # A run whose short --timeout ended it before the injection (a call that
  # was merely slow on a loaded machine) tested nothing: it runs once more,
  # its first output kept as $f.before-injection.err. Twice is a failure.
  # The second run's --timeout is 4 times longer: a machine slow enough to
  # outlast the short one before the injection is slow at every call.
  local timeout_used=$FAULT_TIMEOUT
  if [ $makes = 1 ] && [ "$status" = 3 ] && ! grep -q "^ncclsim: injected" "$f.err"; then
    cp "$f.err" "$f.before-injection.err"
    if [ "$action" = hangs ]; then
      timeout_used=$((FAULT_TIMEOUT * 4))
      args[${#args[@]} - 1]=$timeout_used
    fi
    start=$(date +%s%N)
    fault_run "$mode" "$p" "$how" "$n" "${args[@]}"
  fi
  # Time limits count from the injection (the simulation stamps it): what
  # a loaded machine does to the run before the fault does not count.
  local end_ms at_ms
  end_ms=$(($(date +%s%N) / 1000000))
  at_ms=$(sed -n 's/^ncclsim: injected .* (at \([0-9]*\) ms)$/\1/p' "$f.err" | head -n 1)
  took=$((end_ms - ${at_ms:-$((start / 1000000))}))
  if [ "$action" = fails ] && grep -qF "ncclsim: injected failure of $call on rank $r" "$f.err"; then
    echo "fail $call $p $how $mode" >>"$INJECTED_LOG"
    # CHECK's line: "PROGRAM: rank R: FILE.c:LINE: CALL(ARGS) failed: ..."
    # (cuBLAS's header names cublasCreate_v2 cublasCreate). A pthread
    # program's main thread, which counts as rank 0 here, is no rank yet:
    # its lines carry no "rank R: ".
    local who="rank $r: "
    [ "$mode" = pthread ] && [ "$r" = 0 ] && who="(rank 0: )?"
    local check="^$p: $who[a-z_/]+\.c:[0-9]+: ${call%_v2}\("
    case $call in
      cudaDriverGetVersion | cudaDeviceCanAccessPeer | ncclGetVersion)
        # Also asked for facts that only explain (what ran, --bench's
        # header): there a failure leaves the fact unknown and the run goes
        # on. (ncclGetVersion's first call, the version check, is checked.)
        if grep -qE "$check" "$f.err"; then
          want_status 1
        else
          want_status 0
          no_violation
        fi
        ;;
      cudaGetDeviceCount)
        want_status 1
        grep -qE "^$p: (rank $r: )?no usable GPU: cudaGetDeviceCount failed: unknown error" "$f.err" ||
          why+="no line '$p: [rank $r: ]no usable GPU: cudaGetDeviceCount failed: ...' on stderr; "
        ;;
      *)
        want_status 1
        grep -qE "$check" "$f.err" || why+="no line '$p: $who""FILE.c:LINE: ${call%_v2}(...' on stderr; "
        ;;
    esac
    [ "$took" -le 10000 ] || why+="the job ended $took ms after the injection, more than 10 s; "
  elif [ "$action" = hangs ] && grep -qF "ncclsim: injected hang: $call on rank $r never returns" "$f.err"; then
    echo "hang $call $p $how $mode" >>"$INJECTED_LOG"
    want_status 3
    want_err "$p: rank $r: in ${call%_v2}("
    want_err "call has not returned after --timeout $timeout_used s: ending the job (exit 3)"
    # The verdict blames the stuck rank when its call is one of its own,
    # and when it is a collective: the others queued theirs and wait for
    # the GPU (docs/watchdog.md). In an NCCL call that every rank makes on
    # the host (communicator, windows), the others are inside it too, and
    # any may be named. So it is in allgather_ce's AllGather on the copy
    # engines, the first of its communicator, which returns on no rank
    # before all have called it (tests/sim/collectives.c, ce_first_use):
    # there every rank must be shown inside it.
    case $call in
      ncclCommInitRank* | ncclCommWindowRegister | ncclCommWindowDeregister | ncclCommFinalize | \
        ncclCommDestroy) ;;
      ncclAllGather)
        if [ "$p" = allgather_ce ] && [ "$n" -gt 1 ]; then
          [ "$(grep -c "^$p: rank [0-9]*: in ncclAllGather(" "$f.err")" = "$n" ] ||
            why+="not every rank shown in ncclAllGather (the first on the copy engines waits for all); "
        else
          want_err "$p: rank $r's call has not returned after --timeout $timeout_used s"
        fi
        ;;
      *) want_err "$p: rank $r's call has not returned after --timeout $timeout_used s" ;;
    esac
    # Every rank's line, in rank order, from one process; in pthread mode
    # a hang in the setup, before the ranks' threads start, has only the
    # main thread's (rank 0) and says so.
    local order want
    order=$(grep -oE "^$p: rank [0-9]+: in " "$f.err" | grep -oE '[0-9]+' | tr '\n' ' ')
    want=$(seq -s ' ' 0 $((n - 1)))' '
    if [ "$order" != "$want" ] && ! { [ "$mode" = pthread ] && [ "$order" = "0 " ] &&
      grep -q "the ranks had not started: the job was still being set up" "$f.err"; }; then
      why+="rank lines '$order', wanted one per rank in order '$want'; "
    fi
    [ "$took" -le $(((timeout_used + 8) * 1000)) ] ||
      why+="the job ended $took ms after the injection, more than --timeout $timeout_used s + 8 s; "
  elif [ $makes = 1 ]; then
    why+="the census says rank $r makes $call, but the run injected nothing; "
  else
    # The rank never makes this call here: the simulation must say so.
    want_status 70
    want_err "ncclsim: INJECTION UNUSED: "
  fi
  end
}

# The whole matrix: every injectable call fails on the first, a middle and
# the last of 1, 2 and 8 ranks, and hangs on both of 2 ranks; a CUDA call,
# NCCL's bootstrap (the unique id, communicator init) and window
# registration also hang on the first, a middle and the last of 1, 4 and 8
# ranks; both modes, both programs, lesson and --bench, and the lesson with
# every rank on one GPU.
FAULT_HANG_EVERYWHERE="cudaMemcpy ncclGetUniqueId ncclCommInitRank ncclCommInitRankConfig ncclCommWindowRegister"
fault_matrix_cells() {
  local mode p how n r call calls
  calls=$(injectable_calls)
  for mode in pthread mpi; do
    for p in $PROGRAMS; do
      for how in lesson bench shared; do
        for n in 1 2 8; do
          [ $how = shared ] && [ $n = 1 ] && continue
          for r in $(fault_ranks $n); do
            for call in $calls; do
              echo "fails $mode $p $how $n $r $call"
            done
          done
        done
        for n in 1 2 4 8; do
          [ $how = shared ] && [ $n = 1 ] && continue
          for r in $(fault_ranks $n); do
            for call in $calls; do
              [ $n = 2 ] || [[ " $FAULT_HANG_EVERYWHERE " == *" $call "* ]] || continue
              echo "hangs $mode $p $how $n $r $call"
            done
          done
        done
      done
    done
  done
}

# Where the subset makes CALL fail or hang: "HOW N R" (pthread; under MPI
# the same with 2 ranks): rank 1 of 2 in the lesson, but --bench for the
# calls only it makes and rank 0 for what only rank 0 (or the pthread
# build's main thread) does.
fault_subset_where() {
  case $1 in
    cudaEvent* | cudaMalloc | cudaFree | cudaMemsetAsync | cudaStreamCreateWithFlags | cublas*) echo "bench 2 1" ;;
    cudaMemcpyPeerAsync) echo "bench 2 0" ;;
    cudaDeviceGetAttribute) echo "shared 2 0" ;; # fitting the kernels to a shared GPU
    ncclGetUniqueId | cudaGetDeviceCount | cudaDeviceCanAccessPeer | ncclGetVersion) echo "lesson 2 0" ;;
    *) echo "lesson 2 1" ;;
  esac
}

# `make test`'s subset (run in parallel; tests/README.md gives its size,
# checked): every call fails once per program under pthread and the --bench
# calls also on the last of 8 ranks; a handful under MPI and on a shared
# GPU; every call hangs once per mode, the programs taking turns call by
# call (each hang cell waits out its --timeout: all of them are in
# `make test-faults`).
fault_subset_cells() {
  local p call mode i
  for p in $PROGRAMS; do
    i=0
    for call in $(injectable_calls); do
      i=$((i + 1))
      case $call in
        cudaDeviceGetAttribute) echo "fails pthread $p lesson 2 1 $call" ;;
        # Only MPI processes compare their GPUs (transport_gpu_load).
        cudaGetDeviceProperties) echo "fails mpi $p lesson 2 1 $call" ;;
        *) echo "fails pthread $p $(fault_subset_where $call) $call" ;;
      esac
      case $call in
        cudaEvent* | cudaMalloc | cudaFree | cudaMemsetAsync | cudaStreamCreateWithFlags | cublas* | ncclCommInitRankConfig | cudaSetDevice)
          echo "fails pthread $p bench 8 7 $call" ;;
      esac
      # allreduce_sm hangs the odd calls of the list, allgather_ce the even.
      if [ $((i % 2)) = "$([ $p = allreduce_sm ] && echo 1 || echo 0)" ]; then
        for mode in $([ $call = cudaGetDeviceProperties ] || echo pthread) mpi; do
          echo "hangs $mode $p $(fault_subset_where $call) $call"
        done
      fi
    done
    echo "fails mpi $p lesson 8 0 ncclMemAlloc"
    echo "fails mpi $p lesson 8 7 cudaSetDevice"
    echo "fails mpi $p bench 2 1 ncclCommWindowRegister"
    echo "fails mpi $p shared 2 1 cudaDeviceGetAttribute"
    echo "fails pthread $p shared 2 0 cudaDeviceGetAttribute"
    echo "fails pthread $p shared 8 4 ncclCommWindowRegister"
  done
  echo "hangs pthread allreduce_sm lesson 4 0 ncclGetUniqueId"
  # A collective that one rank never queues, first, middle and last: the
  # others wait for the GPU, and the stuck rank is the one named.
  for r in 0 2 3; do echo "hangs pthread allreduce_sm lesson 4 $r ncclAllReduce"; done
  for r in 0 1 2; do echo "hangs mpi allgather_ce lesson 3 $r ncclAllGather"; done
  echo "hangs mpi allreduce_sm lesson 8 4 cudaMemcpy"
  echo "hangs pthread allreduce_sm bench 8 7 ncclCommInitRankConfig"
  echo "hangs mpi allgather_ce shared 4 3 ncclCommWindowRegister"
}

# fault_run_cells JOBS CELL...: runs the cells JOBS at a time (most of a
# cell is waiting), each a case in a subshell of its own; their TAP lines
# are printed in cell order and counted as this run's. The census of every
# configuration the cells use is made first (the cells only read it).
fault_run_cells() {
  local jobs=$1 i=0 j line cell mode p how n start tap=$LOG/fault-tap
  shift
  local -a todo=()
  for cell in "$@"; do
    [ -z "$FILTER" ] || { fault_name_of $cell && [[ $CELL_NAME =~ $FILTER ]]; } && todo+=("$cell")
  done
  if [ -n "$LIST" ]; then
    for cell in "${todo[@]}"; do fault_cell $cell; done
    return 0
  fi
  [ ${#todo[@]} -gt 0 ] || return 0
  rm -rf "$tap" && mkdir -p "$tap"
  need programs-sim-pthread
  [ $HAVE_MPI = 1 ] && need programs-sim-mpi
  start=$(date +%s)
  while read -r mode p how n; do
    [ "$mode" = mpi ] && [ $HAVE_MPI = 0 ] && continue
    (fault_census "$mode" "$p" "$how" "$n" >/dev/null 2>&1) </dev/null &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  done < <(for cell in "${todo[@]}"; do set -- $cell && echo "$2 $3 $4 $5"; done | sort -u)
  wait
  echo "# census of $(ls "$CENSUS_DIR" 2>/dev/null | grep -c '\.txt$') configurations in $(($(date +%s) - start)) s"
  for cell in "${todo[@]}"; do
    i=$((i + 1))
    # Its counters start at 0: `end` numbers its one case 1 (replayed below).
    (number=0 passed=0 failed=0 skipped=0 && fault_cell $cell) >"$tap/$i" </dev/null &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  done
  wait
  for ((j = 1; j <= i; j++)); do
    # `end` in a subshell numbered its case 1; renumber, keep its detail lines.
    while IFS= read -r line; do
      case $line in
        "ok 1 - "*" # SKIP "*) number=$((number + 1)) skipped=$((skipped + 1)); echo "ok $number - ${line#ok 1 - }" ;;
        "ok 1 - "*) number=$((number + 1)) passed=$((passed + 1)); echo "ok $number - ${line#ok 1 - }" ;;
        "not ok 1 - "*) number=$((number + 1)) failed=$((failed + 1)); echo "not ok $number - ${line#not ok 1 - }" ;;
        "ok "* | "not ok "*) number=$((number + 1)) failed=$((failed + 1))
          echo "not ok $number - a cell's TAP line was not numbered 1: $line" ;;
        *) echo "$line" ;;
      esac
    done <"$tap/$j"
  done
}

# The check that makes the matrix mean something: every injectable call
# was failed and hung (made, injected, reported) in at least one cell that
# ran.
fault_every_call_injected() { # NAME
  begin "$1" || return 0
  local call action missing="" left_out=""
  for call in $(injectable_calls); do
    for action in fail hang; do
      grep -q "^$action $call " "$INJECTED_LOG" 2>/dev/null && continue
      # Only in cells this machine could not run (MPI missing): said, not failed.
      if grep -qx "$call" "$SKIPPED_LOG" 2>/dev/null; then
        left_out+="$call ($action) "
      else
        missing+="$call ($action) "
      fi
    done
  done
  [ -z "$missing" ] || why+="never injected in a cell that ran: $missing; "
  end
  [ -z "$left_out" ] || echo "# $1: left out, injected only in cells skipped here: $left_out"
}
