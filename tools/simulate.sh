#!/usr/bin/env bash
# Runs a program on the test suite's simulation of CUDA and NCCL, to watch
# what it prints without a GPU. Nothing it prints is a measurement: the
# first line says so.
#   tools/simulate.sh [--mpi N] PROGRAM [OPTIONS...]
#   tools/simulate.sh [--mpi N] --lesson DIR [OPTIONS...]
#   tools/simulate.sh [--mpi N] --preload YOUR_PROGRAM [ARGS...]
# PROGRAM: allreduce_sm, allgather_ce, allreduce_lsa or allreduce_fast
# (their kernels run on the host, every GPU thread a fiber; they need an
# nccl.h >= 2.30.7: NCCL_HOME, whose include/ is enough; unset, CUDA_HOME's
# or the headers this checkout has: tests/build/lsa-nccl, a wheel in
# NCCL_WHEELS, default ~/.cache/nccl-wheels; stderr says which).
# --lesson DIR: a device API lesson folder copied out of this repository
# with its common/ beside it (DIR/c/main.cu, DIR/../common), your own
# kernel in it: built for the simulation
# from there (a compile error is the compiler's, under it what the
# simulation does not have), then run as PROGRAM is. The simulation checks
# what a GPU would not forgive: an access of a peer's window not ordered by
# LSA barriers (lsa-data-race), CTAs sharing a barrier, a CTA barrier one
# thread left (tests/README.md lists every rule, and what is simulated).
# --preload YOUR_PROGRAM: a program of your own, linked with libnccl.so and
# libcudart.so (shared: nvcc links the runtime statically unless given
# -cudart shared), run with the simulation standing in for both and
# tools/libwhatran.so preloaded (docs/what-ran/README.md): its What ran
# (libwhatran) lines, simulated; objects it leaves at exit are listed, not
# a violation (SIM_LEAKS=warn). It makes its own ranks; NTHREADS (default
# 4) is passed on to it, and is the number of simulated GPUs.
# Threads by default (NTHREADS=N ranks, default 4); --mpi N runs N MPI
# processes under mpirun (Open MPI needed). SIM_DEVICES=N simulated GPUs
# (default: one per rank); SIM_NCCL_VERSION the NCCL version it plays
# (2.30.7 or 23007; default: the headers'); SIM_HANG=CALL:RANK,
# SIM_FAIL=CALL:RANK and the other settings of tests/sim/sim.h. With the
# toolkit's cupti.h, What ran speaks from the simulation's CUPTI.
# Needs the CUDA toolkit's headers and nccl.h (CUDA_HOME, NCCL_HOME), not
# their libraries. Paths in OPTIONS are the caller's (--csv FILE). It
# builds into tests/build, or with an NCCL or CUDA other than the last
# make test's into tests/build/simulate/N, so that it can run beside a
# make test; an object a build cut short is built again.
# Exits as the program does; 1 when the build fails; 2 for a bad setting
# of its own; 70 when the simulation stops the program: a rule of CUDA or
# NCCL broken ("ncclsim: RULE VIOLATION [rule] ..." says which, where, and
# with a kernel's schedule seed: SIM_SEED=S repeats it), or a setting of
# tests/sim/sim.h refused (its message says which).
set -u
root=$(cd "$(dirname "$0")/.." && pwd) || exit 1
# make cannot name paths with spaces: work through a link without any.
. "$root/tests/lib/path_without_spaces.sh"
root=$(path_without_spaces "$root") || exit 1
export SUITE_ROOT=$root # (tests/Makefile builds through it, not the real path)
usage() { sed -n '2,/^set -u/p' "$root/tools/simulate.sh" | sed '$d; s/^# \{0,1\}//'; }
bad() { echo "simulate.sh: $*" >&2; exit 2; }
whole_number() { [[ $1 =~ ^[0-9]+$ ]] && [ ${#1} -le 4 ] && [ "$1" -ge 1 ]; }

mpi=""
if [ "${1:-}" = --mpi ]; then
  whole_number "${2:-}" || bad "--mpi takes a number of MPI processes from 1 to 9999, not '${2:-}'"
  mpi=$2
  shift 2
fi
lesson=""
case ${1:-} in
  allreduce_sm | allgather_ce | allreduce_lsa | allreduce_fast) ;;
  --lesson)
    [ -e "${2:-}/c/main.cu" ] || bad "--lesson takes a lesson folder with c/main.cu (a copy of 03_allreduce_lsa, say), not '${2:-}'"
    [ -e "${2:-}/../common/example.mk" ] || bad "--lesson ${2:-}: no common/ beside it (${2:-}/../common/example.mk): copy common/ with the lesson"
    lesson_named=$(cd "$2" && pwd)
    lesson=$(path_without_spaces "$lesson_named") || exit 1
    shift
    set -- allreduce_lsa "${@:2}"
    ;;
  --preload)
    preload=$(type -P -- "${2:-}") && [ -x "$preload" ] ||
      bad "--preload takes a program of your own to run, not '${2:-}'"
    needed=$(readelf -d "$preload" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    [[ $needed == *libnccl.so* ]] ||
      bad "--preload $2: it does not load libnccl.so (it needs: ${needed:-nothing readelf could read}); link it with -lnccl"
    [[ $needed == *libcudart.so* ]] ||
      bad "--preload $2: it has the CUDA runtime linked in statically (it needs: $needed): the simulation can stand in only for libcudart.so; link it with -lcudart (nvcc: -cudart shared)"
    rpath=$(readelf -d "$preload" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')
    [ -z "$rpath" ] ||
      bad "--preload $2: its RPATH ($rpath) comes before the simulation's libraries; link it with -Wl,--enable-new-dtags (RUNPATH), as Debian's and Ubuntu's linkers do by default"
    shift 2
    set -- preload "$@"
    ;;
  -h | --help) usage; exit 0 ;;
  *) bad "'${1:-}' is not a program here: use allreduce_sm, allgather_ce, allreduce_lsa or allreduce_fast, --lesson DIR or --preload YOUR_PROGRAM (tools/simulate.sh --help)" ;;
esac
program=$1
shift

# Its own settings, checked before anything runs.
if [ -n "$mpi" ]; then
  ranks=$mpi
  command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
    bad "--mpi needs Open MPI's mpirun and mpicc (Debian: apt-get install openmpi-bin libopenmpi-dev)"
else
  export NTHREADS=${NTHREADS:-4}
  whole_number "$NTHREADS" || bad "NTHREADS='$NTHREADS': use a number of ranks from 1 to 9999"
  ranks=$NTHREADS
fi
export SIM_DEVICES=${SIM_DEVICES:-$ranks}
whole_number "$SIM_DEVICES" || bad "SIM_DEVICES='$SIM_DEVICES': use a number of simulated GPUs from 1 to 9999"
if [ -n "${SIM_NCCL_VERSION:-}" ]; then
  if [[ $SIM_NCCL_VERSION =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
    SIM_NCCL_VERSION=$((BASH_REMATCH[1] * 10000 + 10#${BASH_REMATCH[2]} * 100 + 10#${BASH_REMATCH[3]}))
  fi
  [[ $SIM_NCCL_VERSION =~ ^2[0-9]{4}$ ]] ||
    bad "SIM_NCCL_VERSION='$SIM_NCCL_VERSION': use a version such as 2.30.7, or its code 23007"
  export SIM_NCCL_VERSION
fi

# The simulated build: with the simulation's CUPTI where cupti.h is there.
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -e "$cuda/include/cupti.h" ] && flavour=simcupti || flavour=sim
variant=$flavour-$([ -n "$mpi" ] && echo mpi || echo pthread)
target=programs-$variant
# Builds go under tests/build, one at a time with the test suite's (its
# lock), each NCCL and CUDA in a folder of its own: tests/build itself for
# those the suite last built with (tests/build/homes), else
# tests/build/simulate/N, so that a run with other ones, beside make test,
# rebuilds nothing of the suite's.
lock=$root/tests/build/.need.lock
mkdir -p "$root/tests/build"
device_api=$([ "$program" = allreduce_lsa ] || [ "$program" = allreduce_fast ] && echo 1)
homes="NCCL_HOME=${NCCL_HOME:-}
CUDA_HOME=$cuda"
if [ -n "$device_api" ]; then
  # The device API needs nccl.h >= 2.30.7: NCCL_HOME's, else CUDA_HOME's;
  # with NCCL_HOME unset, else headers this checkout has already (below).
  code_of() { sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$1/include/nccl.h" 2>/dev/null | head -n 1; }
  new_enough() { [ -n "$1" ] && [ "$(code_of "$1")" -ge 23007 ] 2>/dev/null; }
  # found_headers: an nccl.h >= 2.30.7 this checkout has, as "DIR<tab>WHOSE":
  # the test suite's (tests/build/lsa-nccl/VERSION/nvidia/nccl), else the
  # newest NCCL wheel in NCCL_WHEELS (default ~/.cache/nccl-wheels, where
  # the suite keeps those it downloads), its headers unpacked there.
  found_headers() {
    local dir best="" whl version
    for dir in "$root"/tests/build/lsa-nccl/*/nvidia/nccl; do
      new_enough "$dir" && { [ -z "$best" ] || [ "$(code_of "$dir")" -gt "$(code_of "$best")" ]; } && best=$dir
    done
    [ -n "$best" ] && { printf '%s\t%s\n' "$best" "the test suite's copy"; return; }
    whl=$(for w in "${NCCL_WHEELS:-$HOME/.cache/nccl-wheels}"/nvidia_nccl_cu*-2.*.whl; do
      [ -e "$w" ] && printf '%s\t%s\n' "$(basename "$w" | cut -d- -f2)" "$w"; done | sort -V | tail -n 1 | cut -f2)
    [ -n "$whl" ] || return 1
    version=$(basename "$whl" | cut -d- -f2) dir=$root/tests/build/lsa-nccl/$version
    python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("nvidia/nccl/include/")])' "$whl" "$dir" &&
      new_enough "$dir/nvidia/nccl" && printf '%s\t%s\n' "$dir/nvidia/nccl" "the wheel $whl"
  }
  home="" from=""
  if new_enough "${NCCL_HOME:-}"; then home=$NCCL_HOME from="NCCL_HOME"
  elif new_enough "$cuda"; then home=$cuda from="CUDA_HOME"
  elif [ -z "${NCCL_HOME:-}" ]; then
    home=$({ flock 9 && found_headers; } 9>>"$lock") && from=${home#*	} home=${home%%	*}
  fi
  [ -n "$home" ] || bad "$program needs an nccl.h >= 2.30.7 (the device API), and NCCL_HOME=${NCCL_HOME:-(unset)} and $cuda/include have none$([ -z "${NCCL_HOME:-}" ] && echo ", nor the test suite's tests/build/lsa-nccl, nor ${NCCL_WHEELS:-~/.cache/nccl-wheels}"): set NCCL_HOME to a newer NCCL: python3 -m pip download --no-deps nvidia-nccl-cu13==2.30.7 -d nccl-wheel && unzip -q nccl-wheel/*.whl -d nccl-wheel, then NCCL_HOME=\$PWD/nccl-wheel/nvidia/nccl"
  code=$(code_of "$home")
  echo "simulate.sh: $program with nccl.h $((code / 10000)).$((code % 10000 / 100)).$((code % 100)) of $from ($home)" >&2
  # (make cannot name a path with a space: through a link without one)
  LSA_NCCL_HOME=$(path_without_spaces "$home") || exit 1
  export LSA_NCCL_HOME
  homes="NCCL_HOME=
LSA_NCCL_HOME=$LSA_NCCL_HOME
CUDA_HOME=$cuda"
  variant=$([ "$program" = allreduce_fast ] && echo fast || echo lsa)-$([ -n "$mpi" ] && echo mpi || echo pthread)
fi
build=$root/tests/build
if [ "$(grep -cxF -f <(echo "$homes") "$build/homes" 2>/dev/null)" != "$(echo "$homes" | wc -l)" ]; then
  build=$root/tests/build/simulate/$(printf '%s' "$homes" | cksum | cut -d' ' -f1)
  mkdir -p "$build" && printf '%s\n' "$homes" >"$build/homes"
fi
if [ "$program" = preload ]; then
  # The simulation as libnccl.so and libcudart.so, and libwhatran on it.
  target="$build/simso/libncclsim.so $build/simso/libwhatran.so"
elif [ -n "$device_api" ]; then
  target=$build/$variant/$program
fi
log=$build/simulate-build.log
# simulated_build: make of the target into $build, under the lock.
# (allreduce_lsa, allreduce_fast: the simulation stands in for NCCL's
# library, and only LSA_NCCL_HOME's headers are used; NCCL_HOME may have
# nothing else.)
simulated_build() {
  ([ -n "$device_api" ] && unset NCCL_HOME
    # shellcheck disable=SC2086 # --preload: two targets
    flock "$lock" make --no-print-directory -s -C "$root/tests" B="$build" $target) >"$log" 2>&1
}
if ! simulated_build; then
  # An object an interrupted build left cut short: made again.
  broken=$(sed -n 's/^.*[ :]\([^ :]*\.\(o\|a\|so\)\): file \(format \)\{0,1\}\(not recognized\|truncated\|too short\).*/\1/p' "$log" | sort -u)
  if [ -n "$broken" ]; then
    echo "simulate.sh: building again: $(echo $broken) was cut short (a build interrupted before)" >&2
    rm -f $broken
    simulated_build
  else false
  fi || {
    why=$(grep -m1 -E 'error|No such file|not found|Error [0-9]' "$log" | sed 's/^[^:]*make[^:]*: //')
    grep -qE 'fatal error: [^ ]*\.h: No such file' "$log" &&
      why+=" (it needs the CUDA toolkit's headers in $cuda/include, CUDA_HOME, and nccl.h: NCCL_HOME)"
    echo "simulate.sh: building the simulated ${program/#preload/libraries for --preload} failed: ${why:-see $log} (the whole log: $log)" >&2
    exit 1
  }
fi
if [ -n "$lesson" ]; then
  # The copied lesson, built by its own Makefile as the simulated lesson is
  # (tests/Makefile, lsa-*), into the copy's build-sim/.
  lesson_log=$lesson/build-sim/build.log
  mkdir -p "$lesson/build-sim"
  if ! (unset NCCL_HOME
    make --no-print-directory -s -C "$lesson/c" MPI=$([ -n "$mpi" ] && echo 1 || echo 0) \
      NCCL_CPPFLAGS=-I"$LSA_NCCL_HOME/include" BUILD_DIR="$lesson/build-sim/obj" \
      BIN="$lesson/build-sim/$variant" CFLAGS="-O0 -g" LDFLAGS=-Wl,--wrap=set_error_rank \
      RUNTIME_LIBS="$build/lsa-pthread/sim.o" HAVE_CUPTI=0 \
      CU_COMPILE="$root/tests/sim/compile_cu.sh g++") >"$lesson_log" 2>&1; then
    grep -v '^make' "$lesson_log" >&2
    echo "simulate.sh: building $lesson_named/c for the simulation failed (above: the compiler's words; the whole log: $lesson_named/build-sim/build.log)" >&2
    exit 1
  fi
  program_path=$lesson/build-sim/$variant
else
  program_path=$build/$variant/$program
fi
SIM_DIR=$(mktemp -d) || exit 1
export SIM_DIR
trap 'rm -rf "$SIM_DIR"' EXIT
plural() { [ "$1" = 1 ] && echo "$1 $2" || echo "$1 $2s"; }
echo "# SIMULATED: no GPU ran this; tests/sim stands in for CUDA and NCCL ($(plural "$SIM_DEVICES" "simulated GPU"), $(plural "$ranks" rank)$([ -n "$mpi" ] && echo ", MPI processes"))"
if [ "$program" = preload ]; then
  as_real=$build/simso/as-real
  mkdir -p "$as_real"
  for so in libnccl.so libnccl.so.2 libcudart.so libcudart.so.12 libcudart.so.13; do
    ln -sfn ../libncclsim.so "$as_real/$so"
  done
  export SIM_LEAKS=warn LD_LIBRARY_PATH=$as_real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  set -- env LD_PRELOAD="$build/simso/libwhatran.so" "$preload" "$@"
else
  set -- "$program_path" "$@"
fi
if [ -n "$mpi" ]; then
  extra=()
  [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
  [ "$program" = preload ] && extra+=(-x LD_LIBRARY_PATH -x SIM_LEAKS)
  mpirun "${extra[@]}" --oversubscribe -np "$mpi" "$@"
else
  "$@"
fi
