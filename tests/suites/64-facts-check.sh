# The simulation against what NCCL did on a GPU: tools/nccl_facts on the
# simulation (with its CUPTI), per recorded file of docs/facts (version and
# ranks), compared fact by fact (tests/lib/facts_check.py); the known
# differences are in tests/facts_exceptions.txt, each with its reason.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).

for record in "$ROOT"/docs/facts/nccl-*.tsv; do
  b=$(basename "$record" .tsv)                      # nccl-2.30.7-2ranks
  version=${b#nccl-}; version=${version%%-*}        # 2.30.7
  n=${b##*-}; n=${n%rank*}                          # 2
  code=$(echo "$version" | awk -F. '{ printf "%d%02d%02d", $1, $2, $3 }')
  c="facts/sim/record-$version-$n-rank$([ "$n" -gt 1 ] && echo s)"
  if [ ! -e "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
    skip "$c" "no cupti.h: the simulated probe with CUPTI is not built"; continue
  fi
  begin "$c" || continue
  need simcupti-tools/nccl_facts
  # One GPU, as on the machine that recorded them.
  SIM_DIR=$TMPDIR SIM_NCCL_VERSION=$code SIM_DEVICES=1 NCCL_MULTI_RANK_GPU_ENABLE=1 \
    run "$B/simcupti-tools/nccl_facts" --tsv --ranks "$n" --timeout 20
  want_status 0
  python3 "$ROOT/tests/lib/facts_check.py" "$record" "$f.out" "$ROOT/tests/facts_exceptions.txt" >"$f.check" ||
    why+="$(grep -v '^#' "$f.check" | head -n 4 | tr '\n' ' ')"
  end
done
