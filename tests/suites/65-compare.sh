# tools/compare_nccl_tests.py, this bench beside nccl-tests: on recorded
# stand-ins, with a stand-in nccl-tests that hangs, its usage and help.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: fourth (tests/run_tests.sh runs the lanes of a whole run at once)

# tools/compare_nccl_tests.py on recorded stand-ins (tests/data/compare):
# the verdicts the invented numbers call for, the overlap rows ignored.
if begin "compare/recorded"; then
  d=tests/data/compare
  run python3 tools/compare_nccl_tests.py ./allgather_ce --ours $d/ours-1.csv --ours $d/ours-2.csv \
    $(for m in ce sym plain; do for k in 1 2; do echo "--theirs $m:$d/$m-$k.txt"; done; done)
  want_status 0
  want_out "allgather_ce, 1 rank(s), mode ce <-> nccl-tests -R 2 -x 2"
  want_out "     1048576 L2       8.40            8.40        1.00x    2.4%  the same within the noise"
  want_out "    67108864        201.00          150.50        1.34x    1.0%  this bench 33.6% slower"
  want_out "    67108864         33.20           40.10        0.83x    1.2%  this bench 17.2% faster"
  want_out "L2: this bench marks the size as fitting in the GPU's L2 cache (its times are the cache's)"
  want_out "NCCL loaded: nccl-tests 2.30.7"
  ! grep -q overlap "$f.out" || why+="the overlap rows were read as a mode; "
  end
fi
# --graph: this bench's graph times against nccl-tests -G, as MODE-graph.
# Expected, by hand from the invented numbers: medians 6.05 (6.000, 6.100)
# and 6.10 (6.05, 6.15), ratio 0.99, noise max(0.1 / 6.05, 0.1 / 6.10) =
# 1.7%: the same within the noise.
if begin "compare/graph-recorded"; then
  d=tests/data/compare
  run python3 tools/compare_nccl_tests.py ./allreduce_sm --graph 10 --ours $d/ours-graph-1.csv \
    --ours $d/ours-graph-2.csv --theirs sym-graph:$d/sym-graph-1.txt --theirs sym-graph:$d/sym-graph-2.txt
  want_status 0
  want_out "allreduce_sm, 1 rank(s), mode sym-graph <-> nccl-tests -R 2 -G 10"
  want_out "     1048576 L2       6.05            6.10        0.99x    1.7%  the same within the noise"
  want_out "allreduce_sm, 1 rank(s), mode plain-graph <-> nccl-tests -R 0 -G 10"
  run python3 tools/compare_nccl_tests.py ./allreduce_sm --graph 0 --ours $d/ours-graph-1.csv
  want_status 2
  want_err "--graph takes a whole number from 1 (nccl-tests' -G), not '0'"
  end
fi
# Its run path, with a stand-in nccl-tests whose copy-engine run hangs: the
# simulated program and the other modes are compared, the hang is said.
if begin "compare/run-one-hangs"; then
  need programs-sim-pthread
  fake=$TMPDIR/fake-nccl-tests && mkdir -p "$fake/build"
  cat >"$fake/build/all_gather_perf" <<FAKE
#!/bin/sh
case " \$* " in
  *" -x 2 "*) head -n 6 "$ROOT/tests/data/compare/ce-1.txt"; sleep 30 ;;
  *" -R 2 "*) cat "$ROOT/tests/data/compare/sym-1.txt" ;;
  *) cat "$ROOT/tests/data/compare/plain-1.txt" ;;
esac
FAKE
  chmod +x "$fake/build/all_gather_perf"
  SIM_DIR=$TMPDIR NCCL_TESTS_HOME=$fake run python3 tools/compare_nccl_tests.py "$B/sim-pthread/allgather_ce" \
    -b 1M -e 1M -w 1 -n 2 --repeat 2 --timeout 8 --keep "$TMPDIR/kept"
  want_status 0
  want_out "mode ce <-> nccl-tests -R 2 -x 2"
  want_out "  nccl-tests: 2 run(s) without a result: hung: ran past --timeout 8 s, killed after its 1048576 B row; not run again after it hung"
  want_out "NCCL loaded: nccl-tests 2.30.7; this bench $(sed -n 's/^# NCCL \(.*\) loaded.*/\1/p' "$TMPDIR/kept/allgather_ce-1.txt")"
  for k in allgather_ce-1 allgather_ce-2 all_gather_perf-ce-1 all_gather_perf-sym-2 all_gather_perf-plain-2; do
    [ -s "$TMPDIR/kept/$k.txt" ] || why+="--keep left no $k.txt; "
  done
  [ ! -e "$TMPDIR/kept/all_gather_perf-ce-2.txt" ] || why+="the hung mode ran again; "
  want_err "all_gather_perf -b 1M -e 1M -f 8 -w 1 -n 2 -t 1 -g 1 -R 2 -x 2: hung: ran past --timeout 8 s, killed after its 1048576 B row"
  [ "$(grep -cE '^     1048576 .* [0-9.]+%  (the same within the noise|this bench)' "$f.out")" = 2 ] ||
    why+="wanted the 1 MiB row of sym and plain, with a noise figure (two runs each); "
  end
fi
# allreduce_fast's stages all pair with nccl-tests' vectorized LSA kernel
# (-D 2), which runs once per repeat for all of them; this bench runs with
# --cold, as nccl-tests moves its buffers.
if fast_case "compare/run-fast-stages-share-one-d2-run"; then
  fake=$TMPDIR/fake-nccl-tests && mkdir -p "$fake/build"
  cat >"$fake/build/all_reduce_perf" <<FAKE
#!/bin/sh
echo "\$*" >>"$TMPDIR/calls"
sed 's/^     1048576        262144 /       65536         16384 /' "$ROOT/tests/data/compare/sym-1.txt"
FAKE
  chmod +x "$fake/build/all_reduce_perf"
  rm -f "$TMPDIR/calls"
  SIM_DIR=$TMPDIR SIM_DEVICES=1 NCCL_TESTS_HOME=$fake run python3 tools/compare_nccl_tests.py \
    "$B/fast-pthread/allreduce_fast" -b 64K -e 64K -w 1 -n 2 --repeat 1 --timeout 60 --keep "$TMPDIR/kept"
  want_status 0
  for m in vec grid 1shot 2shot fast; do want_out "mode $m <-> nccl-tests -R 2 -D 2"; done
  want_out "mode sym <-> nccl-tests -R 2"
  [ "$(grep -cE '^ +65536 ' "$f.out")" = 7 ] || why+="wanted the 64 KiB row of each of the 7 modes; "
  [ "$(grep -c -- '-R 2 -D 2' "$TMPDIR/calls")" = 1 ] || why+="nccl-tests -D 2 ran $(grep -c -- '-R 2 -D 2' "$TMPDIR/calls") times, wanted once; "
  [ "$(wc -l <"$TMPDIR/calls")" = 3 ] || why+="nccl-tests ran $(wc -l <"$TMPDIR/calls") times, wanted 3 (-D 2, -R 2, -R 0); "
  grep -q "^# cache: cold" "$TMPDIR/kept/allreduce_fast-1.txt" || why+="this bench did not run with --cold; "
  end
fi
if begin "compare/usage"; then
  NCCL_TESTS_HOME= run python3 tools/compare_nccl_tests.py ./allgather_ce
  want_status 2
  want_err "compare_nccl_tests: set NCCL_TESTS_HOME to an nccl-tests build"
  end
fi

# The comparison's own help.
if begin compare/help; then
  run python3 tools/compare_nccl_tests.py --help
  want_status 0
  want_out "NCCL_TESTS_HOME=dir tools/compare_nccl_tests.py PROGRAM [options]"
  end
fi
