# The shell blocks of the READMEs and docs (tests/checks/doc_blocks.py): every one
# is marked, and those that run without a GPU run, in order, as a reader
# would, in a scratch copy of the tree under the simulation: one case per
# file, docs/FILE. The controls give doc_blocks.py the pages of
# tests/data/docs and want each to fail, and say why.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: fourth (tests/run_tests.sh runs the lanes of a whole run at once)

if ! command -v python3 >/dev/null; then
  skip docs/every-shell-block-marked "python3 not installed"
else
  if begin docs/every-shell-block-marked; then
    run python3 tests/checks/doc_blocks.py --check
    want_status 0
    want_out "0 unmarked, 0 fixed paths in /tmp"
    [ "$status" = 0 ] || why+="$(grep -v '^doc_blocks:' "$f.out" | head -n 3 | tr '\n' ' ')"
    end
  fi
  if begin docs/control/words-about-how-it-was-made-fail; then
    run python3 tests/checks/check_docs.py --users-text tests/data/docs/internal-text.md
    want_status 1
    want_out "internal-text.md:3: a path outside the repository: '../shared/'"
    want_out "internal-text.md:3: a helper script that is not in the repository: '.gpu/'"
    want_out "internal-text.md:4: an issue number: 'Issue 19'"
    want_out "internal-text.md:4: a commit hash: 'commit 125c025'"
    want_out "internal-text.md:5: work history: 'earlier session'"
    want_out "internal-text.md:5: the machines the project was made on: 'the CPU machine'"
    want_out "internal-text.md:6: jargon: say what is computed (the expected output): 'oracle'"
    want_out "internal-text.md:6: jargon: say what the run kept out: 'hermetic'"
    want_out "internal-text.md:6: 'the driver' reads as NVIDIA's"
    want_out "internal-text.md:6: 'CI': name what runs (.ci/run): 'CI'"
    want_out "internal-text.md:7: a result of the suite typed without the record it comes from"
    end
  fi
  if begin docs/control/a-fixed-tmp-path-fails; then
    run python3 tests/checks/doc_blocks.py --check tests/data/docs/fixed-tmp.md
    want_status 1
    want_out "tests/data/docs/fixed-tmp.md:5: a fixed path in /tmp, in every other user's way on a shared machine"
    end
  fi
  if begin docs/control/a-link-out-of-a-copied-lesson-without-its-place-fails; then
    run python3 tests/checks/check_docs.py --links-as 01_allreduce/c/README.md tests/data/docs/copied-lesson-link.md
    want_status 1
    want_out "01_allreduce/c/README.md: the link [troubleshooting page](../../docs/troubleshooting.md) leaves what is copied with the lesson: write it [docs/troubleshooting.md](../../docs/troubleshooting.md)"
    [ "$(wc -l <"$f.out")" = 1 ] || why+="not the one problem wanted: $(wc -l <"$f.out") lines; "
    end
  fi
  if begin docs/control/a-page-without-where-it-was-run-fails; then
    run python3 tests/checks/check_docs.py --where-run tests/data/docs/internal-text.md
    want_status 1
    want_out "tests/data/docs/internal-text.md: no paragraph '**Where this was run.** ...'"
    end
  fi
  if begin docs/control/an-unmarked-block-fails; then
    run python3 tests/checks/doc_blocks.py --check tests/data/docs/unmarked.md
    want_status 1
    want_out "tests/data/docs/unmarked.md:3: shell block without a mark"
    end
  fi

  # A block that needs what this suite cannot give (a GPU, a cluster, a
  # registry) is counted as a skip, named by page and line, with its mark.
  while IFS=$'\t' read -r where what; do
    [ -n "$where" ] && skip "docs/needs/$where" "$what: not run as a docs block"
  done < <(python3 tests/checks/doc_blocks.py --needs)

  # One case per page: a page's blocks run in one shell, a build of one
  # block is what the next finds. A doc block that starts the suite runs
  # one case of it (doc_blocks.py, NESTED_FILTER).
  for doc in $(python3 tests/checks/doc_blocks.py --files); do
    lacking="" # (a listing names the case either way: no need to ask)
    [ -n "$LIST" ] || lacking=$(DOC_BLOCKS_NO_MPI=$([ $HAVE_MPI = 0 ] && echo 1) python3 tests/checks/doc_blocks.py --missing "$doc")
    if [ -n "$lacking" ]; then
      if [ -n "$MPI_CHECK" ] && [ $HAVE_MPI = 0 ] && [ "$lacking" = mpirun ]; then
        skip "docs/blocks/$doc" "its blocks use mpirun: $NO_MPI"
      else
        skip "docs/blocks/$doc" "its blocks use $lacking, not installed here"
      fi
      continue
    fi
    if begin "docs/blocks/$doc"; then
      need programs-sim-pthread
      TIMEOUT=300 run python3 tests/checks/doc_blocks.py --run "$doc" --time-limit 280
      want_status 0
      want_out "doc_blocks: every block ran"
      [ "$status" = 0 ] || why+="$(grep '^doc_blocks: ' "$f.out" | tail -n 1) "
      end
    fi
  done

  # The simulated samples (tests/checks/doc_samples.py): a block marked
  # "<!-- simulated output of: COMMAND -->" shows lines COMMAND prints.
  while IFS=$'\t' read -r where command; do
    [ -n "$where" ] || continue
    if [ $HAVE_MPI = 0 ] && [[ "$command" == *--mpi* ]]; then
      skip "docs/samples/$where" "its command uses MPI: $NO_MPI"
      continue
    fi
    if begin "docs/samples/$where"; then
      need programs-sim-pthread
      run python3 tests/checks/doc_samples.py --check "$where"
      want_status 0
      want_out "printed, in order"
      [ "$status" = 0 ] || why+="$(grep '^doc_samples: ' "$f.out" | head -n 1) "
      end
    fi
  done < <(python3 tests/checks/doc_samples.py --list)

  # The controls: what the docs cases must catch.
  if begin docs/control/the-old-run-block-fails-in-order; then
    need programs-sim-pthread
    run python3 tests/checks/doc_blocks.py --run tests/data/docs/run-out-of-order.md
    want_status 1
    want_out "doc_blocks: tests/data/docs/run-out-of-order.md:6: exit status 127"
    want_out "./allgather_ce: No such file or directory"
    no_out "every block ran"
    end
  fi
  if begin docs/control/a-transcript-that-differs-fails; then
    need programs-sim-pthread
    run python3 tests/checks/doc_blocks.py --run tests/data/docs/output-differs.md
    want_status 1
    want_out "doc_blocks: tests/data/docs/output-differs.md:5: the output differs from the block"
    want_out "+what the command prints"
    end
  fi
  if begin docs/control/a-sample-printed-out-of-order-fails; then
    run python3 tests/checks/doc_samples.py --check tests/data/docs/sample-out-of-order.md:3
    want_status 1
    want_out "did not print, in order: rank 0: took 9 ms"
    end
  fi
  if begin docs/control/a-sample-with-other-durations-and-more-lines-passes; then
    run python3 tests/checks/doc_samples.py --check tests/data/docs/sample-in-order.md:3
    want_status 0
    want_out "the 2 lines of the sample printed, in order"
    end
  fi
  if begin docs/control/a-command-that-never-returns-is-ended; then
    need programs-sim-pthread
    run python3 tests/checks/doc_blocks.py --run tests/data/docs/never-returns.md --time-limit 3
    want_status 1
    want_out "before"
    want_err "doc_blocks: tests/data/docs/never-returns.md:6: sleep 600: had not finished after 3 s"
    no_out "never reached"
    end
  fi
fi
