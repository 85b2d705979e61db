# The fault matrix's subset for `make test` (tests/faults/cell.sh; the whole
# matrix is `make test-faults`, tests/fault_matrix.sh).
# Cases: fault-matrix/pthread/... and fault-matrix/mpi/... (a call fails),
# fault-matrix/hang/... (a call hangs): the cells of tests/faults/cell.sh.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: third (tests/run_tests.sh runs the lanes of a whole run at once)
. tests/faults/cell.sh

mapfile -t cells < <(fault_subset_cells)
fault_run_cells "${FAULT_JOBS:-$((4 * $(nproc)))}" "${cells[@]}"
fault_every_call_injected fault-matrix/subset-injects-every-call

# A TEST_FILTER that keeps cells of the whole matrix which this subset
# does not run says so, naming them, rather than running nothing silently.
if [ -n "$FILTER" ] && [ -z "$LIST" ]; then
  declare -A in_subset=()
  for cell in "${cells[@]}"; do in_subset[$cell]=1; done
  outside=()
  while read -r cell; do
    [ -n "${in_subset[$cell]:-}" ] && continue
    fault_name_of $cell
    [[ $CELL_NAME =~ $FILTER ]] && outside+=("$CELL_NAME")
  done < <(fault_matrix_cells)
  if [ ${#outside[@]} -gt 0 ]; then
    echo "# fault-matrix: TEST_FILTER keeps ${#outside[@]} cell(s) that make test's subset does not run" \
      "(make test-faults runs the whole matrix, with the same TEST_FILTER): ${outside[*]:0:5}$([ ${#outside[@]} -gt 5 ] && echo " ...")"
  fi
fi

# A filtered run (here of this suite alone, which is cheaper; a
# TEST_FILTER alone is the same) keeps the suite in the run's own shell,
# beside the guard (tests/lib/guard.sh), which never ends: the cells it
# keeps run, each to its verdict, and one out of the subset is named (the
# cells' runner once waited for the guard after its census, until the
# run's limit).
if begin fault-matrix/a-filtered-run-runs-its-cells; then
  need programs-sim-pthread
  in_subset=fault-matrix/pthread/allreduce_sm/lesson/cudaSetDevice-fails-on-rank-1-of-2
  out_of_it=fault-matrix/hang/pthread/allgather_ce/lesson/cudaMemcpy-on-rank-2-of-4
  TIMEOUT=180 run env TEST_SUITE=fault-matrix TEST_FILTER="^($in_subset|$out_of_it)\$" TEST_RUN_LIMIT=120 \
    TEST_LOGS="$LOG/fault-filter" bash tests/run_tests.sh
  want_status 0
  want_out "ok 1 - $in_subset"
  want_out "1 passed, 0 failed, 0 skipped"
  want_out "# fault-matrix: TEST_FILTER keeps 1 cell(s) that make test's subset does not run (make test-faults runs the whole matrix, with the same TEST_FILTER): $out_of_it"
  end
fi

# `make test-faults` on its own finds Open MPI where the suite does, and
# runs an MPI cell (its MPI check once ran before its scratch folder
# existed, and skipped every MPI cell).
if mpi_cases "fault-matrix/test-faults-runs-mpi-cells" && begin "fault-matrix/test-faults-runs-mpi-cells"; then
  need programs-sim-mpi programs-sim-pthread
  # (A whole script: its setup and builds take a minute on a loaded
  # machine, hence the longer limit.)
  # Its own logs and scratch folder: a `make test-faults` may be running.
  TEST_FILTER='^fault-matrix/mpi/allreduce_sm/lesson/cudaSetDevice-fails-on-rank-0-of-1$' TIMEOUT=240 \
    FAULT_LOGS=$TMPDIR/fault-logs FAULT_TMP=$TMPDIR/fault-tmp run bash tests/fault_matrix.sh
  want_status 0
  want_out "MPI: yes"
  want_out "ok 1 - fault-matrix/mpi/allreduce_sm/lesson/cudaSetDevice-fails-on-rank-0-of-1"
  want_out "1 passed, 0 failed, 0 skipped"
  end
fi

# The sizes tests/README.md gives (the calls, the whole matrix, this
# subset) are counted from the definitions above, not typed from a run.
if begin fault-matrix/readme-gives-the-matrix-sizes; then
  thousands() { sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
  whole=$(fault_matrix_cells | wc -l | thousands)
  run grep -o -e 'can fail ([0-9]* CUDA' -e 'matrix is [0-9,]* cells' -e 'runs [0-9]* of them' \
    -e 'all [0-9,]* cells' tests/README.md
  want_out "can fail ($(injectable_calls | wc -l) CUDA"
  want_out "matrix is $whole cells"
  want_out "all $whole cells"
  want_out "runs ${#cells[@]} of them"
  end
fi
