#!/usr/bin/env bash
# The test suite (`make test`). Runs every case of tests/suites/*.sh, in
# name order, each with a time limit (a hang fails instead of stalling),
# and ends with one line "N passed, N failed, N skipped"; exits 0 only if
# none failed.
#
# Without a GPU the examples run against ncclsim, a host simulation of the
# CUDA and NCCL calls they make (tests/sim). With a GPU the real programs run
# too, on 1..(GPU count) ranks. Logs: tests/build/logs/<case>.{out,err}.
#
# Output is TAP: "ok N - name", "not ok N - name: why" (then the case's
# stderr as "# " lines), "ok N - name # SKIP reason", and the plan "1..N"
# at the end, before the closing line.
#
# TEST_TIMEOUT=s    limit per command a case runs (default 60)
# TEST_CASE_LIMIT=s limit per case, what it waits for outside its commands
#                   too (default 420); TEST_RUN_LIMIT=s: per whole run
#                   (default 1200); tests/lib/guard.sh
# TEST_FILTER=re    run only cases whose name matches the regular expression,
#                   building only what they need
# TEST_LIST=1       print the names of the cases (those TEST_FILTER keeps);
#                   TEST_LIST=files: each with the suite file that makes it
#                   without building or running anything
# TEST_LOGS=dir     where the logs go (default tests/build/logs; a run of
#                   the suite from inside the suite uses its own)
# TEST_MPI=1        run the MPI cases even if the check before them finds
#                   that Open MPI cannot connect 2 local ranks here
# TEST_LANES=1      a whole run in one lane (default 4: four groups of
#                   suites at once)
# TEST_SUITE=name   run one file of tests/suites alone, named with or
#                   without its number and .sh (60-bench, bench), building
#                   only what its cases need; TEST_FILTER still applies
#                   (or a suite file's path, DIR/NAME.sh)
#
# The suite starts from a known environment: tests/lib/environment.sh
# clears what the caller exported that would change a verdict.
#
# tests/lib/tap.sh is the framework (begin, need, run, want_*, end, skip),
# tests/lib/programs.sh what the suites share (probing, sim_run, expected),
# tests/oracles/expected_output.py the one oracle of a good run's output.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib/environment.sh
ROOT=$PWD
B=$ROOT/tests/build
LOG=${TEST_LOGS:-$B/logs}
TIMEOUT=${TEST_TIMEOUT:-60}
FILTER=${TEST_FILTER:-}
LIST=${TEST_LIST:-}
ONLY=""
if [[ ${TEST_SUITE:-} == */*.sh ]] && [ -f "$TEST_SUITE" ]; then
  ONLY=$TEST_SUITE # a suite file given by its path (the controls' own)
elif [ -n "${TEST_SUITE:-}" ]; then
  want=${TEST_SUITE%.sh}
  for suite in tests/suites/*.sh; do
    name=${suite##*/} && name=${name%.sh}
    [ "$name" = "$want" ] || [ "${name#[0-9][0-9]-}" = "$want" ] && ONLY+="$suite "
  done
  if [ "$(echo $ONLY | wc -w)" != 1 ]; then
    echo "run_tests.sh: TEST_SUITE=$TEST_SUITE names $(echo $ONLY | wc -w) suites; one of:" \
      $(cd tests/suites && ls *.sh | sed 's/\.sh$//') >&2
    exit 2
  fi
fi
unset TEST_SUITE # a run of the suite from inside a case picks its own
if [ -z "$LIST" ]; then
  rm -rf "$LOG"
  mkdir -p "$LOG/tmp"
fi
export TMPDIR=$LOG/tmp

run_start=$EPOCHREALTIME
. tests/lib/tap.sh
. tests/lib/guard.sh
. tests/lib/speed.sh
. tests/lib/programs.sh

if [ -z "$LIST" ]; then
  echo "# GPUs visible: $NGPUS; MPI: $([ $HAVE_MPI = 1 ] && echo "yes: $MPI_CHECK" || echo "no ($NO_MPI)")"
  if [ -n "$SUITE_CLEARED" ]; then
    echo "# environment: cleared ${SUITE_CLEARED}(tests/lib/environment.sh)"
  fi
  # A whole run builds everything at once, in parallel; a filtered run
  # builds only what its cases `need`.
  if [ -z "$FILTER" ] && [ -z "$ONLY" ]; then
    # Every case's name and suite, listed beside the build (it runs
    # nothing): the progress lines' total, and the checks of the names
    # (97-checks.sh) read it.
    TEST_LIST=files bash "$ROOT/tests/run_tests.sh" >"$LOG/case-list.txt" 2>/dev/null &
    listing=$!
    echo "# Building test programs ..."
    make -C tests -j"$(nproc)" >"$LOG/build.log" 2>&1 ||
      echo "# make -C tests failed (see $LOG/build.log); cases that need what did not build fail"
  fi
fi

# Progress: after each suite, its cases and time, and how far the run is
# (for a whole run the total comes from the list made beside the build,
# which ran nothing).
total=""
if [ -n "${listing:-}" ]; then
  wait "$listing"
  total=" of $(grep -c . "$LOG/case-list.txt")"
fi
lane=""
# A suite that ends its shell (a shell error under set -u, an exit) fails
# the run at once, naming itself, rather than leaving its later cases
# unrun; in the run's own shell the guard is stopped with it.
suite_now=""
suite_stopped() {
  local status=$?
  [ -n "$suite_now" ] || return "$status"
  number=$((number + 1)) failed=$((failed + 1))
  if [ -e "$RUNNING/run-ended" ]; then # the guard ended the run (guard.sh)
    echo "not ok $number - $suite_now: the run was ended inside this suite at its limit (TEST_RUN_LIMIT=$RUN_LIMIT s): its later cases did not run"
  else
    echo "not ok $number - $suite_now: the suite stopped before its end (exit status $status; its error is above): its later cases did not run"
  fi
  if [ "$BASHPID" = "$$" ]; then
    guard_stop
    echo "1..$number"
    echo "$passed passed, $failed failed, $skipped skipped"
  fi
  exit 1
}
trap suite_stopped EXIT
run_suite() { # FILE: runs its cases, then says how long it took
  local suite=$1 suite_start=$EPOCHREALTIME suite_first=$number n
  suite_now=$suite
  . "$suite"
  suite_now=""
  if [ -z "$LIST" ] && [ "$number" != "$suite_first" ]; then
    echo "$(seconds_since "$suite_start") ${suite##*/}" >>"$LOG/suite-times.txt"
    n=$((number - suite_first))
    echo "# ${suite##*/}: $n case$([ $n = 1 ] || echo s) in $(seconds_since "$suite_start") s;" \
      "${lane:+$lane: }$number$total done after $(seconds_since "$run_start") s"
  fi
}

# A whole run takes four lanes at once (most cases wait on processes,
# timers or builds of their own, and a lane that waits leaves the cores to
# the others): each suite names its lane at its top ("# Lane: first",
# second, third, fourth or last). The suites of the second, third and
# fourth lanes run in the background, their TAP lines kept and numbered
# after the first lane's. The fault suites share the census
# (tests/faults/cell.sh), so they keep to one lane. The check over the whole
# run's logs (99-coverage.sh) is the last. Everything the lanes `need` was
# built above.
# A suite of lane "own" runs only when named (TEST_SUITE), under its own
# make target: not in a whole or filtered run.
lane_of() { sed -n 's/^# Lane: \([a-z]*\).*/\1/p' "$1" | head -n 1; }
for suite in tests/suites/*.sh; do
  case $(lane_of "$suite") in first | second | third | fourth | last | own) ;; *)
    echo "run_tests.sh: $suite names no lane: add a line '# Lane: first' (or second, third, fourth, last, own) at its top" >&2
    exit 2
    ;;
  esac
done
run_lane() { # NAME: runs the suites of that lane, in order
  local suite
  for suite in tests/suites/*.sh; do
    [ "$(lane_of "$suite")" = "$1" ] && run_suite "$suite"
  done
  return 0
}
background_lane() { # NAME: runs its suites in the background, TAP to LOG/NAME-lane.tap
  (
    number=0 passed=0 failed=0 skipped=0 lane="$1 lane" total=""
    trap suite_stopped EXIT
    run_lane "$1"
    children_ticks && echo "$ALL_TICKS" >"$LOG/lane-$BASHPID.ticks" # (tests/lib/tap.sh)
  ) >"$LOG/$1-lane.tap" 2>&1 </dev/null &
}
[ -n "$LIST" ] || guard_start
if [ -n "$ONLY" ]; then
  run_suite $ONLY
elif [ -z "$LIST" ] && [ -z "$FILTER" ] && [ "${TEST_LANES:-4}" != 1 ]; then
  background_lane second
  second_lane=$!
  background_lane third
  third_lane=$!
  background_lane fourth
  fourth_lane=$!
  guard_keep "$second_lane" "$third_lane" "$fourth_lane"
  LANE_PIDS="$second_lane $third_lane $fourth_lane" # (a case's CPU: tests/lib/tap.sh)
  whole=$total lane="first lane" total=""
  run_lane first
  wait "$second_lane" "$third_lane" "$fourth_lane"
  replay_tap "$LOG/second-lane.tap"
  replay_tap "$LOG/third-lane.tap"
  replay_tap "$LOG/fourth-lane.tap"
  lane="" total=$whole
  run_lane last
else
  for suite in tests/suites/*.sh; do
    [ "$(lane_of "$suite")" = own ] || run_suite "$suite"
  done
fi

[ -n "$LIST" ] && exit 0
if ! guard_stop; then
  number=$((number + 1)) failed=$((failed + 1))
  echo "not ok $number - run_tests.sh: the whole run passed TEST_RUN_LIMIT=$RUN_LIMIT s (tests/lib/guard.sh)"
fi
echo "# time per suite (s): $(sort -rn "$LOG/suite-times.txt" 2>/dev/null | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')"
echo "# slowest cases (s): $(sort -rn "$LOG/case-times.txt" 2>/dev/null | head -n 20 | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')"
echo "# most CPU (s, the processes a case waited for): $(sort -rn "$LOG/case-cpu.txt" 2>/dev/null | head -n 20 | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')"
echo "# whole run: $(seconds_since "$run_start") s"
# A whole run ran every case it listed: a suite or a cell that stopped
# early (a shell error) must not pass by running fewer.
if [ -n "${listing:-}" ] && [ "$number" != "$(grep -c . "$LOG/case-list.txt")" ]; then
  number=$((number + 1)) failed=$((failed + 1))
  echo "not ok $number - run_tests.sh: $((number - 1)) cases ran, but $(grep -c . "$LOG/case-list.txt") were listed ($LOG/case-list.txt)"
fi
echo "1..$number"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
