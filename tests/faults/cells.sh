# The fault matrix's cells (tests/faults/cell.sh runs and checks one): the
# whole matrix, `make test`'s subset, running them in parallel, and the
# check that every injectable call was injected. Sourced by faults.sh.

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
# It waits for its own subshells alone (fault_wait_own): the shell that
# sources it may have other children that never end, such as the guard
# of a filtered run (tests/lib/guard.sh), which a bare `wait` would wait
# for.
FAULT_OWN=()
fault_wait_own() { # MAX: waits until at most MAX of FAULT_OWN still run
  local pid alive
  while :; do
    alive=()
    for pid in "${FAULT_OWN[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    FAULT_OWN=("${alive[@]}")
    [ ${#FAULT_OWN[@]} -le "$1" ] && return 0
    wait -n "${FAULT_OWN[@]}" 2>/dev/null || sleep 0.1
  done
}
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
    FAULT_OWN+=($!)
    fault_wait_own $((jobs - 1))
  done < <(for cell in "${todo[@]}"; do set -- $cell && echo "$2 $3 $4 $5"; done | sort -u)
  fault_wait_own 0
  echo "# census of $(ls "$CENSUS_DIR" 2>/dev/null | grep -c '\.txt$') configurations in $(($(date +%s) - start)) s"
  for cell in "${todo[@]}"; do
    i=$((i + 1))
    # Its counters start at 0: `end` numbers its one case 1 (replayed below).
    (number=0 passed=0 failed=0 skipped=0 && fault_cell $cell) >"$tap/$i" 2>"$tap/$i.err" </dev/null &
    FAULT_OWN+=($!)
    fault_wait_own $((jobs - 1))
  done
  fault_wait_own 0
  for ((j = 1; j <= i; j++)); do
    # `end` in a subshell numbered its case 1; renumber, keep its detail lines.
    # A cell whose subshell ended without a TAP line (a shell error) fails,
    # named, with what it said: a case may never vanish from the count.
    if ! grep -qE '^(not )?ok ' "$tap/$j"; then
      fault_name_of ${todo[j - 1]}
      number=$((number + 1)) failed=$((failed + 1))
      echo "not ok $number - $CELL_NAME: its run ended without a result: $(tail -n 2 "$tap/$j.err" | tr '\n' ' ')"
      continue
    fi
    cat "$tap/$j.err" >&2
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
