# A case whose FIFO reader is no longer under it (started from a subshell
# that has ended, as a daemon starts), and which then waits outside `run`
# (the control of tests/lib/guard.sh in 97-checks.sh: at the case's limit
# the guard must end the reader too, naming it).
# Lane: own

if begin control/reader-leaves-the-case; then
  mkfifo "$f.fifo"
  (cat "$f.fifo" >/dev/null &)
  sleep 600
  end
fi
