#!/usr/bin/env bash
# mpirun with a session directory of its own. Open MPI keeps each job's
# session files under TMPDIR (ompi.HOST.UID); mpiruns started at the same
# moment there race to create and remove that folder ("A call to mkdir was
# unable to create the desired directory ... File exists"). The suite runs
# many at once, so each gets a fresh TMPDIR under the suite's own.
dir=$(mktemp -d "${TMPDIR:-/tmp}/mpirun.XXXXXX") || exit 1
TMPDIR=$dir exec mpirun "$@"
