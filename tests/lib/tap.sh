# The test framework, sourced by run_tests.sh: named cases, assertions, TAP
# output, and building on demand.
#
#   if begin NAME; then      starts a case; false if TEST_FILTER leaves it
#     need TARGET...         out, or with TEST_LIST (which prints NAME,
#                            and with TEST_LIST=files its suite's file)
#     run CMD...; want_status 0; want_out TEXT ...
#   end; fi                  prints "ok N - NAME" or "not ok N - NAME: why"
#   skip NAME REASON         prints "ok N - NAME # SKIP REASON"
#
# Each case's stdout and stderr are in $f.out and $f.err (tests/build/logs).
# A case may only use what it named with `need` (a target of tests/Makefile),
# so that a filtered run builds only what its cases use.

passed=0 failed=0 skipped=0 number=0
TICKS_PER_S=$(getconf CLK_TCK 2>/dev/null || echo 100)
# TEST_PREBUILT: targets a caller built before starting this run (make
# test-gpu runs two at once, which must not rebuild what the other runs).
BUILT=" ${TEST_PREBUILT:-} " BUILD_FAILED=" "

# The CPU time (clock ticks) of the children this shell has waited for
# (/proc/PID/stat's cutime and cstime), in CPU_TICKS, and of the shell
# with them, in ALL_TICKS: a case's CPU is the difference of CPU_TICKS
# between its end and its start, less that of the background lanes of a
# whole run (LANE_PIDS, run_tests.sh) that the run's own shell reaped
# meanwhile: each wrote its ALL_TICKS to LOG/lane-PID.ticks as it ended.
children_ticks() {
  local stat
  read -r stat <"/proc/$BASHPID/stat" 2>/dev/null || { CPU_TICKS=0 ALL_TICKS=0; return; }
  local -a field
  read -ra field <<<"${stat##*) }" # from the state on: utime is the 12th
  CPU_TICKS=$((field[13] + field[14]))
  ALL_TICKS=$((field[11] + field[12] + CPU_TICKS))
}
lanes_not_reaped() { # the lanes this shell has not reaped (kill -0 finds a zombie too)
  local pid
  LANES_HERE=""
  [ "$BASHPID" = "$$" ] || return 0
  for pid in ${LANE_PIDS:-}; do kill -0 "$pid" 2>/dev/null && LANES_HERE+=" $pid"; done
}

# begin NAME: starts a case; returns 1 (skip it) if TEST_FILTER excludes it.
begin() {
  name=$1 why="" unbuilt=""
  f=$LOG/${name//[^A-Za-z0-9_.=-]/_} # log file stem
  [ -z "$FILTER" ] || [[ $name =~ $FILTER ]] || return 1
  if [ -n "$LIST" ]; then # TEST_LIST=files: also the suite that makes it
    [ "$LIST" = files ] && echo "$name	${suite:-}" || echo "$name"
    return 1
  fi
  case_start=$EPOCHREALTIME
  children_ticks
  case_ticks=$CPU_TICKS
  lanes_not_reaped
  case_lanes=$LANES_HERE
  # (tests/lib/guard.sh, where the runner has one: every process the case
  # starts carries its mark, which the guard looks for)
  if [ -n "${RUNNING:-}" ]; then
    local now=$EPOCHSECONDS
    echo "$now $name" >"$RUNNING/$BASHPID"
    export TEST_CASE_MARKS="$GUARD_OUTER_MARKS $BASHPID-$now"
  fi
}

# seconds_since EPOCHREALTIME-VALUE: the seconds since then, to 0.1 s.
seconds_since() {
  local now=${EPOCHREALTIME/./} then=${1/./}
  local tenths=$(((now - then) / 100000))
  echo "$((tenths / 10)).$((tenths % 10))"
}

# need TARGET...: builds these targets of tests/Makefile once per run (unit
# test paths relative to tests/build, programs-VARIANT, real-programs-MODE);
# a target that does not build fails the case, naming it.
need() {
  local t target
  for t in "$@"; do
    [[ $BUILT == *" $t "* ]] && continue
    if [[ $BUILD_FAILED == *" $t "* ]]; then
      why+="build of $t failed (see $LOG/build.log); "
      unbuilt=1
      continue
    fi
    target=$t
    [[ $t == */* ]] && target=$B/$t
    # One build at a time across the lanes: two makes of one target would
    # write the same objects while the other links them.
    mkdir -p "$B"
    if flock "$B/.need.lock" make -C "$ROOT/tests" -j"$(nproc)" "$target" >>"$LOG/build.log" 2>&1; then
      BUILT+="$t "
    else
      BUILD_FAILED+="$t "
      why+="build of $t failed (see $LOG/build.log); "
      unbuilt=1
    fi
  done
}

# run CMD...: runs it with the time limit; sets $status. A case whose
# build failed does not run. Shortly before the limit, the stacks of every
# process the command started are written to $f.stacks (gdb), so that a
# hang says where it hung.
run() {
  if [ -n "$unbuilt" ]; then
    status=-1
    : >"$f.out" >"$f.err"
    return
  fi
  rm -f "$f.stacks"
  timeout -k 5 "$TIMEOUT" "$@" <&0 >"$f.out" 2>"$f.err" &
  local job=$! watcher
  # (the stacks take a second or two per process: started a sixth of the
  # limit before it, at least 2 s)
  { sleep $((TIMEOUT > 12 ? TIMEOUT - TIMEOUT / 6 : TIMEOUT > 3 ? TIMEOUT - 2 : 1)) >/dev/null &&
    stacks_of "$job" >"$f.stacks"; } </dev/null 2>/dev/null &
  watcher=$!
  wait "$job"
  status=$?
  # The watcher goes with the job: its sleep, and the watcher itself (a
  # job that ends at once may end before the watcher has started its
  # sleep, which pkill alone would then miss, and the wait below would
  # last the whole sleep).
  pkill -P "$watcher" sleep 2>/dev/null
  kill "$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
}

# descendants PID: PID and every process under it, one per line (a case
# acts only on its own processes: other cases run at the same time).
descendants() {
  local queue=("$1") p
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    echo "$p"
    queue+=($(pgrep -P "$p"))
  done
}

# stacks_of PID: every thread's stack of each process under PID (gdb, where
# installed), the launchers (timeout, mpirun, bash, env) left out.
stacks_of() {
  local p
  command -v gdb >/dev/null || { echo "gdb not installed: no stacks"; return; }
  for p in $(descendants "$1"); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in
      "" | timeout | mpirun | orterun | prterun | bash | env | sleep) continue ;;
    esac
    echo "=== process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-200)"
    timeout 10 gdb -batch -nx -p "$p" -ex 'thread apply all bt' 2>&1 |
      grep -E '^(Thread|#[0-9])' | cut -c1-240
  done
}
want_status() {
  if [ "$status" = -1 ]; then
    return # not run: the reason is already in $why
  elif [ "$status" = 124 ] || [ "$status" = 137 ]; then
    why+="timed out after ${TIMEOUT}s (hang$([ -s "$f.stacks" ] && echo "; its stacks: $f.stacks")); "
  elif [ "$status" != "$1" ]; then
    why+="exit status $status, wanted $1; "
  fi
}
want_failure() { # any non-zero status that is not a time-out
  if [ "$status" = -1 ]; then return
  elif [ "$status" = 124 ] || [ "$status" = 137 ]; then why+="timed out (hang); "
  elif [ "$status" = 0 ]; then why+="exit status 0, wanted a failure; "; fi
}
want_out() { grep -qF -- "$1" "$f.out" || why+="stdout lacks '$1'; "; }
want_err() { grep -qF -- "$1" "$f.err" || why+="stderr lacks '$1'; "; }
no_out() { ! grep -qF -- "$1" "$f.out" || why+="stdout has '$1'; "; }
no_err() { ! grep -qF -- "$1" "$f.err" || why+="stderr has '$1'; "; }
no_violation() {
  ! grep -q "ncclsim: \(LEAK\|RULE VIOLATION\)" "$f.err" ||
    why+="the simulation reported a leak or rule violation; "
}
no_sanitizer_report() {
  ! grep -q "Sanitizer\|runtime error:" "$f.err" || why+="a sanitizer reported; "
}
want_out_file() { # exact comparison with an expected file
  diff -u "$1" "$f.out" >"$f.diff" ||
    why+="stdout differs from the expected output (see $f.diff); "
}
end() {
  number=$((number + 1))
  local mark=${RUNNING:-/nonexistent}/$BASHPID
  [ -z "${RUNNING:-}" ] || { rm -f "$mark" && export TEST_CASE_MARKS=$GUARD_OUTER_MARKS; }
  if [ -e "$mark.ended" ]; then # the guard ended it
    why+="$(tr '\n' ' ' <"$mark.ended")"
    rm -f "$mark.ended"
  fi
  echo "$(seconds_since "$case_start") $name" >>"$LOG/case-times.txt"
  children_ticks
  local pid lane_ticks=0 t
  for pid in $case_lanes; do # reaped during the case: not its CPU
    kill -0 "$pid" 2>/dev/null || { read -r t 2>/dev/null <"$LOG/lane-$pid.ticks" && lane_ticks=$((lane_ticks + t)); }
  done
  local tenths=$(((CPU_TICKS - case_ticks - lane_ticks) * 10 / TICKS_PER_S))
  echo "$((tenths / 10)).$((tenths % 10)) $name" >>"$LOG/case-cpu.txt"
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
    [ -z "${RUNNING:-}" ] || { rm -f "$RUNNING/$BASHPID" && export TEST_CASE_MARKS=$GUARD_OUTER_MARKS; }
    number=$((number + 1))
    skipped=$((skipped + 1))
    echo "ok $number - $1 # SKIP $2"
  fi
}

# replay_tap FILE: prints the TAP of a run made elsewhere (in a subshell,
# numbered from 1), numbered and counted as this run's; other lines as they
# are.
replay_tap() {
  local line
  while IFS= read -r line; do
    if [[ $line =~ ^ok\ [0-9]+\ -\ (.*\ \#\ SKIP\ .*)$ ]]; then
      number=$((number + 1)) skipped=$((skipped + 1))
      echo "ok $number - ${BASH_REMATCH[1]}"
    elif [[ $line =~ ^ok\ [0-9]+\ -\ (.*)$ ]]; then
      number=$((number + 1)) passed=$((passed + 1))
      echo "ok $number - ${BASH_REMATCH[1]}"
    elif [[ $line =~ ^not\ ok\ [0-9]+\ -\ (.*)$ ]]; then
      number=$((number + 1)) failed=$((failed + 1))
      echo "not ok $number - ${BASH_REMATCH[1]}"
    else
      echo "$line"
    fi
  done <"$1"
}
