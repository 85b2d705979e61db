# --bench: the table, the CSV's rows, and the bench's failures.
# Cases: bench/sim-pthread/..., bench/sim-mpi/... and bench/asan-pthread/...
# (the bench on the simulation, threads, MPI, AddressSanitizer),
# bench/sim-pthread/...-graph. (The CSV and stdout: 60-bench-output.sh; the
# plots: 61-plot.sh; beside nccl-tests:
# 65-compare.sh.)
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: third (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------------------------- --bench
nmodes_of() { [ "$1" = allreduce_sm ] && echo 2 || echo 3; }
for variant in sim-pthread sim-mpi asan-pthread; do
  for p in $PROGRAMS; do
    for n in 1 2 4; do
      [ $variant = asan-pthread ] && [ $n != 2 ] && continue
      c="bench/$variant/$p-$n"
      [[ $variant == *mpi ]] && { mpi_cases "$c" || continue; }
      begin "$c" || continue
      sim_run $variant $p $n --bench -b 1K -e 64K -f 4 -w 1 -i 2 --csv "$f.csv" --overlap
      want_status 0
      want_out "Benchmark results verified correctly"
      # 1K to 64K all fit in the simulated 50 MiB L2: no peak is claimed.
      want_out "# peak algbw / busbw: none, every size fits in the L2 cache"
      want_out "# overlap at 65536 B"
      rows=$(grep -cE '^ +[0-9]+ +[0-9]+ ' "$f.out")
      [ "$rows" = 4 ] || why+="$rows table rows, wanted 4 (1K 4K 16K 64K); "
      modes=$(nmodes_of $p)
      lines=$(wc -l <"$f.csv" 2>/dev/null || echo 0)
      [ "$lines" = $((1 + 4 * modes + modes)) ] || why+="CSV has $lines lines, wanted $((1 + 5 * modes)); "
      [ "$(grep -c ',n/a,' "$f.csv" 2>/dev/null)" = $((4 * modes)) ] ||
        why+="engine column is not n/a without CUPTI; "
      # Every derived number against its definition (tests/oracles/bench_oracle.py).
      python3 tests/oracles/bench_oracle.py "$f.csv" --gpus 8 >"$f.oracle" 2>&1 ||
        why+="$(grep -v '^bench_oracle:' "$f.oracle" | head -n 2 | tr '\n' ' '); "
      no_violation
      end
    done
  done
done


for p in $PROGRAMS; do
  if begin "bench/sim-pthread/$p-wrong-result"; then
    SIM_WRONG_RESULT=1 sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2
    want_status 1
    want_out "Benchmark results verification failed"
    want_err "wrong result on at least one rank"
    no_violation
    end
  fi
  # With --graph the replays' results are checked too, and said apart.
  if begin "bench/sim-pthread/$p-graph-wrong-result"; then
    SIM_WRONG_RESULT=1 sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2 --graph
    want_status 1
    want_out "Benchmark results verification failed"
    want_err "at 4096 bytes: wrong result on at least one rank"
    want_err "at 4096 bytes, replayed from a CUDA graph: wrong result on at least one rank"
    no_violation
    end
  fi
  # A replay that runs nothing (and fails nothing) must not pass as
  # verified: the check reads the last replay's result, poisoned before it.
  if begin "bench/sim-pthread/$p-graph-replay-does-nothing"; then
    SIM_REPLAYS_DO_NOTHING=1 sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2 --graph
    want_status 1
    want_out "Benchmark results verification failed"
    want_err "at 4096 bytes, replayed from a CUDA graph: wrong result on at least one rank"
    no_violation
    end
  fi
  if begin "bench/sim-pthread/$p-cublas-fails"; then
    SIM_FAIL=cublasSgemm_v2:1 sim_run sim-pthread $p 2 --bench -b 4K -e 4K -w 1 -i 2 --overlap
    want_status 1
    want_err "rank 1: overlap.c:"
    want_err "cublasSgemm(g->handle"
    want_err "failed: cuBLAS status 13"
    end
  fi
  if begin "bench/sim-pthread/$p-max-below-one-float-per-rank"; then
    sim_run sim-pthread $p 2 --bench -b 1 -e 2
    want_status 2
    want_err "-e 2 is smaller than one float per rank"
    no_violation
    end
  fi
  # --graph: every loop also replayed from a CUDA graph. The simulation runs
  # captured collectives only when the graph is launched (tests/sim), so a
  # graph never launched leaves the poisoned result and fails the check.
  for variant in sim-pthread sim-mpi; do
    c="bench/$variant/$p-graph"
    [[ $variant == *mpi ]] && { mpi_cases "$c" || continue; }
    begin "$c" || continue
    sim_run $variant $p 2 --bench -b 64K -e 256K -f 4 -w 1 -i 6 -r 3 --graph --csv "$f.csv"
    want_status 0
    want_out "Benchmark results verified correctly"
    want_out "# graph(us): the same loops, each one launch of a CUDA graph of its operations"
    grep -q "time(us) spr%  cv% graph(us)" "$f.out" || why+="no graph(us) column beside time(us); "
    filled=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
      $c["graph_time_us"] != "" && split($c["graph_loops_us"], l, ";") == 3 && $c["cv_pct"] != "" { n++ }
      END { print n + 0 }' "$f.csv")
    [ "$filled" = $((2 * $(nmodes_of $p))) ] || why+="$filled rows with 3 graph loops, wanted $((2 * $(nmodes_of $p))); "
    python3 tests/oracles/bench_oracle.py "$f.csv" --gpus 8 >"$f.oracle" 2>&1 ||
      why+="$(grep -v '^bench_oracle:' "$f.oracle" | head -n 2 | tr '\n' ' '); "
    no_violation
    end
  done
done


# ------------------------------------- sizes in the L2 cache, shared %roof
# With a 1 MiB L2 (simulated), one rank's 64K and 256K AllReduce (send +
# receive: 128K, 512K) fit and are marked; 1M and 4M (2M, 8M) do not, and
# only they can be the peak.
if begin "bench/sim-pthread/allreduce_sm-l2-marking"; then
  SIM_L2_BYTES=1048576 sim_run sim-pthread allreduce_sm 1 --bench -b 64K -e 4M -f 4 -w 1 -i 2 --csv "$f.csv"
  want_status 0
  want_out "# L2: the size's buffers (every rank's on the GPU, or the roof's copy) fit in the 1 MiB L2 cache"
  for size in 65536 262144; do
    grep -qE "^ +$size +[0-9]+ +[0-9.]+ L2 \|" "$f.out" || why+="the $size row is not marked L2; "
  done
  for size in 1048576 4194304; do
    grep -qE "^ +$size +[0-9]+ +[0-9.]+    \|" "$f.out" || why+="the $size row is marked, or missing; "
  done
  grep -qE "^# peak algbw / busbw \(GB/s\), among the sizes that do not fit in the L2 cache: sym [0-9.]+ / [0-9.]+ at (1048576|4194304) B, plain [0-9.]+ / [0-9.]+ at (1048576|4194304) B$" "$f.out" ||
    why+="the peak line is not among the sizes outside the L2; "
  [ "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR > 1 && $c["in_l2"] == "L2"' "$f.csv" | wc -l)" = 4 ] ||
    why+="wanted 4 CSV rows with in_l2 = L2; "
  end
fi
# 4 ranks sharing one GPU: %roof is what the GPU moves for its 4 ranks
# (busbw x 4) against the copy roofline, and the header says so.
if begin "bench/sim-pthread/allgather_ce-shared-gpu-roof"; then
  SIM_L2_BYTES=1048576 shared_run sim-pthread allgather_ce 4 1 23007 --bench -b 4M -e 4M -w 1 -i 2 --csv "$f.csv"
  want_status 0
  want_out "# %roof: busbw x 4 (what the GPU moves for its 4 ranks) / roof"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["roof_GBps"] > 0 {
      checked++; want = 100 * $c["busbw_GBps"] * 4 / $c["roof_GBps"]; d = $c["pct_roof"] - want; if (d < 0) d = -d
      if (d > 0.01 + want / 100) { print "row " NR ": pct_roof " $c["pct_roof"] ", busbw x 4 / roof " want; bad = 1 } }
    END { if (checked != 3) { print checked + 0 " rows checked, wanted the 3 modes"; bad = 1 }; exit bad }' \
    "$f.csv" >"$f.check" || why+="$(head -n 1 "$f.check"); "
  end
fi

# -r: the -i operations as loops; the median, the spread, and '~' on a
# ratio whose modes' loops overlap. With one loop there is no spread, and a
# ratio is never marked unless both times are equal.
if begin "bench/sim-pthread/allgather_ce-repeat"; then
  sim_run sim-pthread allgather_ce 2 --bench -b 64K -e 256K -f 4 -w 1 -i 6 -r 3 --csv "$f.csv"
  want_status 0
  want_out "6 timed + 1 warm-up operations per size and mode, timed as 3 loop(s)"
  want_out "# time(us): the median loop's time per operation; spr%: (slowest - fastest loop) / median"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["time_min_us"] != "" {
      t = $c["time_us"]; lo = $c["time_min_us"]; hi = $c["time_max_us"]; rows++
      if (lo > t || t > hi) { print "row " NR ": median " t " outside " lo ".." hi; bad = 1 }
      want = 100 * (hi - lo) / t; d = $c["spread_pct"] - want; if (d < 0) d = -d
      if (d > 0.01 + want / 100) { print "row " NR ": spread_pct " $c["spread_pct"] ", wanted " want; bad = 1 } }
    END { if (rows != 6) { print rows + 0 " rows, wanted 6"; bad = 1 }; exit bad }' "$f.csv" >"$f.check" ||
    why+="$(head -n 1 "$f.check"); "
  end
fi
# Loops of a known length: each collective takes 20 ms of simulated GPU
# time and each device copy 20 ms (SIM_GPU_US), so that the definitions
# give the times; the events read the simulated GPU's clock, which no load
# moves (tests/sim/clock.c). With -i 3 -r 3 each loop is one operation:
# every loop's time per operation is 20000 us, eager and replayed (a loop
# of two, or warm-ups inside the events, would be 40000 us or more; a loop
# divided by the 3 operations of all loops, 6667 us). The roof times its 3
# copies the same way, after 4 warm-ups: its bandwidth is 256 KiB / 20 ms
# = 0.0131 GB/s (with the warm-ups timed, 7 copies in 3 copies' time:
# 256 KiB / 46.7 ms = 0.0056 GB/s).
if begin "bench/sim-pthread/allreduce_sm-known-gpu-time"; then
  SIM_GPU_US='collective:*:20000,copy:*:20000' sim_run sim-pthread allreduce_sm 2 \
    --bench -b 256K -e 256K -w 4 -i 3 -r 3 --graph --csv "$f.csv"
  want_status 0
  want_out "Benchmark results verified correctly"
  python3 - "$f.csv" >"$f.check" 2>&1 <<'PY' || why+="$(head -n 2 "$f.check" | tr '\n' ' '); "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = []
if sorted(r["mode"] for r in rows) != ["plain", "sym"]:
    bad.append(f"modes {[r['mode'] for r in rows]}, wanted plain and sym")
for r in rows:
    for p in ("", "graph_"):
        times = [float(r[p + c]) for c in ("time_min_us", "time_us", "time_max_us")]
        if any(abs(t - 20000) > 0.5 for t in times):
            bad.append(f"{r['mode']} {p}times (min, median, max) {times}: wanted 20000 us each")
    roof = float(r["roof_GBps"])
    if abs(roof - 262144 / 20000 / 1e3) > 0.0005:  # (the CSV's 3 decimals)
        bad.append(f"{r['mode']} roof_GBps {roof}: wanted 256 KiB per 20 ms (0.0131)")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
  python3 tests/oracles/bench_oracle.py "$f.csv" --gpus 8 >"$f.oracle" 2>&1 ||
    why+="$(grep -v '^bench_oracle:' "$f.oracle" | head -n 2 | tr '\n' ' '); "
  no_violation
  end
fi
# -i 3 -r 2: loops of 2 and of 1 operations, each replayed from a graph of
# its own; each loop's time per operation is its time over its own count,
# so every loop says the GPU's 20 ms per collective (not 40, or 10), on
# the simulated clock: 20000 us exactly.
if begin "bench/sim-pthread/allreduce_sm-graph-loops-of-2-and-1"; then
  SIM_GPU_US='collective:*:20000,copy:*:20000' sim_run sim-pthread allreduce_sm 2 \
    --bench -b 64K -e 64K -w 1 -i 3 -r 2 --graph --csv "$f.csv"
  want_status 0
  python3 - "$f.csv" >"$f.check" 2>&1 <<'PY' || why+="$(head -n 2 "$f.check" | tr '\n' ' '); "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = [f"{r['mode']} graph loops {r['graph_loops_us']}: wanted 2, each 20000 us"
       for r in rows
       if len(r["graph_loops_us"].split(";")) != 2
       or not all(abs(float(t) - 20000) <= 0.5 for t in r["graph_loops_us"].split(";"))]
print("\n".join(bad) if rows else "no rows")
sys.exit(1 if bad or not rows else 0)
PY
  no_violation
  end
fi
# Ranks that do not divide evenly among the GPUs: 3 ranks on 2 GPUs put 2
# on GPU 0, and %roof counts what the busiest GPU moves (busbw x 2).
if begin "bench/sim-pthread/allreduce_sm-3-ranks-on-2-gpus"; then
  shared_run sim-pthread allreduce_sm 3 2 23007 --bench -b 64K -e 64K -w 1 -i 2 --csv "$f.csv"
  want_status 0
  want_out "# %roof: busbw x 2 (what the GPU moves for its 2 ranks) / roof"
  python3 tests/oracles/bench_oracle.py "$f.csv" --gpus 2 >"$f.oracle" 2>&1 ||
    why+="$(grep -v '^bench_oracle:' "$f.oracle" | head -n 2 | tr '\n' ' '); "
  no_violation
  end
fi
# A replay that writes nothing, at one rank: the AllReduce of one rank's
# zeros is zeros, so only a poison that is not 0 (NaN) can show it.
if begin "bench/sim-pthread/allreduce_sm-1-graph-replay-does-nothing"; then
  SIM_REPLAYS_DO_NOTHING=1 sim_run sim-pthread allreduce_sm 1 --bench -b 4K -e 4K -w 1 -i 2 --graph
  want_status 1
  want_out "Benchmark results verification failed"
  want_err "at 4096 bytes, replayed from a CUDA graph: wrong result on at least one rank"
  no_violation
  end
fi
if begin "bench/sim-pthread/allreduce_sm-repeat-more-than-iters"; then
  sim_run sim-pthread allreduce_sm 1 --bench -i 2 -r 3
  want_status 2
  want_err "-r 3 is more than -i 2: each of the 3 timed loops needs at least one operation"
  end
fi
