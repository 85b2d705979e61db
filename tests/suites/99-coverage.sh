# Every error message has a test case: reads the logs of the whole run, so
# it runs last. Sourced by tests/run_tests.sh (tests/lib/tap.sh).
# Lane: last (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------ every error message has a test case
if [ -n "$FILTER" ]; then
  skip coverage/every-error-message-tested "needs the logs of the whole suite (TEST_FILTER is set)"
elif begin coverage/every-error-message-tested; then
  # Without Open MPI the MPI cases were skipped: their messages are left
  # out, and named in the log.
  run python3 tests/checks/check_messages.py $([ $HAVE_MPI = 0 ] && echo --without-mpi) "$LOG"
  want_status 0
  [ "$status" = 0 ] || why+="$(grep -v '^check_messages:' "$f.out" | head -n 5 | tr '\n' ' ')"
  end
  grep -h 'left out' "$f.out" | sed 's/^/# /'
fi
