# Docs against code, the suite itself, static analysis.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------- the docs match the programs
if command -v python3 >/dev/null; then
  if begin checks/readmes-match-code; then
    need programs-sim-pthread
    [ -z "$LSA_MISSING" ] && need lsa-programs fast-programs
    run python3 tests/checks/check_docs.py
    want_status 0
    [ "$status" = 0 ] || why+="$(grep -v '^check_docs:' "$f.out" | head -n 3 | tr '\n' ' ')"
    end
  fi
else
  skip checks/readmes-match-code "python3 not installed"
fi

# ------------------------------------------- the suite itself
# every_case LISTFILE: every case's name and suite file (a whole run
# listed them beside its build: run_tests.sh).
every_case() {
  if [ -z "$FILTER" ] && [ -z "$ONLY" ] && [ -s "$LOG/case-list.txt" ]; then
    cp "$LOG/case-list.txt" "$1"
  else
    TEST_SUITE= TEST_FILTER= TEST_LIST=files bash tests/run_tests.sh >"$1"
  fi
}
if begin checks/case-names-unique; then
  every_case "$f.list"
  run cut -f1 "$f.list"
  want_status 0
  dups=$(sort "$f.out" | uniq -d | head -n 3 | tr '\n' ' ')
  [ -z "$dups" ] || why+="case names used twice: $dups; "
  [ "$(wc -l <"$f.out")" -gt 100 ] || why+="TEST_LIST=1 listed only $(wc -l <"$f.out") cases; "
  end
fi

# A case's name leads to its file: its first component is its suite's
# subject (tests/suites/NN-SUBJECT.sh), and its first two components are
# written in that file (in the line that makes it, or in the list of its
# families at the top), so `grep -rn SUBJECT/TOPIC tests/` finds it.
# names_leading_nowhere LISTFILE: the lines (NAME, FILE) that break this.
names_leading_nowhere() {
  local name file subject rest prefix seen=" "
  while IFS=$'\t' read -r name file; do
    subject=${file##*/} subject=${subject#[0-9][0-9]-} subject=${subject%.sh}
    rest=${name#*/} prefix=${name%%/*}/${rest%%/*}
    if [ "${name%%/*}" != "$subject" ]; then
      echo "$name: its first component is not '$subject', the subject of $file"
    elif [[ $seen != *" $prefix "* ]]; then
      grep -qF -- "$prefix" "$file" || echo "$name: '$prefix' is written nowhere in $file"
      seen+="$prefix "
    fi
  done <"$1"
}
if begin checks/case-names-lead-to-their-file; then
  every_case "$f.list"
  run true
  names_leading_nowhere "$f.list" >"$f.out"
  want_status 0
  [ ! -s "$f.out" ] || why+="$(head -n 3 "$f.out" | tr '\n' ' ')"
  end
fi
if begin checks/case-names-lead-to-their-file-control; then
  printf '%s\t%s\n' sim/sim-pthread/allreduce_sm-2 tests/suites/40-sim.sh \
    sim/no-such-family/allreduce_sm-2 tests/suites/40-sim.sh options/help/allreduce_sm tests/suites/40-sim.sh >"$f.list"
  run true
  names_leading_nowhere "$f.list" >"$f.out"
  want_out "sim/no-such-family/allreduce_sm-2: 'sim/no-such-family' is written nowhere in tests/suites/40-sim.sh"
  want_out "options/help/allreduce_sm: its first component is not 'sim', the subject of tests/suites/40-sim.sh"
  [ "$(wc -l <"$f.out")" = 2 ] || why+="$(wc -l <"$f.out") lines, not the 2 planted; "
  end
fi

# No file of common/, instruments/, tools/ or tests/ is over 350 lines,
# unless one of its first 3 lines gives the reason ("Over 350 lines: ...").
# Recorded data (tests/data/, .tsv, .txt, .csv) is not code. The control:
# a file of 351 lines without a reason is named.
long_files() { # FILE...: the ones over 350 lines without their reason
  local p
  for p in "$@"; do
    [ "$(wc -l <"$p")" -le 350 ] || head -n 3 "$p" | grep -q "Over 350 lines: " || echo "$p: $(wc -l <"$p") lines"
  done
}
if begin checks/files-within-350-lines; then
  run true
  long_files $(tracked_files common instruments tools tests | grep -vE '^tests/data/|\.(tsv|txt|csv|png)$') >"$f.out"
  [ ! -s "$f.out" ] || why+="over 350 lines, without a reason at the top: $(tr '\n' ' ' <"$f.out")"
  end
fi
if begin checks/files-within-350-lines-control; then
  run true
  seq 351 >"$f.long" && { echo "Over 350 lines: planted"; seq 351; } >"$f.long-with-reason"
  long_files "$f.long" "$f.long-with-reason" >"$f.out"
  [ "$(cat "$f.out")" = "$f.long: 351 lines" ] || why+="found '$(cat "$f.out")', wanted only $f.long; "
  end
fi

# tests/README.md's file map names every file under tests/ (tests/data/
# as one line). missing_from_map README FILES...: the files not named.
# The control: a file that is not in the map is found.
missing_from_map() {
  local map=$1 p
  shift
  for p in "$@"; do
    case $p in tests/data/*) p=tests/data/ ;; tests/kernels/*) p=tests/kernels/ ;; *__pycache__*) continue ;; esac
    grep -qF -- "$p " "$map" || echo "$p"
  done
}
if begin checks/file-map-complete; then
  run true
  missing=$(missing_from_map tests/README.md $(tracked_files tests) | sort -u | head -n 5 | tr '\n' ' ')
  [ -z "$missing" ] || why+="tests/README.md's file map lacks: $missing; "
  [ -n "$(missing_from_map tests/README.md tests/suites/98-planted.sh)" ] ||
    why+="the check misses a file that is not in the map (control); "
  end
fi

# The mutants of `make test-mutants` stay current: each one's line occurs
# once in its file (a refactor that moves a line must move its mutant).
# The control: a list whose line occurs nowhere must be refused.
if begin checks/mutants-lines-current; then
  run bash tests/mutants.sh --lines
  want_status 0
  [ "$status" = 0 ] || why+="$(grep -v 'stale$' "$f.out" | head -n 3 | tr '\n' ' ')"
  end
fi
if begin checks/mutants-lines-current-control; then
  sed 's/^from: .*cudaStreamSynchronize(stream));$/from: no such line/' \
    tests/mutants/mutants.txt >"$f.list"
  run bash tests/mutants.sh --lines "$f.list"
  want_status 1
  want_out "its line occurs 0 times in 01_allreduce/c/main.c: no such line"
  end
fi

# The suite owns its environment (tests/lib/environment.sh): a small
# filtered run under a hostile environment gives the verdicts of a clean
# one. The control runs the same with TEST_KEEP_ENV=1 and wants exactly the
# cases these variables break to fail, which shows that they are hostile.
HOSTILE=(NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=3 NCCL_CTA_POLICY=0 NCCL_WIN_ENABLE=0 SIM_DEVICES=1 NCCL_DEBUG=INFO
  CUDA_LAUNCH_BLOCKING=1 OMPI_MCA_orte_default_hostfile=/nonexistent/hostfile OMPI_COMM_WORLD_SIZE=5)
HOSTILE_CASES='^(fault/(pthread|mpi)/[a-z_]+-more-ranks-than-gpus|rules/violation/one-rank-per-device|sim/sim-(pthread|mpi)/[a-z_]+-2|options/help/[a-z_]+)$'
HOSTILE_BROKEN='^not ok [0-9]+ - (fault/pthread/[a-z_]+-more-ranks-than-gpus|sim/sim-(pthread|mpi)/[a-z_]+-2):'
if begin checks/hermetic-hostile-environment; then
  need programs-sim-pthread $([ $HAVE_MPI = 1 ] && echo programs-sim-mpi) sim-pthread/rules
  run env "${HOSTILE[@]}" TEST_LOGS="$LOG/hermetic" TEST_FILTER="$HOSTILE_CASES" bash tests/run_tests.sh
  want_status 0
  want_out "# environment: cleared "
  grep -qE '^[1-9][0-9]* passed, 0 failed' "$f.out" || why+="$(grep -E '^not ok' "$f.out" | head -n 3 | cut -c1-160 | tr '\n' ' ')"
  end
fi
if begin checks/hermetic-control-keeps-the-environment; then
  need programs-sim-pthread $([ $HAVE_MPI = 1 ] && echo programs-sim-mpi) sim-pthread/rules
  run env "${HOSTILE[@]}" TEST_KEEP_ENV=1 TEST_LOGS="$LOG/hermetic-control" TEST_FILTER="$HOSTILE_CASES" bash tests/run_tests.sh
  want_failure
  no_out "# environment: cleared "
  broken=$(grep -cE "$HOSTILE_BROKEN" "$f.out")
  # the 2-rank pthread runs of both programs (NTHREADS=3, one GPU) and
  # both pthread more-ranks-than-gpus cases; the MPI cases are skipped there
  # (the hostfile keeps mpirun from starting)
  [ "$broken" -ge 4 ] || why+="only $broken of the 4 cases these variables break failed; "
  end
fi

# --------------------------------------------- no case can hang the run
# tests/lib/guard.sh: a case waiting outside `run` (a FIFO's reader, then
# `wait`) is ended at TEST_CASE_LIMIT and fails, naming what it still ran,
# and the run goes on; past TEST_RUN_LIMIT the whole run ends, naming it.
if begin checks/a-case-waiting-outside-run-is-ended; then
  run env TEST_FILTER= TEST_CASE_LIMIT=1 TEST_LOGS="$LOG/guard-case" \
    TEST_SUITE=tests/data/suites/waits-outside-run.sh bash tests/run_tests.sh
  want_status 1
  grep -qE "^not ok 1 - control/waits-outside-run: ended after [0-9]+ s \(TEST_CASE_LIMIT=1\): it was still running: [0-9]+ cat $LOG/guard-case/control_waits-outside-run.fifo" "$f.out" ||
    why+="the waiting case was not ended, naming its reader; "
  want_out "ok 2 - control/the-next-case-runs"
  want_out "1 passed, 1 failed, 0 skipped"
  end
fi
# The case's reader that left it (its parent subshell ended) is ended with
# it: the guard ends what carries the case's mark, not only what is under
# its shell (once such a reader outlived its case for an hour).
if begin checks/a-case-ended-at-its-limit-loses-its-reader; then
  run env TEST_FILTER= TEST_CASE_LIMIT=1 TEST_LOGS="$LOG/guard-reader" \
    TEST_SUITE=tests/data/suites/reader-leaves-the-case.sh bash tests/run_tests.sh
  want_status 1
  fifo=$LOG/guard-reader/control_reader-leaves-the-case.fifo
  grep -qE "^not ok 1 - control/reader-leaves-the-case: ended after [0-9]+ s \(TEST_CASE_LIMIT=1\): it was still running: .*[0-9]+ cat $fifo" "$f.out" ||
    why+="the guard did not name the reader that left the case; "
  left=$(pgrep -x -f "cat $fifo")
  if [ -n "$left" ]; then
    why+="its reader (pid $left: cat $fifo) still runs after the case was ended; "
    kill $left
  fi
  end
fi
if begin checks/a-run-past-its-limit-is-ended; then
  run env TEST_FILTER= TEST_RUN_LIMIT=1 TEST_CASE_LIMIT=600 TEST_LOGS="$LOG/guard-run" \
    TEST_SUITE=tests/data/suites/waits-outside-run.sh bash tests/run_tests.sh
  want_failure
  want_err "run_tests.sh: the whole run passed its limit of 1 s (TEST_RUN_LIMIT); the cases it was in:"
  grep -qE "^  control/waits-outside-run \(for [0-9]+ s\)$" "$f.err" || why+="the stuck case was not named; "
  no_out "passed, 0 failed"
  # Its reader is gone too, even one the case started after the guard
  # listed the run's processes (the limit comes as the case starts).
  fifo=$LOG/guard-run/control_waits-outside-run.fifo
  left=$(pgrep -x -f "cat $fifo")
  if [ -n "$left" ]; then
    why+="its reader (pid $left: cat $fifo) still runs after the run was ended; "
    kill $left
  fi
  end
fi
if begin checks/a-suite-that-stops-fails-the-run-at-once; then
  t0=$EPOCHSECONDS
  # Through a pipe, as `make test | tee` runs: a guard left behind would
  # hold it open until its TEST_RUN_LIMIT.
  run bash -c 'set -o pipefail; TEST_FILTER= TEST_RUN_LIMIT=120 TEST_LOGS=$1 \
    TEST_SUITE=tests/data/suites/dies-on-an-unset-variable.sh bash tests/run_tests.sh 2>&1 | cat' _ "$LOG/guard-stop"
  want_failure
  want_out "not ok 2 - tests/data/suites/dies-on-an-unset-variable.sh: the suite stopped before its end"
  want_out "1 passed, 1 failed, 0 skipped"
  no_out "control/after-the-error"
  [ $((EPOCHSECONDS - t0)) -lt 60 ] || why+="it took $((EPOCHSECONDS - t0)) s (a guard held the pipe?); "
  end
fi

# --------------------------------------------------- coverage's report
# make test-coverage's lister (tests/checks/coverage_report.py) on a
# hand-made gcovr report of three small sources (tests/data/coverage/):
# each file's lines and branches, and the rule sites and verdict phrases
# whose lines no case ran, as counted by hand from the fixture.
if begin checks/coverage-report-lists-what-no-case-reaches; then
  run python3 tests/checks/coverage_report.py --root tests/data/coverage/tree tests/data/coverage/coverage.json
  want_status 0
  want_out_file tests/data/coverage/expected.txt
  end
fi

# --------------------------------------------------- static analysis
if command -v cppcheck >/dev/null; then
  if begin checks/cppcheck; then
    run cppcheck --quiet --error-exitcode=1 --enable=warning,style,performance,portability \
      --std=c11 --inline-suppr -D__GNUC__ "-D_Noreturn=__attribute__((noreturn))" -DNCCL_VERSION_CODE=22809 "-DNCCL_VERSION(X,Y,Z)=((X)*10000+(Y)*100+(Z))" \
      -I common/include -I tests/sim/include common 01_allreduce 02_allgather tests/sim tests/unit tests/rules tools
    want_status 0
    end
  fi
else
  skip checks/cppcheck "cppcheck not installed (Debian: apt-get install cppcheck)"
fi

