#!/usr/bin/env bash
# Runs a program on the test suite's simulation of CUDA and NCCL, to watch
# what it prints without a GPU. Nothing it prints is a measurement: the
# first line says so.
#   tools/simulate.sh PROGRAM [OPTIONS...]     (PROGRAM: allreduce_sm or allgather_ce)
# Environment: NTHREADS=N ranks (default 4); SIM_DEVICES=N simulated GPUs
# (default 4); SIM_NCCL_VERSION=code the NCCL version it plays (default:
# the headers'); SIM_HANG=CALL:RANK, SIM_FAIL=CALL:RANK and the other
# settings of tests/sim/sim.h. Exits as the program does.
set -u
cd "$(dirname "$0")/.." || exit 1
case ${1:-} in
  allreduce_sm | allgather_ce) ;;
  -h | --help)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "simulate.sh: '${1:-}' is not a program here: use allreduce_sm or allgather_ce (tools/simulate.sh --help)" >&2
    exit 2
    ;;
esac
program=$1
shift
mkdir -p tests/build
if ! make --no-print-directory -s -C tests programs-sim-pthread >tests/build/simulate-build.log 2>&1; then
  echo "simulate.sh: building the simulated programs failed (see tests/build/simulate-build.log)" >&2
  exit 1
fi
export SIM_DEVICES=${SIM_DEVICES:-4} NTHREADS=${NTHREADS:-4}
SIM_DIR=$(mktemp -d) || exit 1
export SIM_DIR
trap 'rm -rf "$SIM_DIR"' EXIT
echo "# SIMULATED: no GPU ran this; tests/sim stands in for CUDA and NCCL ($SIM_DEVICES simulated GPUs, $NTHREADS ranks)"
tests/build/sim-pthread/"$program" "$@"
