# One cell of the fault matrix, run and checked; shared by the suite's
# subset (tests/suites/55-fault-matrix.sh, in `make test`) and the whole
# matrix (tests/fault_matrix.sh, `make test-faults`), with the lists of
# cells in tests/faults/cells.sh. Sourced after tap.sh and programs.sh.
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

# fault_cell ACTION MODE PROGRAM HOW N R CALL: runs one cell as a case:
# its name, its census, its run (fault_cell_run), then the checks of what
# happened: a failure (fault_check_failure), a hang (fault_check_hang), or
# an injection the rank never reached. FAULT_CELL_NAME names it otherwise;
# FAULT_CELL_ALSO is a function of checks of its own, run before `end`.
fault_cell() {
  local action=$1 mode=$2 p=$3 how=$4 n=$5 r=$6 call=$7 name census makes=0
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
  fault_cell_run "$@" "$makes"
  if [ "$action" = fails ] && grep -qF "ncclsim: injected failure of $call on rank $r" "$f.err"; then
    echo "fail $call $p $how $mode" >>"$INJECTED_LOG"
    fault_check_failure "$mode" "$p" "$r" "$call"
  elif [ "$action" = hangs ] && grep -qF "ncclsim: injected hang: $call on rank $r never returns" "$f.err"; then
    echo "hang $call $p $how $mode" >>"$INJECTED_LOG"
    fault_check_hang "$mode" "$p" "$n" "$r" "$call"
  elif [ $makes = 1 ]; then
    why+="the census says rank $r makes $call, but the run injected nothing; "
  else
    # The rank never makes this call here: the simulation must say so.
    want_status 70
    want_err "ncclsim: INJECTION UNUSED: "
  fi
  [ -z "${FAULT_CELL_ALSO:-}" ] || "$FAULT_CELL_ALSO" # a cell's own checks
  end
}

# fault_cell_run ACTION MODE PROGRAM HOW N R CALL MAKES: the cell's run,
# the call injected (MAKES: 1 if the census says the rank makes it). Sets
# CELL_TIMEOUT, the --timeout of the run that counts, and CELL_TOOK_MS,
# the time from the injection to the job's end.
fault_cell_run() {
  local action=$1 mode=$2 p=$3 how=$4 n=$5 r=$6 call=$7 makes=$8 start
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
  # The same when the injection came but another rank's call, merely slow,
  # outlasted the short --timeout first (the job ended naming that rank).
  CELL_TIMEOUT=$FAULT_TIMEOUT
  if [ $makes = 1 ] && [ "$status" = 3 ] && { ! grep -q "^ncclsim: injected" "$f.err" ||
    { [ "$action" = hangs ] && ! grep -q "rank $r's call has not returned after\|ranks are inside the same NCCL call" "$f.err"; }; }; then
    cp "$f.err" "$f.before-injection.err"
    if [ "$action" = hangs ]; then
      CELL_TIMEOUT=$((FAULT_TIMEOUT * 4))
      args[${#args[@]} - 1]=$CELL_TIMEOUT
    fi
    start=$(date +%s%N)
    fault_run "$mode" "$p" "$how" "$n" "${args[@]}"
  fi
  # Time limits count from the injection (the simulation stamps it): what
  # a loaded machine does to the run before the fault does not count.
  local end_ms at_ms
  end_ms=$(($(date +%s%N) / 1000000))
  at_ms=$(sed -n 's/^ncclsim: injected .* (at \([0-9]*\) ms)$/\1/p' "$f.err" | head -n 1)
  CELL_TOOK_MS=$((end_ms - ${at_ms:-$((start / 1000000))}))
}

# fault_check_failure MODE PROGRAM R CALL: the job a failing call ended.
fault_check_failure() {
  local mode=$1 p=$2 r=$3 call=$4
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
  [ "$CELL_TOOK_MS" -le 10000 ] || why+="the job ended $CELL_TOOK_MS ms after the injection, more than 10 s; "
}

# fault_check_hang MODE PROGRAM N R CALL: the job a hanging call ended.
fault_check_hang() {
  local mode=$1 p=$2 n=$3 r=$4 call=$5
  want_status 3
  want_err "$p: rank $r: in ${call%_v2}("
  # The verdict blames the stuck rank when its call is one of its own,
  # and when it is a collective: the others queued theirs and wait for
  # the GPU (docs/watchdog.md). In an NCCL call that every rank makes on
  # the host (communicator, windows), the others may be inside it too, and
  # then nothing tells the stuck one apart: the watchdog says that all are
  # inside it, and how to find the stuck one, and blames none. So it is in
  # allgather_ce's AllGather on the copy engines, the first of its
  # communicator, which returns on no rank before all have called it
  # (tests/sim/collectives.c, ce_first_use). Never is another rank blamed.
  local all="$p: all $n ranks are inside the same NCCL call, one every rank makes, after --timeout $CELL_TIMEOUT s"
  local blamed="$p: rank $r's call has not returned after --timeout $CELL_TIMEOUT s: ending the job (exit 3)"
  case $call in
    ncclCommInitRank* | ncclCommWindowRegister | ncclCommWindowDeregister | ncclCommFinalize | \
      ncclCommDestroy | ncclAllGather)
      if grep -qF "$all" "$f.err"; then
        [ "$(grep -c "^$p: rank [0-9]*: in ${call%_v2}(" "$f.err")" = "$n" ] ||
          why+="said all ranks are inside ${call%_v2}, but not every rank is shown in it; "
        ! grep -q "call has not returned after" "$f.err" || why+="blamed a rank beside saying all are inside; "
      else
        want_err "$blamed"
      fi
      if [ "$call" = ncclAllGather ] && [ "$p" = allgather_ce ] && [ "$n" -gt 1 ]; then
        want_err "$all" # the first AllGather on the copy engines waits for all
      fi
      ;;
    *) want_err "$blamed" ;;
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
  [ "$CELL_TOOK_MS" -le $(((CELL_TIMEOUT + 8) * 1000)) ] ||
    why+="the job ended $CELL_TOOK_MS ms after the injection, more than --timeout $CELL_TIMEOUT s + 8 s; "
}

# Which cells, run how many at a time, and the check that every call was
# injected.
. "$ROOT/tests/faults/cells.sh"
