#!/usr/bin/env bash
# The suite's kernel cases on a real GPU. Each kernel case of
# tests/suites/42-kernels.sh (the device API lesson's main.cu with its
# kernel replaced by one of tests/kernels/*.cu, and the case's edits made)
# is built with nvcc against NCCL_HOME (>= 2.30.7), then run RUNS times at
# each rank count of RANKS, as threads sharing the GPU(s)
# (NCCL_MULTI_RANK_GPU_ENABLE=1), each run within LIMIT seconds. It does
# not judge: it writes, per kernel, what each run did (verified, a wrong
# result with its verification line, another exit status, or past the
# limit, after which no more runs at that rank count) beside what the
# simulation says of it (correct, or the rule it
# names). docs/checks/ keeps such records.
#   NCCL_HOME=dir [CUDA_ARCH=90] [RUNS=5] [RANKS="2 4"] [LIMIT=30] [JOBS=4]
#     [PHASE=build|run|summary] tools/kernels_on_gpu.sh DIR [NAME...]
# DIR gets src/NAME/ (each case's main.cu and what the suite expects of
# it), build/, runs/ and summary.txt, one line per kernel and rank count.
# NAMEs: only those kernel cases (default: all). PHASE=build stops after
# the builds, PHASE=run runs what an earlier PHASE=build built, and
# PHASE=summary writes the summary of the runs made so far.
# Exit status: 0 when every kernel built and ran; 1 when one did not build;
# 2 with bad arguments, without NCCL_HOME or without a GPU.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
  -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") echo "usage: NCCL_HOME=dir tools/kernels_on_gpu.sh DIR [NAME...] (--help says more)" >&2; exit 2 ;;
esac
out=$1
shift
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2

# 1. The sources, as the suite makes them: its kernel_cases writes each
# case's main.cu and what it expects (kind, rule, floats per rank) under
# KERNEL_EXPORT instead of running it; nothing else of the suite runs.
rm -rf "$out/src"
(
  KERNEL_EXPORT=$out/src SMALL=4096 B=/nonexistent
  lsa_case() { return 1; } # the suite's own cases: none here
  begin() { return 1; }
  NGPUS=0
  # shellcheck source=../tests/suites/42-kernels.sh
  . "$ROOT/tests/suites/42-kernels.sh"
) || { echo "kernels_on_gpu.sh: writing the kernel cases' sources failed" >&2; exit 2; }
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(ls "$out/src")
for n in "${names[@]}"; do
  [ -f "$out/src/$n/case" ] || { echo "kernels_on_gpu.sh: no kernel case named '$n' (the names: ls $out/src)" >&2; exit 2; }
done
[ "${EXPORT_ONLY:-0}" = 1 ] && { echo "${#names[@]} kernel cases in $out/src"; exit 0; }

if [ -z "${NCCL_HOME:-}" ]; then
  echo "kernels_on_gpu.sh: NCCL_HOME is not set: it names the NCCL (>= 2.30.7) to build and run with" >&2
  exit 2
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "kernels_on_gpu.sh: no GPU here (nvidia-smi -L lists none)" >&2
  exit 2
fi

# 2. Builds, in parallel: each in a copy of the lesson's folder beside
# links to common/ and instruments/, as the lesson's Makefile expects.
arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)}
build_one() {
  local n=$1 w=$out/build/$1
  rm -rf "$w" && mkdir -p "$w/03_allreduce_lsa" &&
    cp -r "$ROOT/03_allreduce_lsa/c" "$w/03_allreduce_lsa/c" &&
    cp "$out/src/$n/main.cu" "$w/03_allreduce_lsa/c/main.cu" &&
    ln -s "$ROOT/common" "$w/common" && ln -s "$ROOT/instruments" "$w/instruments" &&
    make -s -C "$w/03_allreduce_lsa/c" NCCL_HOME="$NCCL_HOME" CUDA_ARCH="$arch" \
      BUILD_DIR="$w/obj" BIN="$w/program" >"$w/build.log" 2>&1
}
export -f build_one
export out NCCL_HOME arch ROOT
if [ "${PHASE:-all}" = all ] || [ "${PHASE:-all}" = build ]; then
  printf '%s\n' "${names[@]}" | xargs -P "${JOBS_BUILD:-$(nproc)}" -I{} bash -c 'build_one {} || echo "{}: did not build (see $out/build/{}/build.log)"' |
    tee "$out/build-failures.txt"
fi
built_all=$([ -s "$out/build-failures.txt" ] && echo 1 || echo 0)
[ "${PHASE:-all}" = build ] && exit "$built_all"

# 3. Runs. One line per run in runs/NAME-RANKS.txt: the exit status and the
# program's verification line (or its last line); the summary counts them.
mkdir -p "$out/runs"
run_one() { # NAME
  local n=$1 r i log status line count
  count=$(sed -n 's/^count //p' "$out/src/$n/case")
  [ -x "$out/build/$n/program" ] || return 0
  for r in ${RANKS:-2 4}; do
    : >"$out/runs/$n-$r.txt"
    for i in $(seq 1 "${RUNS:-5}"); do
      log=$out/runs/$n-$r-$i.log
      NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$r timeout -k 5 "${LIMIT:-30}" "$out/build/$n/program" -n "$count" >"$log" 2>&1
      status=$?
      line=$(grep -m 1 'Results verif' "$log" || grep -m 1 -iE 'failed|error' "$log" || tail -n 1 "$log")
      [[ $line == *"verification failed"* ]] && line+=" ($(grep -m 1 '^Verification' "$log"))"
      echo "$status $line" >>"$out/runs/$n-$r.txt"
      # (after a run past the limit, none more at this rank count)
      if [ "$status" = 124 ] || [ "$status" = 137 ]; then break; fi
    done
  done
}
export -f run_one
export RUNS RANKS LIMIT 2>/dev/null
[ "${PHASE:-all}" = summary ] || printf '%s\n' "${names[@]}" | xargs -P "${JOBS:-4}" -I{} bash -c 'run_one {}'

# 4. The summary: per kernel and rank count, what the suite expects and
# what the runs did.
{
  printf '# %s; NCCL_HOME=%s; %s runs per rank count, %s at a time, limit %s s\n' \
    "$(nvidia-smi -L | head -n 1)" "$NCCL_HOME" "${RUNS:-5}" "${JOBS:-4}" "${LIMIT:-30}"
  printf '# kernel | simulation expects | ranks | verified | wrong result | past the limit | other exit | a wrong line\n'
  for n in "${names[@]}"; do
    kind=$(sed -n 's/^kind //p' "$out/src/$n/case") rule=$(sed -n 's/^rule //p' "$out/src/$n/case")
    expects=$([ "$kind" = correct ] && echo "verified" || echo "stopped ($rule)")
    if [ ! -x "$out/build/$n/program" ]; then echo "$n | $expects | - | did not build"; continue; fi
    for r in ${RANKS:-2 4}; do
      f=$out/runs/$n-$r.txt
      [ -s "$f" ] || { echo "$n | $expects | $r | not run"; continue; }
      ok=$(grep -c '^0 Results verified correctly' "$f")
      wrong=$(grep -c 'Results verification failed' "$f")
      hung=$(grep -Ec '^(124|137) ' "$f")
      other=$(($(wc -l <"$f") - ok - wrong - hung))
      bad=$(grep -m 1 -v '^0 Results verified correctly' "$f" | cut -c1-160)
      echo "$n | $expects | $r | $ok | $wrong | $hung | $other | ${bad:--}"
    done
  done
} >"$out/summary.txt"
cat "$out/summary.txt"
exit "$built_all"
