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
# The simulated GPU's time: events read a clock that only work moves, and a
# collective waits for its slowest rank (tests/unit/test_sim_clock.c).
if begin unit/simulation-time; then
  need unit/test_sim_clock
  SIM_DIR=$TMPDIR run "$B/unit/test_sim_clock"
  want_status 0
  want_out "test_sim_clock: all passed"
  no_violation
  end
fi
if begin unit/simulation-state-as-nccl; then
  need unit/test_sim_state
  SIM_DIR=$TMPDIR run "$B/unit/test_sim_state"
  want_status 0
  want_out "test_sim_state: all passed"
  no_violation
  end
fi
# Every host call of NCCL's API, in each nccl.h the suite has (the
# machine's, and the newest wheel's), is the simulation's or one of
# tests/sim/unsimulated.c's, which say "not simulated here: NAME": a
# program never meets a link error or an undefined symbol instead.
if begin unit/simulation-has-every-nccl-call; then
  need sim-pthread/sim.o
  defined=" $(nm --defined-only "$B/sim-pthread/sim.o" | awk '$2 ~ /^[TW]$/ { print $3 }' | tr '\n' ' ') "
  headers=0
  for h in "$SUITE_NCCL_H" "${LSA_NCCL_HOME:-/nonexistent}/include/nccl.h"; do
    [ -f "$h" ] || continue
    headers=$((headers + 1))
    for call in $(grep -oE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]p?nccl[A-Z][A-Za-z0-9]*\(' "$h" |
      grep -oE 'p?nccl[A-Z][A-Za-z0-9]*\($' | tr -d '(' | sort -u); do
      [[ $defined == *" $call "* ]] || why+="$call ($h) is neither simulated nor said to be unsimulated; "
    done
  done
  [ "$headers" -gt 0 ] || why+="no nccl.h found; "
  end
fi
# The same for CUDA's runtime API (the machine's cuda_runtime_api.h, with
# the _ptds and _ptsz entry points of per-thread default streams):
# tests/sim/unsimulated_cuda.c says "not simulated here: NAME".
CUDA_API_H=${CUDA_HOME:-/usr/local/cuda}/include/cuda_runtime_api.h
if [ ! -f "$CUDA_API_H" ]; then
  skip unit/simulation-has-every-cuda-call "no $CUDA_API_H"
elif begin unit/simulation-has-every-cuda-call; then
  need sim-pthread/sim.o
  defined=" $(nm --defined-only "$B/sim-pthread/sim.o" | awk '$2 ~ /^[TW]$/ { print $3 }' | tr '\n' ' ') "
  calls=$(grep -oE 'CUDARTAPI[[:space:]]+cuda[A-Za-z0-9_]+\(' "$CUDA_API_H" | grep -oE 'cuda[A-Za-z0-9_]+')
  calls+=" $(sed -nE 's/^ *#define (cuda[A-Za-z0-9_]+) +__CUDART_API_PTDS\(.*/\1_ptds/p; s/^ *#define (cuda[A-Za-z0-9_]+) +__CUDART_API_PTSZ\(.*/\1_ptsz/p' "$CUDA_API_H")"
  n=0
  for call in $(echo "$calls" | tr ' ' '\n' | sort -u); do
    n=$((n + 1))
    [[ $defined == *" $call "* ]] || why+="$call ($CUDA_API_H) is neither simulated nor said to be unsimulated; "
  done
  [ "$n" -gt 300 ] || why+="only $n calls found in $CUDA_API_H; "
  # A stub says so where it is called, naming the call.
  printf '#include <cuda_runtime_api.h>\nint main(void) { return (int)cudaStreamQuery(0); }\n' >"$f.c"
  cc -I"${CUDA_HOME:-/usr/local/cuda}/include" -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 -o "$f.bin" "$f.c" \
    "$B/sim-pthread/sim.o" -pthread -lm >"$f.build" 2>&1 || why+="a program calling cudaStreamQuery did not link (see $f.build); "
  run "$f.bin"
  want_status 70
  want_err "ncclsim: not simulated here: cudaStreamQuery_ptsz"
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
# Two LSA teams in one communicator take turns each among its own ranks
# (tests/unit/test_lockstep.c).
if begin unit/lockstep-turn-per-team; then
  need unit/test_lockstep
  run "$B/unit/test_lockstep"
  want_status 0
  want_out "test_lockstep: all passed"
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

