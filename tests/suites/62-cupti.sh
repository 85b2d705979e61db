# The instruments with CUPTI (HAVE_CUPTI=1) on the simulation's CUPTI
# (tests/sim/cupti.c): What ran and --bench's engine from records named as
# the simulated NCCL version names them, and CUPTI failing on one rank.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)
#
# The expected lines are those recorded on one H200 with NCCL 2.30.7
# (docs/what-ran/h200-nccl2.30.7.txt) where the simulation plays what was
# recorded there: the copy-engine AllGather's 3n - 2 copies per rank on n
# ranks (tests/sim/cupti.c).

if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
  for c in pthread/allreduce_sm-1-local-copy pthread/allreduce_sm-2-symmetric; do
    skip "cupti/$c" "no cupti.h in ${CUDA_HOME:-/usr/local/cuda}/include"
  done
  return 0
fi

# what_ran_line VARIANT PROGRAM N LINE [ARGS...]: a clean run whose stdout
# has LINE and no "Why" line (the example's point ran).
what_ran_line() {
  local variant=$1 p=$2 n=$3 line=$4
  shift 4
  sim_run "$variant" "$p" "$n" "$@"
  want_status 0
  want_out "$line"
  ! grep -q '^Why ' "$f.out" || why+="a Why line: $(grep '^Why ' "$f.out"); "
  no_violation
}

if begin cupti/pthread/allreduce_sm-1-local-copy; then
  sim_run simcupti-pthread allreduce_sm 1
  want_status 0
  want_out "What ran: one rank: NCCL did a local copy (1 copy, 0 kernels), nothing was communicated"
  no_violation
  end
fi
if begin cupti/pthread/allreduce_sm-2-symmetric; then
  what_ran_line simcupti-pthread allreduce_sm 2 \
    "What ran: AllReduce ran NCCL's symmetric kernel AllReduce_RSxLD_AGxST_sum_f32 on every rank"
  end
fi
if begin cupti/pthread/allreduce_sm-2-small-symmetric; then
  what_ran_line simcupti-pthread allreduce_sm 2 \
    "What ran: AllReduce ran NCCL's symmetric kernel AllReduce_AGxLL_R_sum_f32 on every rank" -n 1024
  end
fi
if begin cupti/pthread/allgather_ce-2-copy-engines; then
  what_ran_line simcupti-pthread allgather_ce 2 \
    "What ran: AllGather ran on the copy engines: 0 kernels, 4 copies on every rank"
  end
fi
# Two ranks sharing one GPU, threads of one process (NCCL >= 2.30 with
# NCCL_MULTI_RANK_GPU_ENABLE=1): each rank counts only the work its own
# thread launched, as on the H200 (docs/what-ran/h200-nccl2.30.7.txt: 4
# copies at 2 ranks sharing it).
if begin cupti/pthread/allgather_ce-2-sharing-one-gpu; then
  SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=1 \
    what_ran_line simcupti-pthread allgather_ce 2 \
    "What ran: AllGather ran on the copy engines: 0 kernels, 4 copies on every rank"
  end
fi
# The same two ranks without symmetric support: the Why line has the
# windows' cause and no P2P one (a GPU has no CUDA P2P access to itself:
# cudaDeviceCanAccessPeer says 0, which is no cause here).
for p in $PROGRAMS; do
  if begin "cupti/pthread/$p-2-sharing-one-gpu-no-symmetric"; then
    SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=1 SIM_NO_SYMMETRIC=1 \
      sim_run simcupti-pthread "$p" 2 -n 1024
    want_status 0
    why_line=$([ $p = allgather_ce ] && echo "Why not the copy engines" || echo "Why no symmetric kernel")
    [ "$(grep "^Why " "$f.out")" = "$why_line: NULL windows on ranks 0-1: NCCL registered no window (NCCL_DEBUG=INFO: NCCL's INIT log says why)" ] ||
      why+="the Why line: '$(grep "^Why " "$f.out")'; "
    no_out "CUDA P2P"
    no_violation
    end
  fi
done
if begin cupti/mpi/allgather_ce-4-copy-engines && mpi_cases "$name"; then
  what_ran_line simcupti-mpi allgather_ce 4 \
    "What ran: AllGather ran on the copy engines: 0 kernels, 10 copies on every rank"
  end
fi

# Without windows, NCCL's regular kernels, in both naming schemes (2.30.7's
# ncclDevKernel_AllReduce_Sum_f32_RING_LL, 2.32's ..._AllReduce_f32_RING):
# the RING family either way.
for version in 23007 23203; do
  for p in $PROGRAMS; do
    if begin "cupti/pthread/$p-no-symmetric-$version"; then
      SIM_NCCL_VERSION=$version SIM_NO_SYMMETRIC=1 sim_run simcupti-pthread "$p" 2
      want_status 0
      want_out "ran NCCL's regular kernels of the RING family (no symmetric kernel) on every rank"
      no_violation
      end
    fi
  done
done

# Ranks on several hosts (NCCL_HOSTID per process), NCCL 2.28.3: the Why
# line names the hosts; "alone on its node" (no symmetric support before
# 2.28.7, NCCL 2.28.3 src/transport.cc) only where every rank has a host of
# its own: 4 ranks on 2 hosts are not, 4 ranks on 4 hosts are.
for per in 2 1; do
  c="cupti/mpi/allreduce_sm-4-ranks-$per-per-host-nccl-2.28.3"
  if begin "$c" && mpi_cases "$c"; then
    need programs-simcupti-mpi
    SIM_NCCL_VERSION=22803 SIM_DIR=$TMPDIR SIM_DEVICES=4 run "${MPIRUN[@]}" -np 4 \
      sh -c 'NCCL_HOSTID=node$((OMPI_COMM_WORLD_RANK / '$per')) exec "$0" -n 1024' "$B/simcupti-mpi/allreduce_sm"
    want_status 0
    want_out "the ranks are on $((4 / per)) hosts (by NCCL_HOSTID)"
    if [ $per = 1 ]; then
      want_out "NCCL 2.28.3 (before 2.28.7) has no symmetric support when every rank is alone on its node"
    else
      no_out "alone on its node"
    fi
    end
  fi
done

# CUPTI failing on one rank (a profiler holding it there): the program's
# own output and status are those of a run without the failure; What ran
# says what it measured and that rank 1 was not measured.
if begin cupti/mpi/allreduce_sm-fails-on-rank-1 && mpi_cases "$name"; then
  sim_run simcupti-mpi allreduce_sm 2 -n 1024
  grep -v '^What ran\|^Why ' "$f.out" >"$f.clean"
  SIM_CUPTI_FAIL=cuptiActivityEnable:1 sim_run simcupti-mpi allreduce_sm 2 -n 1024
  want_status 0
  want_err "rank 1: CUPTI: cuptiActivityEnable failed"
  want_out "What ran: AllReduce ran NCCL's symmetric kernel AllReduce_AGxLL_R_sum_f32 on rank 0; nothing measured on rank 1"
  grep -v '^What ran\|^Why ' "$f.out" | diff -q - "$f.clean" >/dev/null ||
    why+="the program's own output differs from a run where CUPTI works; "
  ! grep -q '^Why ' "$f.out" || why+="a Why line for a rank not measured; "
  no_violation
  end
fi

# --bench: whether CUPTI works is agreed by every rank, and the attribution's
# collectives run on every rank: no hang, every size's line printed.
for call in cuptiActivityEnable cuptiActivityFlushAll; do
  for p in $PROGRAMS; do
    if begin "cupti/mpi/$p-bench-$call-fails-on-rank-1" && mpi_cases "$name"; then
      SIM_CUPTI_FAIL=$call:1 sim_run simcupti-mpi "$p" 2 --bench -b 4K -e 16K -w 1 -i 2 --timeout 20 --csv "$f.csv"
      want_status 0
      want_out "Benchmark results verified correctly"
      want_err "rank 1: CUPTI: $call failed"
      # A failure is remembered: said once, not again at each later probe.
      [ "$(grep -c "CUPTI: .* failed" "$f.err")" = 1 ] || why+="CUPTI's failure said $(grep -c "CUPTI: .* failed" "$f.err") times; "
      ! grep -q "has not returned" "$f.err" || why+="the watchdog ended it; "
      [ "$(grep -cE '^ +(4096|16384) ' "$f.out")" = 2 ] || why+="not every size's line was printed; "
      # Rank 1 measured nothing: its engine is n/a, the counts unknown (-1).
      python3 - "$f.csv" "$call" >"$f.csvcheck" 2>&1 <<'PY' || why+="$(head -n 2 "$f.csvcheck" | tr '\n' ' ')"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows, "no rows in the CSV"
for r in rows:
    where = f"{r['mode']} {r['size_bytes']}: "
    assert r["kernels"] == "-1" and r["copies"] == "-1", where + f"kernels {r['kernels']}, copies {r['copies']}"
    if sys.argv[2] == "cuptiActivityEnable":  # agreed at the start: nobody measures
        assert r["engine"] == "n/a", where + "engine " + r["engine"]
    else:  # rank 0 measured, rank 1 could not collect
        assert r["engine"] == "mixed" and "r1:n/a:" in r["kernel_names"], where + r["engine"] + " " + r["kernel_names"]
PY
      no_violation
      end
    fi
  done
done

# The engine column from the simulated records, against the sizes' names.
if begin cupti/pthread/allreduce_sm-bench-engine; then
  sim_run simcupti-pthread allreduce_sm 2 --bench -b 4K -e 4K -w 1 -i 2 --csv "$f.csv"
  want_status 0
  python3 - "$f.csv" >"$f.csvcheck" 2>&1 <<'PY' || why+="$(head -n 2 "$f.csvcheck" | tr '\n' ' ')"
import csv, sys
want = {"sym": ("SYM", "ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32"),
        "plain": ("SM", "ncclDevKernel_AllReduce_Sum_f32_RING_LL")}
for r in csv.DictReader(open(sys.argv[1])):
    engine, name = want[r["mode"]]
    assert (r["engine"], r["kernel_names"]) == (engine, name), f"{r['mode']}: {r['engine']} {r['kernel_names']}"
    assert r["kernels"] == "3" and r["copies"] == "0", f"{r['mode']}: kernels {r['kernels']}, copies {r['copies']}"
PY
  no_violation
  end
fi

# Ranks whose kernels differ in name but not in engine (rank 1 loads an
# NCCL that names its regular AllReduce kernel as 2.31 does): the engine
# column says "mixed", and kernel_names gives each rank's, not rank 0's.
c=cupti/mpi/allreduce_sm-bench-engine-names-differ
if begin "$c" && mpi_cases "$c"; then
  need programs-simcupti-mpi
  SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np 2 sh -c 'SIM_NCCL_VERSION=$([ "$OMPI_COMM_WORLD_RANK" = 0 ] && echo 23007 || echo 23203) exec "$0" "$@"' \
    "$B/simcupti-mpi/allreduce_sm" --bench -b 4K -e 4K -w 1 -i 2 --csv "$f.csv"
  want_status 0
  python3 - "$f.csv" >"$f.csvcheck" 2>&1 <<'PY' || why+="$(head -n 2 "$f.csvcheck" | tr '\n' ' ')"
import csv, sys
want = {"sym": ("SYM", "ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32"),
        "plain": ("mixed", "r0:SM:ncclDevKernel_AllReduce_Sum_f32_RING_LL r1:SM:ncclDevKernel_AllReduce_f32_RING")}
rows = list(csv.DictReader(open(sys.argv[1])))
assert sorted(r["mode"] for r in rows) == ["plain", "sym"], [r["mode"] for r in rows]
for r in rows:
    engine, names = want[r["mode"]]
    assert (r["engine"], r["kernel_names"]) == (engine, names), f"{r['mode']}: {r['engine']} {r['kernel_names']}"
PY
  no_violation
  end
fi
