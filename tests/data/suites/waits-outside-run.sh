# A case that waits outside `run`, with no limit of its own: a background
# reader that never gets a writer, then `wait` (the controls of
# tests/lib/guard.sh in 97-checks.sh: the guard must end it, naming it).
# Lane: own

if begin control/waits-outside-run; then
  mkfifo "$f.fifo"
  cat "$f.fifo" >/dev/null &
  wait $!
  end
fi
if begin control/the-next-case-runs; then
  run true
  want_status 0
  end
fi
