# Docs against code, error-message coverage, static analysis.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).

# ------------------------------------------- the docs match the programs
if command -v python3 >/dev/null; then
  if begin docs/readmes-match-code; then
    need programs-sim-pthread
    run python3 tests/check_docs.py
    want_status 0
    [ "$status" = 0 ] || why+="$(grep -v '^check_docs:' "$f.out" | head -n 3 | tr '\n' ' ')"
    end
  fi
else
  skip docs/readmes-match-code "python3 not installed"
fi

# ------------------------------------------- the suite itself
if begin suite/case-names-unique; then
  run env TEST_FILTER= TEST_LIST=1 bash tests/run_tests.sh
  want_status 0
  dups=$(sort "$f.out" | uniq -d | head -n 3 | tr '\n' ' ')
  [ -z "$dups" ] || why+="case names used twice: $dups; "
  [ "$(wc -l <"$f.out")" -gt 100 ] || why+="TEST_LIST=1 listed only $(wc -l <"$f.out") cases; "
  end
fi

# ------------------------------ every error message has a test case
if [ -n "$FILTER" ]; then
  skip coverage/every-error-message-tested "needs the logs of the whole suite (TEST_FILTER is set)"
elif begin coverage/every-error-message-tested; then
  run python3 tests/check_messages.py "$LOG"
  want_status 0
  [ "$status" = 0 ] || why+="$(grep -v '^check_messages:' "$f.out" | head -n 5 | tr '\n' ' ')"
  end
fi

# --------------------------------------------------- static analysis
if command -v cppcheck >/dev/null; then
  if begin static/cppcheck; then
    run cppcheck --quiet --error-exitcode=1 --enable=warning,style,performance,portability \
      --std=c11 --inline-suppr -D__GNUC__ "-D_Noreturn=__attribute__((noreturn))" -DNCCL_VERSION_CODE=22809 "-DNCCL_VERSION(X,Y,Z)=((X)*10000+(Y)*100+(Z))" \
      -I common/include common 01_allreduce 02_allgather tests/sim tests/unit tests/rules
    want_status 0
    end
  fi
else
  skip static/cppcheck "cppcheck not installed (Debian: apt-get install cppcheck)"
fi

