# Unit tests of common/ (options, verification, the transports).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: second (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------------------------ unit tests
if begin unit/options; then need unit/test_options; run "$B/unit/test_options"; want_status 0; end; fi
if begin unit/simulation-is-unkind; then
  need unit/test_sim
  run "$B/unit/test_sim"
  want_status 0
  want_out "test_sim: all passed"
  no_violation
  end
fi
if begin unit/device-api-versions; then
  need unit/test_device_api
  SIM_DIR=$TMPDIR run "$B/unit/test_device_api"
  want_status 0
  want_out "test_device_api: all passed"
  no_violation
  end
fi
if begin unit/shadow-rule; then
  need unit/test_shadow
  run "$B/unit/test_shadow"
  want_status 0
  want_out "test_shadow: all passed"
  end
fi
if begin unit/what-ran; then need unit/test_what_ran; run "$B/unit/test_what_ran"; want_status 0; end; fi
if begin unit/what-ran-causes; then
  need unit/test_what_ran_causes; run "$B/unit/test_what_ran_causes"; want_status 0; end
fi
if begin unit/watchdog-verdict; then
  need unit/test_verdict
  run "$B/unit/test_verdict"
  want_status 0
  want_out "test_verdict: all checks passed"
  end
fi
if begin unit/watchdog-calls; then
  need unit/test_calls
  run "$B/unit/test_calls"
  want_status 0
  want_out "calls: all passed"
  end
fi
if begin unit/bench-timing; then
  need unit/test_timing
  run "$B/unit/test_timing"
  want_status 0
  want_out "timing: all passed"
  end
fi
if begin unit/verify; then need unit/test_verify; run "$B/unit/test_verify"; want_status 0; end; fi
for n in 1 2 3 4 5 6 7 8; do
  if begin "unit/bootstrap-pthread/$n"; then
    need unit/test_bootstrap
    run "$B/unit/test_bootstrap" $n
    want_status 0
    want_out "line from rank $((n - 1))"
    [ "$(grep -c '^line from rank' "$f.out")" = $n ] || why+="not $n ordered lines; "
    [ "$(grep '^line from rank' "$f.out" | awk '{print $4}' | paste -sd,)" = "$(seq -s, 0 $((n - 1)))" ] ||
      why+="lines not in rank order; "
    end
  fi
  if begin "unit/bootstrap-tsan/$n"; then
    need unit/test_bootstrap_tsan
    run "$B/unit/test_bootstrap_tsan" $n
    want_status 0
    # (ThreadSanitizer reports on stderr.)
    ! grep -q "ThreadSanitizer" "$f.err" || why+="ThreadSanitizer reported; "
    end
  fi
done
for n in 1 2 3 4; do
  mpi_cases "unit/bootstrap-mpi/$n" || continue
  if begin "unit/bootstrap-mpi/$n"; then
    need unit/test_bootstrap_mpi
    run "${MPIRUN[@]}" -np $n "$B/unit/test_bootstrap_mpi"
    want_status 0
    [ "$(grep '^line from rank' "$f.out" | awk '{print $4}' | paste -sd,)" = "$(seq -s, 0 $((n - 1)))" ] ||
      why+="lines missing or not in rank order; "
    end
  fi
done

