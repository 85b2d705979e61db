# Simulated runs on 1..8 ranks: stdout line for line against the oracle.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).

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
