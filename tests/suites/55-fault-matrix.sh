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
