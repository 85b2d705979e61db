# Simulated runs on 1..8 ranks: stdout line for line against the oracle.
# Cases: sim/sim-pthread/PROGRAM-N and sim/sim-mpi/PROGRAM-N (threads, MPI),
# sim/asan-pthread/..., sim/asan-mpi/... and sim/tsan-pthread/... (the same
# under the sanitizers), sim/simulate/... (tools/simulate.sh).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

# output_case VARIANT PROGRAM NRANKS [COUNT]: the simulation shows 8 GPUs.
output_case() {
  local variant=$1 prog=$2 n=$3 count=${4:-$SMALL} c
  c="sim/$variant/$prog-$n"
  [ "$count" = $SMALL ] || c+="-count-$count"
  [[ $variant == *mpi ]] && { mpi_cases "$c" || return; }
  begin "$c" || return
  expected "$prog" "$n" --count "$count" --mode "$(mode_of "$variant")" --gpus 8 >"$f.expected"
  sim_run "$variant" "$prog" "$n" -n "$count"
  want_status 0
  want_out_file "$f.expected"
  no_violation
  no_sanitizer_report
  end
}
for variant in sim-pthread sim-mpi; do
  for p in $PROGRAMS; do
    for n in 1 2 3 4 5 6 7 8; do output_case $variant $p $n; done
  done
done
for p in $PROGRAMS; do # the default count, as users run it
  output_case sim-pthread $p 4 1048576
done
for variant in asan-pthread tsan-pthread asan-mpi; do
  for p in $PROGRAMS; do
    for n in 1 2 4 8; do output_case $variant $p $n; done
  done
done

# tools/simulate.sh as a learner runs it: from another folder, the header
# counted right, threads or MPI, its own bad settings refused before
# anything runs, a relative --csv path the caller's.
SIMULATE_FLAVOUR=$([ -e "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ] && echo simcupti || echo sim)
if begin sim/simulate/threads-one-rank; then
  need programs-$SIMULATE_FLAVOUR-pthread
  mkdir -p "$TMPDIR/learner"
  cd "$TMPDIR/learner" || exit 1
  NTHREADS=1 run "$ROOT/tools/simulate.sh" allgather_ce --bench -b 4K -e 4K -w 1 -i 1 --csv ag.csv
  cd "$ROOT" || exit 1
  want_status 0
  [ "$(head -n 1 "$f.out")" = "# SIMULATED: no GPU ran this; tests/sim stands in for CUDA and NCCL (1 simulated GPU, 1 rank)" ] ||
    why+="first line: '$(head -n 1 "$f.out")'; "
  want_out "Benchmark results verified correctly"
  [ -s "$TMPDIR/learner/ag.csv" ] || why+="--csv ag.csv is not in the caller's folder; "
  end
fi
c=sim/simulate/mpi-3-ranks
if mpi_cases "$c" && begin "$c"; then
  need programs-$SIMULATE_FLAVOUR-mpi
  SIM_NCCL_VERSION=2.30.7 run "$ROOT/tools/simulate.sh" --mpi 3 allreduce_sm -n 64
  want_status 0
  want_out "# SIMULATED: no GPU ran this; tests/sim stands in for CUDA and NCCL (3 simulated GPUs, 3 ranks, MPI processes)"
  want_out "MPI initialized: rank 2 of 3"
  want_out "Results verified correctly"
  end
fi
for setting in SIM_NCCL_VERSION=2.30 SIM_DEVICES=0 NTHREADS=abc; do
  if begin "sim/simulate/refuses-$setting"; then
    run env "$setting" "$ROOT/tools/simulate.sh" allreduce_sm
    want_status 2
    want_err "simulate.sh: ${setting%%=*}='${setting#*=}': use "
    [ ! -s "$f.out" ] || why+="it printed before refusing; "
    end
  fi
done
