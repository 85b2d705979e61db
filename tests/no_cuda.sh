#!/usr/bin/env bash
# A learner's route without a GPU or a CUDA install (`make test-no-cuda`):
# tools/simulate.sh built from the headers of two pip wheels alone,
# nvidia-cuda-runtime (cuda_runtime.h) and nvidia-nccl-cu13 (nccl.h),
# unpacked into a scratch folder and named by CUDA_HOME and NCCL_HOME, in a
# copy of the checkout at a path with a space. The wheels are kept in NCCL_WHEELS (default
# ~/.cache/nccl-wheels, shared with the NCCL matrix of make test) and
# downloaded with pip when missing; without them (no network) it skips,
# saying why, unless TEST_NO_CUDA_REQUIRED=1, which fails instead.
# Output is TAP, ending "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib/environment.sh
ROOT=$PWD
B=$ROOT/tests/build
LOG=$B/no-cuda-logs
TIMEOUT=${TEST_TIMEOUT:-240}
FILTER=${TEST_FILTER:-}
LIST=${TEST_LIST:-}
NCCL_WHEEL_VERSION=2.32.6 # the newest of the NCCL matrix (tests/suites/15-nccl-matrix.sh)
. tests/lib/tap.sh
# Both programs at 1, 2 and 8 ranks, as threads and as MPI processes.
CASES=""
for p in allreduce_sm allgather_ce; do
  for n in 1 2 8; do CASES+=" no-cuda/simulate-threads/$p-$n no-cuda/simulate-mpi/$p-$n"; done
done
if [ -n "$LIST" ]; then
  for c in $CASES; do begin "$c"; done
  exit 0
fi
rm -rf "$LOG" && mkdir -p "$LOG/tmp"
export TMPDIR=$LOG/tmp
. tests/lib/programs.sh

WHEELS=${NCCL_WHEELS:-$HOME/.cache/nccl-wheels}
mkdir -p "$WHEELS"
wheel() { ls "$WHEELS"/"$1"-*.whl 2>/dev/null | head -n 1; }
reason=""
for spec in "nvidia_cuda_runtime nvidia-cuda-runtime" "nvidia_nccl_cu13-$NCCL_WHEEL_VERSION nvidia-nccl-cu13==$NCCL_WHEEL_VERSION"; do
  read -r file req <<<"$spec"
  [ -n "$(wheel "$file")" ] && continue
  timeout 300 python3 -m pip download -q --no-deps -d "$WHEELS" "$req" >>"$LOG/download.log" 2>&1 ||
    reason+="${reason:+; }pip download $req failed: $(tail -n 1 "$LOG/download.log")"
done
if [ -n "$reason" ]; then
  for c in $CASES; do skip "$c" "$reason"; done
  echo "1..$number"
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "${TEST_NO_CUDA_REQUIRED:-}" = 1 ] && { echo "no_cuda.sh: $reason" >&2; exit 1; }
  exit 0
fi

# The wheels' files, and a copy of the checkout (its own build folders).
site=$TMPDIR/site
repo="$TMPDIR/my checkout" # (a path with a space, as many users have)
mkdir -p "$site" "$repo"
python3 -m zipfile -e "$(wheel nvidia_cuda_runtime)" "$site" &&
  python3 -m zipfile -e "$(wheel "nvidia_nccl_cu13-$NCCL_WHEEL_VERSION")" "$site" ||
  { echo "no_cuda.sh: cannot unpack the wheels" >&2; exit 1; }
tracked_files . | (cd "$ROOT" && tar -cf - -T -) | tar -xf - -C "$repo"
echo "# CUDA_HOME=$site/nvidia/cu13 ($(ls "$site/nvidia/cu13/include" | wc -l) headers, no toolkit); NCCL_HOME=$site/nvidia/nccl (nccl.h $NCCL_WHEEL_VERSION)"
# In the copy, with only the wheels for CUDA and NCCL: no CUDA folder on
# PATH or LD_LIBRARY_PATH.
path=$(tr ':' '\n' <<<"$PATH" | grep -v -i cuda | paste -sd:)
LEARNER=(env -C "$repo" -u LD_LIBRARY_PATH PATH="$path" CUDA_HOME="$site/nvidia/cu13" NCCL_HOME="$site/nvidia/nccl")

for c in $CASES; do
  p=${c##*/} && n=${p##*-} && p=${p%-*}
  case $c in
    */simulate-threads/*)
      begin "$c" || continue
      run "${LEARNER[@]}" NTHREADS="$n" tools/simulate.sh "$p" -n 64
      want_out "(${n} simulated GPU$([ "$n" = 1 ] || echo s), $n rank$([ "$n" = 1 ] || echo s))"
      ;;
    */simulate-mpi/*)
      mpi_cases "$c" && begin "$c" || continue
      run "${LEARNER[@]}" tools/simulate.sh --mpi "$n" "$p" -n 64
      want_out "MPI initialized: rank $((n - 1)) of $n"
      ;;
  esac
  want_status 0
  want_out "# SIMULATED: no GPU ran this"
  want_out "Results verified correctly"
  end
done
echo "1..$number"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
