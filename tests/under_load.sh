#!/usr/bin/env bash
# `make test-under-load`: the suite beside a CPU hog of twice the cores
# (a busy loop per core, twice over), as on a shared, loaded machine. The
# verdicts must be those of a quiet run: no case may depend on how fast the
# machine is. Exits as the suite does; the hog ends with it.
# TEST_HOGS_PER_CORE=N: N busy loops per core instead of 2 (N >= 2).
# The suite's four lanes then share each core with N loops: the limits
# per command and per case, TEST_TIMEOUT and TEST_CASE_LIMIT, are N + 1
# times their defaults (at N = 2 a 4-rank lesson of 1048576 floats, or a
# whole simulate.sh build, can take over 60 s on a slow machine).
# TEST_FILTER and TEST_SUITE narrow the run as they do for
# `make test`.
set -u
per_core=${TEST_HOGS_PER_CORE:-2}
cd "$(dirname "$0")/.." || exit 1
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
for _ in $(seq $((per_core * $(nproc)))); do
  (while :; do :; done) &
  hogs+=($!)
done
echo "# beside ${#hogs[@]} busy loops on $(nproc) cores"
# (three times the whole run's limit: a loaded machine is slower)
TEST_RUN_LIMIT=${TEST_RUN_LIMIT:-3600} TEST_TIMEOUT=${TEST_TIMEOUT:-$((60 * (per_core + 1)))} \
  TEST_CASE_LIMIT=${TEST_CASE_LIMIT:-$((420 * (per_core + 1)))} bash tests/run_tests.sh
