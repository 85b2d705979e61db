# --bench's output: the CSV (a file, a FIFO, stdout, a path that cannot be
# written) and the table when stdout goes away.
# Cases: bench-output/sim-pthread/PROGRAM-csv-... and -stdout-...
# (60-bench.sh: the bench itself).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: third (tests/run_tests.sh runs the lanes of a whole run at once)

# through_fifo SIM_RUN_ARGS...: sim_run with the program's --csv going to the
# FIFO $f.fifo, which a reader copies into $f.csv. The reader waits at most
# TEST_TIMEOUT s, and is let go as soon as the program ends: a program that
# exits before it opens the FIFO (say, refusing its options) leaves a reader
# blocked in its open for ever.
through_fifo() {
  local reader started=$EPOCHSECONDS
  rm -f "$f.fifo" "$f.csv" && mkfifo "$f.fifo"
  timeout "$TIMEOUT" cat "$f.fifo" >"$f.csv" &
  reader=$!
  sleep 0.2 # the reader opens the FIFO
  sim_run "$@"
  # (a read-write open never blocks: a reader still in its open gets a
  # writer, and then the end of the data)
  : <>"$f.fifo"
  wait "$reader"
  [ $? = 124 ] && why+="the FIFO's reader still waited after ${TIMEOUT} s; "
  [ -s "$f.csv" ] || why+="nothing came through the FIFO: the program (exit status $status) never wrote to it; "
  [ $((EPOCHSECONDS - started)) -le 20 ] || why+="the FIFO took $((EPOCHSECONDS - started)) s; "
  rm -f "$f.fifo"
}

for p in $PROGRAMS; do
  if begin "bench-output/sim-pthread/$p-csv-write-fails"; then
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2 --csv /dev/full
    want_status 1
    want_err "writing --csv /dev/full failed"
    no_violation
    end
  fi
  if begin "bench-output/sim-pthread/$p-csv-long-path-unwritable"; then
    long=/nonexistent$(for i in $(seq 12); do printf '/%0100d' $i; done)/x.csv # 1.2 KB
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K --csv "$long"
    want_status 1
    want_err "x.csv: No such file or directory"
    end
  fi
  if begin "bench-output/sim-pthread/$p-csv-unwritable"; then
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K --csv /nonexistent-dir/x.csv
    want_status 1
    want_err "cannot write --csv /nonexistent-dir/x.csv"
    no_violation
    end
  fi
  if begin "bench-output/sim-pthread/$p-csv-fifo-without-reader"; then
    rm -f "$f.fifo" && mkfifo "$f.fifo"
    start=$(date +%s)
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K --csv "$f.fifo"
    want_status 1
    want_err "cannot write --csv $f.fifo: a FIFO that no process has open for reading"
    [ $(($(date +%s) - start)) -le 5 ] || why+="took $(($(date +%s) - start)) s; "
    rm -f "$f.fifo"
    end
  fi
  if begin "bench-output/sim-pthread/$p-csv-fifo-with-reader"; then
    through_fifo sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 1 --csv "$f.fifo"
    want_status 0
    [ "$(head -c 8 "$f.csv")" = program, ] || why+="the reader got no CSV heading; "
    [ "$(tail -n +2 "$f.csv" | grep -vc "^$p,2,")" = 0 ] && [ "$(wc -l <"$f.csv")" -ge 3 ] ||
      why+="the reader did not get the heading and one row per mode; "
    rm -f "$f.fifo"
    end
  fi
  # The control: a program that exits before it opens the FIFO (its options
  # refused) fails the case in seconds, naming it, instead of hanging it.
  if begin "bench-output/sim-pthread/$p-csv-fifo-control-program-exits-before-opening-it"; then
    through_fifo sim-pthread $p 2 --bench -b 8K -e 4K --csv "$f.fifo"
    caught=$why why=""
    want_status 2
    [[ $caught == *"nothing came through the FIFO: the program (exit status 2) never wrote to it"* ]] ||
      why+="the early exit was not caught: '$caught'; "
    [[ $caught == *"took"* || $caught == *"still waited"* ]] && why+="not in seconds: $caught; "
    end
  fi
  # The reader goes away: the program must not die of SIGPIPE (exit 141,
  # no word) but say that writing failed, exit 1.
  if begin "bench-output/sim-pthread/$p-csv-fifo-reader-goes-away"; then
    need programs-sim-pthread
    rm -f "$f.fifo" && mkfifo "$f.fifo"
    # The reader leaves as soon as the program has the FIFO open.
    SIM_DIR=$TMPDIR NTHREADS=2 run python3 tests/hooks/fifo_reader_leaves.py "$f.fifo" \
      "$B/sim-pthread/$p" --bench -b 4K -e 16M -w 1 -i 2 --csv "$f.fifo"
    want_status 1
    want_err "writing --csv $f.fifo failed: Broken pipe"
    rm -f "$f.fifo"
    end
  fi
  if begin "bench-output/sim-pthread/$p-stdout-reader-goes-away"; then
    need programs-sim-pthread
    # stdout a pipe whose reader has gone: the status goes to stderr.
    SIM_DIR=$TMPDIR NTHREADS=2 run bash -c '{ sleep 0.3; "$0" -n 64; echo "status $?" >&2; } | true' "$B/sim-pthread/$p"
    want_err "$p: writing to standard output failed: Broken pipe"
    want_err "status 1"
    end
  fi
  # A closed stdout: refused at start, before the CSV file could take
  # descriptor 1 and get the table.
  if begin "bench-output/sim-pthread/$p-stdout-closed-with-csv"; then
    rm -f "$f.csv"
    need programs-sim-pthread
    SIM_DIR=$TMPDIR NTHREADS=2 run bash -c '"$0" --bench -b 4K -e 4K -w 1 -i 1 --csv "$1" >&-' "$B/sim-pthread/$p" "$f.csv"
    want_status 1
    want_err "$p: standard output is closed: nothing this program prints could be read"
    [ ! -s "$f.csv" ] || why+="the CSV file got $(wc -l <"$f.csv") lines; "
    end
  fi
  # A program name with a comma, a double and a single quote: the CSV
  # quotes it (RFC 4180) and every row keeps its columns.
  if begin "bench-output/sim-pthread/$p-csv-quotes-text"; then
    need programs-sim-pthread
    odd="$TMPDIR/a,b\"c'd"
    ln -sf "$B/sim-pthread/$p" "$odd"
    SIM_DIR=$TMPDIR NTHREADS=2 run "$odd" --bench -b 4K -e 4K -w 1 -i 1 --csv "$f.csv"
    want_status 0
    python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
bad = [r for r in rows if len(r) != len(rows[0])]
assert not bad and len(rows) > 1, f"rows with other column counts: {bad}"
assert all(r[0] == "a,b\"c\x27d" for r in rows[1:]), [r[0] for r in rows[1:]]
' "$f.csv" 2>"$f.py" || why+="the CSV does not parse back: $(tail -n 1 "$f.py"); "
    grep -q '^"a,b""c'"'"'d",' "$f.csv" || why+="no RFC 4180 quoted program cell; "
    rm -f "$odd"
    end
  fi
  # A double quote and no comma: quoted all the same (RFC 4180: a field
  # with a double quote is enclosed in double quotes, each one doubled).
  if [ $p = allreduce_sm ] && begin "bench-output/sim-pthread/$p-csv-quotes-a-quote-without-comma"; then
    need programs-sim-pthread
    odd="$TMPDIR/a\"b"
    ln -sf "$B/sim-pthread/$p" "$odd"
    SIM_DIR=$TMPDIR NTHREADS=2 run "$odd" --bench -b 4K -e 4K -w 1 -i 1 --csv "$f.csv"
    want_status 0
    rows=$(tail -n +2 "$f.csv" | wc -l)
    [ "$rows" -ge 1 ] && [ "$(grep -c '^"a""b",' "$f.csv")" = "$rows" ] ||
      why+="not every row's program cell is \"a\"\"b\" (see $f.csv); "
    rm -f "$odd"
    end
  fi
  # An existing file longer than what is written: replaced, none of its
  # rows left after the new ones.
  if [ $p = allreduce_sm ] && begin "bench-output/sim-pthread/$p-csv-over-a-longer-file"; then
    for i in $(seq 500); do echo "old,row,$i"; done >"$f.csv"
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 1 --csv "$f.csv"
    want_status 0
    [ "$(head -n 1 "$f.csv" | cut -d, -f1-3)" = program,ranks,mode ] || why+="the first line is not the heading; "
    [ "$(grep -c '^old,row,' "$f.csv")" = 0 ] || why+="$(grep -c '^old,row,' "$f.csv") old rows left in $f.csv; "
    [ "$(tail -n +2 "$f.csv" | grep -vc "^$p,2,")" = 0 ] || why+="lines that are not this run's rows in $f.csv; "
    end
  fi
  if begin "bench-output/sim-pthread/$p-csv-to-stdout"; then
    # stdout goes to a file: /dev/stdout must not write over the table.
    sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 1 --csv /dev/stdout
    want_status 0
    [ "$(head -n 1 "$f.out")" = "Creating 2 threads for 8 devices" ] || why+="the first line was overwritten; "
    want_out "program,ranks,mode,size_bytes"
    want_out "Benchmark results verified correctly"
    [ "$(grep -c "^$p,2," "$f.out")" -ge 1 ] || why+="no CSV rows on stdout; "
    end
  fi
done
