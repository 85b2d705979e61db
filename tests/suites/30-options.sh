# The real programs, as users built them: options, and no GPU here.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: fourth (tests/run_tests.sh runs the lanes of a whole run at once)

# --------------------------------- the real programs: options and no GPU
for p in $PROGRAMS; do
  bin=$B/real-pthread/$p
  if begin "options/help/$p"; then
    need real-programs-pthread
    run "$bin" -h; want_status 0; want_out "Usage: $p"; end
  fi
  if begin "options/unknown-option/$p"; then
    need real-programs-pthread
    run "$bin" --bogus; want_status 2; want_err "unknown option '--bogus'"; want_err "$p: run '$p -h' for the options"; end
  fi
  if begin "options/unknown-option-in-a-cluster/$p"; then
    need real-programs-pthread
    run "$bin" -zq; want_status 2; want_err "$p: unknown option '-z'"; want_err "$p: run '$p -h' for the options"; end
  fi
  # A value given to a long option that takes none names that option as
  # typed (getopt gives no letter for it; a raw byte was printed once), an
  # abbreviation included.
  for a in --bench=1 --overlap=1 --graph=no --help=yes --ben=1; do
    if begin "options/value-to/$p-$a"; then
      need real-programs-pthread
      case $a in --help=*) o=--help ;; --graph=*) o=--graph ;; --overlap=*) o=--overlap ;; *) o=--bench ;; esac
      run "$bin" "$a"; want_status 2; want_err "$p: option '$o' takes no value (got '$a')"; end
    fi
  done
  # A prefix of two long options (--count and --csv, the README's option
  # table) is refused as ambiguous, naming both, not taken as either.
  for a in "--c 16" "--c=16"; do
    if begin "options/ambiguous-prefix/$p-${a/ /-}"; then
      need real-programs-pthread
      run "$bin" $a; want_status 2
      want_err "$p: option '--c' is ambiguous: it could be --count or --csv"; end
    fi
  done
  # MPI parses the command line twice on a rank whose mistake rank 0 does
  # not share (quietly first): the second parse must start afresh, not
  # inside the cluster the first one stopped in.
  if begin "options/mpi-unknown-option-in-a-cluster/$p" && mpi_cases "$name"; then
    need programs-sim-mpi
    SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np 1 "$B/sim-mpi/$p" -n 16 : -np 1 "$B/sim-mpi/$p" -zq
    want_status 2; want_err "$p: rank 1: unknown option '-z'"; end
  fi
  if begin "options/long-option-value-missing/$p"; then
    need real-programs-pthread
    run "$bin" --bench --csv; want_status 2; want_err "$p: option '--csv' needs a value"; end
  fi
  for v in 0 abc 2x -5 99999999999999999999999; do
    if begin "options/count/$p-$v"; then
      need real-programs-pthread
      run "$bin" -n "$v"; want_status 2; want_err "invalid count '$v'"; end
    fi
  done
  if begin "options/help-to-a-full-disk/$p"; then
    need real-programs-pthread
    run sh -c '"$0" -h >/dev/full' "$bin"
    want_status 1; want_err "$p: writing to standard output failed: No space left on device"; end
  fi
  if begin "options/unexpected-argument/$p"; then
    need real-programs-pthread
    run "$bin" 16; want_status 2; want_err "unexpected argument '16'"; want_err "$p: run '$p -h' for the options"; end
  fi
  # Every mistake on the command line takes one form: a line naming it and
  # what is allowed, then the line that points at -h; never the whole usage.
  if begin "options/one-form-for-every-mistake/$p"; then
    need real-programs-pthread
    for args in "--bogus" "-zq" "16" "-n" "-n 0" "-n 1K" "--timeout x" "--csv out.csv" "--bench=1" \
      "--bench -n 16" "--bench -f 1" "--bench -r 5 -i 4" "--bench -b 2M -e 1M"; do
      # shellcheck disable=SC2086 # the arguments are words
      run "$bin" $args
      want_status 2
      [ "$(wc -l <"$f.err")" = 2 ] || why+="'$args' printed $(wc -l <"$f.err") lines, not 2; "
      [ "$(sed -n 2p "$f.err")" = "$p: run '$p -h' for the options" ] ||
        why+="'$args': the second line is '$(sed -n 2p "$f.err")'; "
      [ ! -s "$f.out" ] || why+="'$args' wrote to stdout; "
    done
    end
  fi
  if begin "options/count-missing/$p"; then
    need real-programs-pthread
    run "$bin" -n; want_status 2; want_err "option '-n' needs a value"; end
  fi
  for v in -1 abc 86401 1.5; do
    if begin "options/timeout/$p-$v"; then
      need real-programs-pthread
      run "$bin" --timeout "$v"; want_status 2; want_err "invalid --timeout '$v': use whole seconds from 0 (never) to 86400"; end
    fi
  done
  for v in 1025 99999999999; do
    if begin "options/NTHREADS/$p=$v"; then
      need real-programs-pthread
      NTHREADS=$v run "$bin"; want_status 2; want_err "invalid NTHREADS='$v': at most 1024 ranks run as threads of one process"; end
    fi
  done
  if begin "options/count-with-bench/$p"; then
    need real-programs-pthread
    run "$bin" --bench -n 16; want_status 2; want_err "option '-n' does not apply to --bench"; end
  fi
  for v in abc 2x 0 -1 "" " 2"; do
    if begin "options/NTHREADS/$p=$v"; then
      need real-programs-pthread
      NTHREADS="$v" run "$bin"
      want_status 2; want_err "invalid NTHREADS='$v'"; want_err "use a whole number from 1 to"
      end
    fi
  done
  # No GPU: this machine, or a GPU machine with every GPU hidden.
  if begin "options/nogpu/$p-pthread"; then
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
  if mpi_cases "options/nogpu/$p-mpi" && begin "options/nogpu/$p-mpi"; then
    need real-programs-mpi
    CUDA_VISIBLE_DEVICES= run "${MPIRUN[@]}" -np 2 "$B/real-mpi/$p"
    want_status 1; want_err "$p: rank 0: no usable GPU: cudaGetDeviceCount failed:"
    [ "$(grep -c 'no usable GPU' "$f.err")" = 1 ] || why+="'no usable GPU' said $(grep -c 'no usable GPU' "$f.err") times, not once; "
    end
  fi
done


# Every numeric option at its edges, from the documented ranges (the usage
# text and README): 0, 1, the maximum, one past it, negative, with a
# suffix, overflowing. A value accepted gets past parsing (the simulated
# program then finds no GPU: exit 1); one refused exits 2 naming it. Each
# line: OPTION VALUE accepted|refused [OTHER OPTIONS].
OPTION_EDGES='-n 0 refused
-n 1 accepted
-n 4611686018427387903 accepted
-n 4611686018427387904 refused
-n -1 refused
-n 1K refused
-n 99999999999999999999 refused
-b 0 refused --bench -e 1G
-b 0K refused --bench -e 1G
-b 1 accepted --bench
-b 1K accepted --bench
-b 1G accepted --bench
-b 2G accepted --bench -e 4G
-b -1 refused --bench
-b 1T refused --bench
-b 1KB refused --bench
-e 0 refused --bench -b 1
-e 18446744073709551615 accepted --bench
-e 18446744073709551616 refused --bench
-e 17179869183G accepted --bench
-e 17179869184G refused --bench
-f 1 refused --bench
-f 2 accepted --bench
-f 1024 accepted --bench
-f 1025 refused --bench
-f -2 refused --bench
-f 4x refused --bench
-w 0 accepted --bench
-w 1000000 accepted --bench
-w 1000001 refused --bench
-w -1 refused --bench
-i 0 refused --bench
-i 1 accepted --bench -r 1
-i 1000000 accepted --bench
-i 1000001 refused --bench
-r 0 refused --bench
-r 1 accepted --bench
-r 1000 accepted --bench -i 1000
-r 1001 refused --bench -i 2000
-r 5 refused --bench -i 4
--timeout 0 accepted
--timeout 00 accepted
--timeout 86400 accepted
--timeout 86401 refused
--timeout -1 refused
--timeout 1s refused'
for p in $PROGRAMS; do
  if begin "options/numeric-options-at-their-edges/$p"; then
    need programs-sim-pthread
    while read -r opt value verdict others; do
      # shellcheck disable=SC2086 # the other options are words
      SIM_DEVICES=0 NTHREADS=1 SIM_DIR=$TMPDIR run "$B/sim-pthread/$p" $others "$opt" "$value"
      if [ $verdict = accepted ]; then
        [ "$status" = 1 ] && grep -q "no usable GPU" "$f.err" ||
          why+="$opt $value ($others): exit $status, wanted it accepted (then: no usable GPU, exit 1); "
      else
        [ "$status" = 2 ] && grep -qE -- "invalid ($opt|count) '$value'|-r [0-9]+ is more than -i|-b [0-9]+ is larger than -e" "$f.err" ||
          why+="$opt $value ($others): exit $status, wanted it refused (exit 2, naming it); "
      fi
    done <<<"$OPTION_EDGES"
    end
  fi
done

# --bench's own options: a bad value, and --csv or --graph without --bench.
for p in $PROGRAMS; do
  for bad in "-b 64K -e 1K:-b 65536 is larger than -e 1024" "-f 1:invalid -f '1'" \
    "-i 0:invalid -i '0'" "-b abc:invalid -b 'abc'" "-e 1Q:invalid -e '1Q'" "-w -1:invalid -w '-1'"; do
    args=${bad%%:*}
    if begin "options/bench/$p ${args}"; then
      need real-programs-pthread
      run "$B/real-pthread/$p" --bench $args
      want_status 2
      want_err "${bad#*:}"
      end
    fi
  done
  if begin "options/bench/$p --csv without --bench"; then
    need real-programs-pthread
    run "$B/real-pthread/$p" --csv x.csv
    want_status 2
    want_err "option '--csv' only works with --bench"
    end
  fi
  if begin "options/bench/$p --graph without --bench"; then
    need real-programs-pthread
    run "$B/real-pthread/$p" --graph
    want_status 2
    want_err "option '--graph' only works with --bench"
    end
  fi
done
