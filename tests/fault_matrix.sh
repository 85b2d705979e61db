#!/usr/bin/env bash
# The whole fault matrix (`make test-faults`; tests/faults/cell.sh says what
# a cell is and checks): every call the simulation can inject fails on the
# first, a middle and the last of 1, 2 and 8 ranks and hangs on both of 2
# ranks, and five calls also hang on the first, a middle and the last of 1,
# 4 and 8 ranks (tests/faults/cell.sh), in both modes, both programs, in the lesson, in --bench and in the lesson with every rank
# on one GPU. `make test` runs a subset of the same cells (55-fault-matrix.sh).
#
# Cells run FAULT_JOBS at a time (default: 2 per core; most of a cell is
# waiting). Output is TAP like run_tests.sh's, in cell order, ending with
# "N passed, N failed, N skipped"; exits 0 only if none failed.
# Logs: tests/build/fault-logs/<cell>.{out,err} (FAULT_LOGS=dir and
# FAULT_TMP=dir put them and its scratch files elsewhere).
#
# TEST_FILTER=re   only the cells whose name matches (the coverage check
#                  then counts only those)
# TEST_LIST=1      print the cells' names, run nothing
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib/environment.sh
ROOT=$PWD
B=$ROOT/tests/build
LOG=${FAULT_LOGS:-$B/fault-logs}
TIMEOUT=${TEST_TIMEOUT:-60}
FILTER=${TEST_FILTER:-}
LIST=${TEST_LIST:-}
JOBS=${FAULT_JOBS:-$((2 * $(nproc)))}
case $JOBS in
  '' | *[!0-9]* | 0) echo "fault_matrix.sh: invalid FAULT_JOBS='$JOBS': use a whole number from 1" >&2; exit 2 ;;
esac
export TMPDIR=${FAULT_TMP:-$B/fault-tmp} # its own: make test empties its logs folder
# It exists before programs.sh's MPI check, whose mpirun makes its session
# folder there.
mkdir -p "$TMPDIR"

. tests/lib/tap.sh
. tests/lib/programs.sh
. tests/faults/cell.sh

mapfile -t cells < <(fault_matrix_cells)
if [ -n "$LIST" ]; then
  fault_run_cells "$JOBS" "${cells[@]}"
  exit 0
fi

rm -rf "$LOG" "$TMPDIR"/* && mkdir -p "$LOG" "$TMPDIR"
echo "# ${#cells[@]} cells, $JOBS at a time; MPI: $([ $HAVE_MPI = 1 ] && echo yes || echo "no ($NO_MPI)")"
why=""
need programs-sim-pthread
[ $HAVE_MPI = 1 ] && need programs-sim-mpi
[ -z "$why" ] || { echo "fault_matrix.sh: $why" >&2; exit 1; }
start=$(date +%s)
number=0 passed=0 failed=0 skipped=0
fault_run_cells "$JOBS" "${cells[@]}"
fault_every_call_injected fault-matrix/matrix-injects-every-call
echo "# $(($(date +%s) - start)) s"
echo "1..$number"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
