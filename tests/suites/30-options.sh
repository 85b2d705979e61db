# The real programs, as users built them: options, and no GPU here.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).

# --------------------------------- the real programs: options and no GPU
for p in $PROGRAMS; do
  bin=$B/real-pthread/$p
  if begin "options/$p-help"; then
    need real-programs-pthread
    run "$bin" -h; want_status 0; want_out "Usage: $p"; end
  fi
  if begin "options/$p-unknown-option"; then
    need real-programs-pthread
    run "$bin" --bogus; want_status 2; want_err "unknown option '--bogus'"; want_err "Usage: $p"; end
  fi
  if begin "options/$p-unknown-option-in-a-cluster"; then
    need real-programs-pthread
    run "$bin" -zq; want_status 2; want_err "$p: unknown option '-z'"; want_err "Usage: $p"; end
  fi
  for v in 0 abc 2x -5 99999999999999999999999; do
    if begin "options/$p-count-$v"; then
      need real-programs-pthread
      run "$bin" -n "$v"; want_status 2; want_err "invalid count '$v'"; end
    fi
  done
  if begin "options/$p-help-to-a-full-disk"; then
    need real-programs-pthread
    run sh -c '"$0" -h >/dev/full' "$bin"
    want_status 1; want_err "$p: writing to standard output failed: No space left on device"; end
  fi
  if begin "options/$p-unexpected-argument"; then
    need real-programs-pthread
    run "$bin" 16; want_status 2; want_err "unexpected argument '16'"; want_err "Usage: $p"; end
  fi
  if begin "options/$p-count-missing"; then
    need real-programs-pthread
    run "$bin" -n; want_status 2; want_err "option '-n' needs a value"; end
  fi
  for v in -1 abc 86401 1.5; do
    if begin "options/$p-timeout-$v"; then
      need real-programs-pthread
      run "$bin" --timeout "$v"; want_status 2; want_err "invalid --timeout '$v': use whole seconds from 0 (never) to 86400"; end
    fi
  done
  for v in 1025 99999999999; do
    if begin "options/$p-NTHREADS=$v"; then
      need real-programs-pthread
      NTHREADS=$v run "$bin"; want_status 2; want_err "invalid NTHREADS='$v': at most 1024 ranks run as threads of one process"; end
    fi
  done
  if begin "options/$p-count-with-bench"; then
    need real-programs-pthread
    run "$bin" --bench -n 16; want_status 2; want_err "option '-n' does not apply to --bench"; end
  fi
  for v in abc 2x 0 -1 "" " 2"; do
    if begin "options/$p-NTHREADS=$v"; then
      need real-programs-pthread
      NTHREADS="$v" run "$bin"
      want_status 2; want_err "invalid NTHREADS='$v'"; want_err "use a whole number from 1 to"
      end
    fi
  done
  # No GPU: this machine, or a GPU machine with every GPU hidden.
  if begin "nogpu/$p-pthread"; then
    need real-programs-pthread
    CUDA_VISIBLE_DEVICES= run "$bin"
    want_status 1; want_err "$p: no usable GPU: cudaGetDeviceCount failed:"
    [ "$(wc -l <"$f.err")" = 1 ] || why+="more than one line on stderr; "
    # Without a driver (this CPU machine) CUDA's words suggest an upgrade:
    # the message says that no driver may be there at all.
    ! grep -q cudaErrorInsufficientDriver "$f.err" ||
      grep -q "(cudaErrorInsufficientDriver): no NVIDIA driver was found, or it is older than this CUDA runtime" "$f.err" ||
      why+="the insufficient-driver message does not say that no driver may be installed; "
    end
  fi
  if mpi_cases "nogpu/$p-mpi" && begin "nogpu/$p-mpi"; then
    need real-programs-mpi
    CUDA_VISIBLE_DEVICES= run "${MPIRUN[@]}" -np 2 "$B/real-mpi/$p"
    want_status 1; want_err "$p: rank 1: no usable GPU: cudaGetDeviceCount failed:"
    end
  fi
done

