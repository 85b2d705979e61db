# The limits no case can pass, sourced by run_tests.sh: a case that runs
# longer than TEST_CASE_LIMIT seconds (default 420) is ended, its processes
# killed and the case failed, naming what it was still running; a whole run
# longer than TEST_RUN_LIMIT seconds (default 1200) is ended, failed,
# naming the cases it was in. `run` gives each command its own, shorter
# limit (TEST_TIMEOUT); this one catches what waits outside `run` (a
# background reader, a server, a `wait`).
#
# begin writes RUNNING/PID (PID: the shell running the case, $BASHPID)
# with the case's start and name, and exports the case's mark, PID-START,
# added to TEST_CASE_MARKS (the marks of the cases of outer runs, for a run
# started by a case); end removes the file, and fails the case if the
# guard left RUNNING/PID.ended. A case ended at its limit loses every
# process under its shell and every process that carries its mark: a
# reader started from a subshell that has since ended (no longer under
# the case, as a daemon is), a run of the suite inside it, with its
# guard and lanes. The guard is one background loop:
#   guard_start               starts it (after the lanes: guard_keep first)
#   guard_keep PID...         processes the guard never kills (the lanes)
#   guard_stop                ends it

CASE_LIMIT=${TEST_CASE_LIMIT:-420}
RUN_LIMIT=${TEST_RUN_LIMIT:-1200}
RUNNING=$LOG/running
KEEP=""
GUARD_OUTER_MARKS=${TEST_CASE_MARKS:-}

guard_keep() { KEEP+=" $* " && mkdir -p "$RUNNING" && echo "$KEEP" >"$RUNNING/keep"; }

# guard_tree PID [all]: every process under PID (not PID itself) but the
# guard, leaving out the kept processes and what runs under them unless
# told "all", one per line.
guard_tree() {
  local p queue=($(pgrep -P "$1"))
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]} && queue=("${queue[@]:1}")
    [ "$p" = "$GUARD_SELF" ] && continue
    [ "${2:-}" != all ] && [[ $(cat "$RUNNING/keep" 2>/dev/null) == *" $p "* ]] && continue
    echo "$p"
    queue+=($(pgrep -P "$p"))
  done
}

# guard_marked MARK: every process but the guard and the run's shell
# whose environment carries MARK in TEST_CASE_MARKS, one per line.
guard_marked() {
  local file p
  for file in $(grep -lzE "^TEST_CASE_MARKS=(.* )?$1( |\$)" /proc/[0-9]*/environ 2>/dev/null); do
    p=${file#/proc/} && p=${p%/environ}
    [ "$p" = "$GUARD_SELF" ] || [ "$p" = "$RUN_PID" ] || echo "$p"
  done
}

# guard_case_processes PID START: the processes of the case that shell PID
# began at START: those under it (guard_tree), then those that left it but
# carry its mark (guard_marked).
guard_case_processes() {
  local p tree
  tree=" $(guard_tree "$1" | tr '\n' ' ') "
  echo "${tree// /$'\n'}" | grep .
  for p in $(guard_marked "$1-$2"); do
    [ "$p" = "$1" ] || [[ $tree == *" $p "* ]] || echo "$p"
  done
}

# guard_kill PID...: each named with its command line, then ended (TERM,
# then KILL 2 s later).
guard_kill() {
  local p
  [ $# = 0 ] && return
  for p in "$@"; do
    echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-160)"
  done
  kill -TERM "$@" 2>/dev/null
  sleep 2
  kill -KILL "$@" 2>/dev/null
}

guard_loop() {
  local file pid start name now victims
  GUARD_SELF=$BASHPID # (a command substitution has a $BASHPID of its own)
  shopt -s nullglob
  while sleep 1; do
    kill -0 "$RUN_PID" 2>/dev/null || exit 0 # the run ended, however
    now=$EPOCHSECONDS
    for file in "$RUNNING"/[0-9]*; do
      [[ $file == *.ended ]] && continue
      pid=${file##*/}
      [ -e "$file.ended" ] && continue
      read -r start name <"$file" 2>/dev/null || continue
      [ $((now - start)) -gt "$CASE_LIMIT" ] || continue
      { echo "ended after $((now - start)) s (TEST_CASE_LIMIT=$CASE_LIMIT): it was still running:"
        guard_kill $(guard_case_processes "$pid" "$start"); } >"$file.ended"
    done
    if [ $((now - RUN_START_S)) -gt "$RUN_LIMIT" ]; then
      {
        echo "run_tests.sh: the whole run passed its limit of $RUN_LIMIT s (TEST_RUN_LIMIT); the cases it was in:"
        for file in "$RUNNING"/[0-9]*; do
          [[ $file == *.ended ]] && continue
          read -r start name <"$file" 2>/dev/null && echo "  $name (for $((now - start)) s)"
        done
        echo "run_tests.sh: ending the run (not ok)"
      } >&2
      : >"$RUNNING/run-ended"
      # (the run's shell, ending, stops the guard: not before it is done)
      trap '' TERM
      # (listed first: once the run's shell is gone, they are no longer
      # under it)
      victims=$(guard_tree "$RUN_PID" all)
      kill -TERM "$RUN_PID" 2>/dev/null
      guard_kill $victims >/dev/null
      # What the cases started after that list, before the run's shell
      # ended (a reader started as the limit came), carries their marks.
      for file in "$RUNNING"/[0-9]*; do
        [[ $file == *.ended ]] && continue
        read -r start name <"$file" 2>/dev/null && guard_kill $(guard_marked "${file##*/}-$start") >/dev/null
      done
      exit 1
    fi
  done
}

guard_start() {
  RUN_START_S=$EPOCHSECONDS RUN_PID=$$
  mkdir -p "$RUNNING"
  guard_loop </dev/null >/dev/null &
  GUARD_PID=$!
}
# guard_stop: ends the guard; false if it had ended the run (the run's
# shell may finish before the guard's signal reaches it).
guard_stop() {
  [ -n "${GUARD_PID:-}" ] && kill "$GUARD_PID" 2>/dev/null
  ! [ -e "$RUNNING/run-ended" ]
}
