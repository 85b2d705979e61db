# What the suites share about this machine and the programs, sourced by
# run_tests.sh after tap.sh: MPI and GPU probing, how to run a simulated
# or real program, and the expected output (tests/oracles/expected_output.py).

PROGRAMS="allreduce_sm allgather_ce"

# The device API lesson (03_allreduce_lsa) needs an nccl.h >= 2.30.7, its
# simulated build too (tests/Makefile, LSA_NCCL_HOME): NCCL_HOME's where it
# is that new, else the headers of the NCCL matrix's newest wheel
# (tests/suites/15-nccl-matrix.sh keeps the wheels in NCCL_WHEELS; with
# NCCL_MATRIX_DOWNLOAD=1 a missing one is downloaded here), unpacked once
# into tests/build. LSA_MISSING says why there is none: the cases skip.
LSA_WHEEL_VERSION=2.32.6
nccl_h_code() { # DIR: NCCL_VERSION_CODE of DIR/include/nccl.h, or 0
  sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$1/include/nccl.h" 2>/dev/null | head -n 1 | grep . || echo 0
}
LSA_MISSING=""
if [ -n "${NCCL_HOME:-}" ] && [ "$(nccl_h_code "$NCCL_HOME")" -ge 23007 ]; then
  export LSA_NCCL_HOME=$NCCL_HOME
else
  export LSA_NCCL_HOME=$B/lsa-nccl/$LSA_WHEEL_VERSION/nvidia/nccl
  if [ -z "${LIST:-}" ] && [ ! -e "$LSA_NCCL_HOME/include/nccl.h" ]; then
    wheels=${NCCL_WHEELS:-$HOME/.cache/nccl-wheels}
    whl=$(ls "$wheels"/nvidia_nccl_cu13-"$LSA_WHEEL_VERSION"-*.whl 2>/dev/null | head -n 1)
    if [ -z "$whl" ] && [ "${NCCL_MATRIX_DOWNLOAD:-0}" = 1 ]; then
      mkdir -p "$wheels"
      timeout 300 python3 -m pip download -q --no-deps -d "$wheels" "nvidia-nccl-cu13==$LSA_WHEEL_VERSION" >"$LOG/lsa-wheel-download.log" 2>&1
      whl=$(ls "$wheels"/nvidia_nccl_cu13-"$LSA_WHEEL_VERSION"-*.whl 2>/dev/null | head -n 1)
    fi
    # Only the headers: the simulation stands in for the library.
    [ -n "$whl" ] && python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("nvidia/nccl/include/")])' "$whl" "$B/lsa-nccl/$LSA_WHEEL_VERSION"
  fi
  [ -e "$LSA_NCCL_HOME/include/nccl.h" ] ||
    LSA_MISSING="no nccl.h >= 2.30.7 for allreduce_lsa: NCCL_HOME is ${NCCL_HOME:-unset}, and no nvidia_nccl_cu13-$LSA_WHEEL_VERSION wheel in ${NCCL_WHEELS:-~/.cache/nccl-wheels} (NCCL_MATRIX_DOWNLOAD=1 downloads it)"
fi
# What tests/build is built with, for tools/simulate.sh: it builds there
# only with the same NCCL and CUDA (else in a folder of its own,
# tests/build/simulate/N), so that its builds beside a run change nothing
# of the run's.
if [ -z "${LIST:-}" ]; then
  mkdir -p "$B"
  printf 'NCCL_HOME=%s\nLSA_NCCL_HOME=%s\nCUDA_HOME=%s\n' "${NCCL_HOME:-}" "$LSA_NCCL_HOME" "${CUDA_HOME:-/usr/local/cuda}" >"$B/homes"
fi
# The NCCL the suite's builds find, as the toolchain finds it: NCCL_HOME's,
# else CUDA_HOME's where it has one (this project's CI machine), else the
# system's (nccl.h in the compiler's paths, libnccl.so.2 from ldconfig: a
# GPU machine with NCCL from its packages). SUITE_NCCL_HOME is the folder
# to name to CMake (empty: CMake looks in the default places);
# SUITE_NCCL_H and SUITE_NCCL_SO are the files.
cuda_dir=${CUDA_HOME:-/usr/local/cuda}
if [ -n "${NCCL_HOME:-}" ]; then
  SUITE_NCCL_HOME=$NCCL_HOME SUITE_NCCL_H=$NCCL_HOME/include/nccl.h
  SUITE_NCCL_SO=$(ls "$NCCL_HOME"/lib/libnccl.so.2 "$NCCL_HOME"/lib64/libnccl.so.2 2>/dev/null | head -n 1)
elif [ -e "$cuda_dir/include/nccl.h" ]; then
  SUITE_NCCL_HOME=$cuda_dir SUITE_NCCL_H=$cuda_dir/include/nccl.h
  SUITE_NCCL_SO=$(ls "$cuda_dir"/lib64/libnccl.so.2 "$cuda_dir"/lib/libnccl.so.2 2>/dev/null | head -n 1)
else
  SUITE_NCCL_HOME=""
  SUITE_NCCL_H=$(printf '#include <nccl.h>\n' | cc -E -x c - 2>/dev/null | sed -n 's/^# [0-9]* "\(.*nccl\.h\)".*/\1/p' | head -n 1)
  SUITE_NCCL_SO=$(ldconfig -p 2>/dev/null | awk '$1 == "libnccl.so.2" { print $NF; exit }')
fi
# -DNCCL_HOME=... for CMake where the suite's NCCL is in a folder of its own.
CMAKE_NCCL=(${SUITE_NCCL_HOME:+"-DNCCL_HOME=$SUITE_NCCL_HOME"})

# lsa_case NAME: begin a case of the device API lesson's simulated builds
# (lsa-pthread, lsa-mpi), or a skip naming why no build is possible here.
lsa_case() {
  if [ -n "$LSA_MISSING" ]; then skip "$1" "$LSA_MISSING"; return 1; fi
  [[ $1 == *mpi* ]] && { mpi_cases "$1" || return 1; }
  begin "$1" || return 1
  need "lsa-programs"
}

# fast_case NAME: the same for the fast-kernel lesson (04_allreduce_fast:
# fast-pthread, fast-mpi).
fast_case() {
  if [ -n "$LSA_MISSING" ]; then skip "$1" "$LSA_MISSING"; return 1; fi
  [[ $1 == *mpi* ]] && { mpi_cases "$1" || return 1; }
  begin "$1" || return 1
  need "fast-programs"
}

SMALL=4096 # floats per rank in the simulated runs: fast, still many pages
# Builds whose point is not the compiler's output (a seam, a layout, an
# example's own `make test`) compile unoptimised: faster, and the real
# programs (tests/Makefile's real-programs-*) keep the default -O2 -g.
QUICK_CFLAGS="CFLAGS=-O0 -g"

HAVE_MPI=0
if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
  HAVE_MPI=1
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  # Containers often forbid the ptrace-based single-copy transport.
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  # (tests/lib/mpirun_own_tmpdir.sh: mpirun, each job its own session
  # folder, since the suite starts many at once)
  MPIRUN=(bash "$ROOT/tests/lib/mpirun_own_tmpdir.sh" --oversubscribe)
else
  NO_MPI="mpirun/mpicc not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"
fi

# Whether Open MPI can run and connect 2 local ranks here, under the same
# mpirun options as the cases: Open MPI's own settings in the environment
# (OMPI_MCA_btl=self, a missing interface, ...) can stop it, and then the
# MPI cases are skipped, the reason naming the check's error and those
# settings, rather than failed as the programs' fault. TEST_MPI=1 runs them
# anyway. Sets MPI_CHECK (what the check found) once per run.
MPI_CHECK=""
mpi_preflight() {
  local dir=$B/mpi-check start took error settings
  mkdir -p "$dir"
  if ! mpicc -O1 -o "$dir/pingpong" "$ROOT/tests/hooks/mpi_pingpong.c" >"$dir/build.log" 2>&1; then
    error="mpicc could not build a 2-rank program: $(grep -m1 -i error "$dir/build.log")"
  else
    start=$(date +%s%N)
    timeout -k 5 60 "${MPIRUN[@]}" -np 2 "$dir/pingpong" >"$dir/run.out" 2>"$dir/run.err"
    local status=$?
    took=$((($(date +%s%N) - start) / 1000000))
    if [ $status = 0 ] && grep -q "rank 0 of 2 got 42" "$dir/run.out" && grep -q "rank 1 of 2 got 42" "$dir/run.out"; then
      MPI_CHECK="2 local ranks connect (mpirun --oversubscribe -np 2, $took ms)"
      return 0
    fi
    # Open MPI's first line that says what went wrong, without its frames.
    error=$(grep -v -E '^[-*= ]*$|^\[|^ *$' "$dir/run.err" | head -n 1)
    [ $status = 124 ] && error="no answer within 60 s"
    error="exit status $status: ${error:-no message}"
  fi
  settings=$(env | grep -E '^(OMPI_MCA_|PMIX_MCA_|PRTE_MCA_)' | grep -v '^OMPI_MCA_btl_vader_single_copy_mechanism=none$' | sort | paste -sd ' ' -)
  MPI_CHECK="Open MPI cannot run and connect 2 local ranks here (mpirun --oversubscribe -np 2: $error);"
  MPI_CHECK+=" Open MPI settings in the environment: ${settings:-none}; to run the MPI cases anyway: TEST_MPI=1"
  [ -n "$settings" ] && MPI_CHECK+=", or unset those settings"
  return 1
}
if [ $HAVE_MPI = 1 ] && [ -z "${LIST:-}" ] && [ "${TEST_MPI:-}" != 1 ] && ! mpi_preflight; then
  HAVE_MPI=0
  NO_MPI=$MPI_CHECK
fi
[ "${TEST_MPI:-}" = 1 ] && [ $HAVE_MPI = 1 ] && MPI_CHECK="not checked (TEST_MPI=1)"

# tracked_files PATH...: the files under these paths (relative to $ROOT)
# that git tracks or would track, one per line; where $ROOT is not the top
# of a git checkout (a copy, or a folder that another repository ignores,
# where git lists nothing), every file but its build outputs
# (tests/lib/tree_files.sh).
. "$ROOT/tests/lib/tree_files.sh"
tracked_files() { (cd "$ROOT" && tree_files "$@"); }

# The GPUs the real cases get: every GPU, or those of the caller's
# CUDA_VISIBLE_DEVICES (kept as TEST_GPUS by environment.sh), counted as
# CUDA reads the list: up to its first entry that names no GPU.
NGPUS=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  NGPUS=$(nvidia-smi -L | grep -c '^GPU ')
  if [ -n "${TEST_GPUS+set}" ]; then
    all=$NGPUS NGPUS=0
    for entry in ${TEST_GPUS//,/ }; do
      if [[ $entry =~ ^[0-9]+$ ]] && [ "$entry" -lt "$all" ]; then :
      elif [[ $entry == GPU-* ]] && nvidia-smi -L | grep -qF "UUID: $entry"; then :
      else break
      fi
      NGPUS=$((NGPUS + 1))
    done
  fi
fi
# The real programs' cases on GPUs (tests/suites/90-gpu.sh, 91-python.sh)
# run under `make test-gpu` (TEST_GPU=1, tools/check_gpu_machine.sh):
# `make test` is the same suite on a GPU machine as on one without.
# GPU_CASES_SKIPPED says why they do not run here, or is empty.
if [ "$NGPUS" = 0 ]; then
  GPU_CASES_SKIPPED="no GPU visible (nvidia-smi lists none): the real programs ran only up to the GPU check"
elif [ "${TEST_GPU:-0}" != 1 ]; then
  GPU_CASES_SKIPPED="make test-gpu runs the cases on this machine's $NGPUS GPU(s)"
else
  GPU_CASES_SKIPPED=""
fi
# gpu_run ARGS...: `run` for a real program on the GPUs lent to the suite.
gpu_run() {
  if [ -n "${TEST_GPUS+set}" ]; then
    CUDA_VISIBLE_DEVICES=$TEST_GPUS run "$@"
  else
    run "$@"
  fi
}

mpi_cases() { # mpi_cases NAME: 0 if MPI cases can run, else reports a skip
  [ $HAVE_MPI = 1 ] && return 0
  skip "$1" "$NO_MPI"
  return 1
}

# expected PROGRAM NRANKS [ORACLE OPTIONS]: the whole stdout of a good run
# (--count N, --mode pthread|mpi, --gpus G, --shared-sms S).
expected() {
  python3 "$ROOT/tests/oracles/expected_output.py" "$@"
}

# sim_run VARIANT PROGRAM NRANKS [ARGS...]: runs a simulated program on
# NRANKS ranks (threads, or mpirun for *-mpi variants); sets $status.
sim_run() {
  local variant=$1 prog=$2 n=$3
  shift 3
  need "programs-$variant"
  if [[ $variant == asan-mpi ]]; then
    # LeakSanitizer would list Open MPI's own allocations; the simulation's
    # leak check still covers every CUDA/NCCL object, and asan-pthread runs
    # LeakSanitizer over the examples' code.
    ASAN_OPTIONS=detect_leaks=0 SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np "$n" "$B/$variant/$prog" "$@"
  elif [[ $variant == *mpi ]]; then
    SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np "$n" "$B/$variant/$prog" "$@"
  else
    SIM_DIR=$TMPDIR NTHREADS=$n run "$B/$variant/$prog" "$@"
  fi
}

# job_ranks JOB PROGRAM: the processes of the simulated MPI PROGRAM under
# the process JOB, one per line (only that job's: other cases run the same
# program at the same time).
job_ranks() {
  local exe q
  exe=$(realpath "$B/sim-mpi/$2")
  for q in $(descendants "$1"); do
    [ "$(readlink "/proc/$q/exe" 2>/dev/null)" = "$exe" ] && echo "$q"
  done
}

# mpi_signal_rank PROGRAM RANK SIGNAL VAR=VALUE MPIRUN-ARGS...: runs
# mpirun with the simulation (VAR=VALUE in its environment, a SIM_HANG), and
# once the hang is injected sends SIGNAL to rank RANK's process; waits for
# the job and sets $status.
mpi_signal_rank() {
  local prog=$1 rank=$2 sig=$3 setting=$4 job pid="" q i
  shift 4
  need programs-sim-mpi
  [ -z "$unbuilt" ] || { run true; return; }
  env "$setting" SIM_DIR="$TMPDIR" timeout -k 5 "$TIMEOUT" "${MPIRUN[@]}" "$@" >"$f.out" 2>"$f.err" &
  job=$!
  for ((i = 0; i < 100; i++)); do
    grep -qs "ncclsim: injected hang" "$f.err" && break
    sleep 0.1
  done
  # Only this job's ranks (job_ranks); mpirun's own environment has no
  # rank.
  for q in $(job_ranks "$job" "$prog"); do
    tr '\0' '\n' <"/proc/$q/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" && pid=$q
  done
  if [ -n "$pid" ]; then
    kill -"$sig" "$pid"
  else
    why+="found no process of rank $rank to send SIG$sig; "
  fi
  wait "$job"
  status=$?
}

# shared_run VARIANT PROGRAM NRANKS NGPUS VERSION [ARGS...]: sim_run with
# NGPUS simulated GPUs shared by the ranks, NCCL VERSION (a code: 23007).
shared_run() {
  local variant=$1 prog=$2 n=$3 g=$4 v=$5
  shift 5
  SIM_DEVICES=$g SIM_NCCL_VERSION=$v NCCL_MULTI_RANK_GPU_ENABLE=1 sim_run "$variant" "$prog" "$n" "$@"
}

mode_of() { [[ $1 == *mpi ]] && echo mpi || echo pthread; } # VARIANT

# want_real_output EXPECTED: a real run's stdout is EXPECTED (the oracle's
# --no-report) followed by a report of what ran that measured something
# (what it says depends on the machine: see the GPU logs).
want_real_output() {
  grep -v -E '^(What ran|Why not the copy engines|Why no symmetric kernel): ' "$f.out" >"$f.lesson"
  diff -u "$1" "$f.lesson" >"$f.diff" ||
    why+="stdout before the report differs from the expected output (see $f.diff); "
  grep -q '^What ran: ' "$f.out" || why+="no 'What ran:' line; "
  no_out "What ran: not measured"
}
