# The fault matrix's subset for `make test` (tests/lib/faults.sh; the whole
# matrix is `make test-faults`, tests/fault_matrix.sh).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
. tests/lib/faults.sh

mapfile -t cells < <(fault_subset_cells)
fault_run_cells "${FAULT_JOBS:-$((4 * $(nproc)))}" "${cells[@]}"
fault_every_call_injected faults/subset-injects-every-call
