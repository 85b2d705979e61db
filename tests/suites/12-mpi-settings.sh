# Open MPI's own settings: before any MPI case the suite checks that Open MPI
# can run and connect 2 local ranks here (tests/lib/programs.sh,
# mpi_preflight). A setting that breaks its local transports skips the MPI
# cases, naming the check's error and the setting; a harmless one changes
# nothing; TEST_MPI=1 runs them anyway.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: third (tests/run_tests.sh runs the lanes of a whole run at once)

# nested_suite NAME VAR=VALUE...: runs two cases of the suite (the same
# program in both modes) with those settings, logs of its own.
nested_suite() {
  local name=$1
  shift
  need programs-sim-pthread programs-sim-mpi
  run env "$@" TEST_LOGS="$TMPDIR/nested-$name" \
    TEST_FILTER='^sim/sim-(pthread|mpi)/allreduce_sm-2$' bash "$ROOT/tests/run_tests.sh"
}
MPI_SETTING_CASES="mpi-settings/btl-self-skips-the-mpi-cases mpi-settings/harmless-setting-runs-them mpi-settings/TEST_MPI=1-runs-them-anyway"
if [ $HAVE_MPI = 0 ] && [ -z "$MPI_CHECK" ]; then
  for c in $MPI_SETTING_CASES; do skip "$c" "$NO_MPI"; done
elif [ $HAVE_MPI = 0 ]; then
  for c in $MPI_SETTING_CASES; do skip "$c" "Open MPI fails the check here already: $MPI_CHECK"; done
else
  # Only the self transport: two processes cannot reach each other.
  if begin mpi-settings/btl-self-skips-the-mpi-cases; then
    nested_suite btl-self OMPI_MCA_btl=self
    want_status 0
    want_out "MPI: no (Open MPI cannot run and connect 2 local ranks here"
    # The machine's own settings (kept by the suite) may come beside it.
    grep -qE 'Open MPI settings in the environment: ([^;]* )?OMPI_MCA_btl=self[ ;]' "$f.out" ||
      why+="stdout lacks OMPI_MCA_btl=self among the Open MPI settings in the environment; "
    want_out "to run the MPI cases anyway: TEST_MPI=1, or unset those settings)"
    grep -qE '^ok [0-9]+ - sim/sim-mpi/allreduce_sm-2 # SKIP Open MPI cannot run' "$f.out" ||
      why+="the MPI case was not skipped with the check's reason; "
    grep -qE '^ok [0-9]+ - sim/sim-pthread/allreduce_sm-2$' "$f.out" || why+="the pthread case did not pass; "
    want_out "1 passed, 0 failed, 1 skipped"
    end
  fi
  # A verbosity setting: the check passes and the MPI case runs.
  if begin mpi-settings/harmless-setting-runs-them; then
    nested_suite harmless OMPI_MCA_btl_base_verbose=0
    want_status 0
    want_out "MPI: yes: 2 local ranks connect"
    grep -qE '^ok [0-9]+ - sim/sim-mpi/allreduce_sm-2$' "$f.out" || why+="the MPI case did not run and pass; "
    want_out "2 passed, 0 failed, 0 skipped"
    end
  fi
  # The control: forced past the check, the broken setting fails the case,
  # so it was the check that skipped it.
  if begin mpi-settings/TEST_MPI=1-runs-them-anyway; then
    nested_suite forced OMPI_MCA_btl=self TEST_MPI=1
    want_status 1
    want_out "MPI: yes: not checked (TEST_MPI=1)"
    grep -qE '^not ok [0-9]+ - sim/sim-mpi/allreduce_sm-2' "$f.out" || why+="the MPI case did not run and fail; "
    want_out "1 passed, 1 failed, 0 skipped"
    end
  fi
fi
