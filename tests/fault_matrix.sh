#!/usr/bin/env bash
# The whole fault matrix (`make test-faults`; tests/lib/faults.sh says what
# a cell is and checks): every call the simulation can inject fails on the
# first, a middle and the last of 1, 2 and 8 ranks, and five calls hang on
# the first, a middle and the last of 1, 2, 4 and 8 ranks, in both modes,
# both programs, in the lesson, in --bench and in the lesson with every rank
# on one GPU. `make test` runs a subset of the same cells (55-fault-matrix.sh).
#
# Cells run FAULT_JOBS at a time (default: 2 per core; most of a cell is
# waiting). Output is TAP like run_tests.sh's, in cell order, ending with
# "N passed, N failed, N skipped"; exits 0 only if none failed.
# Logs: tests/build/fault-logs/<cell>.{out,err}.
#
# TEST_FILTER=re   only the cells whose name matches (the coverage check
#                  then counts only those)
# TEST_LIST=1      print the cells' names, run nothing
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib/environment.sh
ROOT=$PWD
B=$ROOT/tests/build
LOG=$B/fault-logs
TIMEOUT=${TEST_TIMEOUT:-60}
FILTER=${TEST_FILTER:-}
LIST=${TEST_LIST:-}
JOBS=${FAULT_JOBS:-$((2 * $(nproc)))}
case $JOBS in
  '' | *[!0-9]* | 0) echo "fault_matrix.sh: invalid FAULT_JOBS='$JOBS': use a whole number from 1" >&2; exit 2 ;;
esac
export TMPDIR=$B/fault-tmp # its own: make test empties its logs folder

. tests/lib/tap.sh
. tests/lib/programs.sh
. tests/lib/faults.sh

cells=()
while read -r cell; do
  [ -z "$FILTER" ] || [[ $(fault_cell_name $cell) =~ $FILTER ]] && cells+=("$cell")
done < <(fault_matrix_cells)
if [ -n "$LIST" ]; then
  for cell in "${cells[@]}"; do fault_cell $cell; done
  exit 0
fi

rm -rf "$LOG" "$TMPDIR" && mkdir -p "$LOG/tap" "$TMPDIR"
echo "# ${#cells[@]} cells, $JOBS at a time; MPI: $([ $HAVE_MPI = 1 ] && echo yes || echo "no ($NO_MPI)")"
why=""
need programs-sim-pthread
[ $HAVE_MPI = 1 ] && need programs-sim-mpi
[ -z "$why" ] || { echo "fault_matrix.sh: $why" >&2; exit 1; }

# The census of every configuration the cells use, before any cell runs
# (cells run in parallel and only read them).
start=$(date +%s)
while read -r mode p how n; do
  [ "$mode" = mpi ] && [ $HAVE_MPI = 0 ] && continue
  (fault_census "$mode" "$p" "$how" "$n" >/dev/null) </dev/null &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done < <(for cell in "${cells[@]}"; do echo "$cell" | cut -d' ' -f2-5; done | sort -u)
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n; done
echo "# census of $(ls "$CENSUS_DIR" 2>/dev/null | grep -c '\.txt$') configurations in $(($(date +%s) - start)) s"

# Each cell runs in a subshell of its own (its own $f, $why, $status) and
# leaves its TAP line in tap/<index>; they are printed in order afterwards.
# (A census that failed fails its cells, each saying so.)
i=0
for cell in "${cells[@]}"; do
  i=$((i + 1))
  (fault_cell $cell) >"$LOG/tap/$i" </dev/null &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done
wait

for ((j = 1; j <= i; j++)); do
  # `end` in a subshell numbered its case 1; renumber, keep its detail lines.
  while IFS= read -r line; do
    case $line in
      "ok 1 - "*" # SKIP "*) number=$((number + 1)) skipped=$((skipped + 1)); echo "ok $number - ${line#ok 1 - }" ;;
      "ok 1 - "*) number=$((number + 1)) passed=$((passed + 1)); echo "ok $number - ${line#ok 1 - }" ;;
      "not ok 1 - "*) number=$((number + 1)) failed=$((failed + 1)); echo "not ok $number - ${line#not ok 1 - }" ;;
      *) echo "$line" ;;
    esac
  done <"$LOG/tap/$j"
done
fault_every_call_injected faults/matrix-injects-every-call
echo "# $(($(date +%s) - start)) s"
echo "1..$number"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
