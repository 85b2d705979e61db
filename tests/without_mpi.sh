#!/usr/bin/env bash
# The test suite as on a machine without Open MPI (`make test-without-mpi`):
# runs tests/run_tests.sh with a PATH on which no MPI command exists (a
# folder of links to every other command of PATH), so the MPI cases are
# skipped and named, and the checks that count what ran count only what
# could run. Exits as the suite does.
set -u
cd "$(dirname "$0")/.." || exit 1
bin=$(mktemp -d "${TMPDIR:-/tmp}/no-mpi-path.XXXXXX") || exit 1
trap 'rm -rf "$bin"' EXIT
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  for x in "$d"/*; do
    name=${x##*/}
    case $name in
      mpi* | ompi* | orte* | oshmem* | oshrun | shmemrun | prte* | prun | pmix*) continue ;;
    esac
    [ -x "$x" ] && [ ! -e "$bin/$name" ] && ln -s "$x" "$bin/$name"
  done
done
if PATH=$bin command -v mpirun >/dev/null || PATH=$bin command -v mpicc >/dev/null; then
  echo "without_mpi.sh: mpirun or mpicc is still on the PATH made without MPI" >&2
  exit 1
fi
PATH=$bin bash tests/run_tests.sh
