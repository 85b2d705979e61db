#!/usr/bin/env bash
# make test-gpu's PyTorch step (tools/check_gpu_machine.sh): torchrun of
# tests/whatran/torch_collectives.py, 1 process, without and with
# LD_PRELOAD=LIBWHATRAN: the same output and exit status, and under the
# preload a What ran line naming each rank's communicator; where PyTorch's
# NCCL is 2.30 or newer, 2 processes sharing one GPU the same way
# (NCCL_MULTI_RANK_GPU_ENABLE=1). One line per step ("ok   ...",
# "FAIL ...", "skip ..."); each run's output in DIR/torch-*.
#   [TORCH_PYTHON=python] tests/whatran/torch_check.sh DIR LIBWHATRAN
# PyTorch: TORCH_PYTHON's, else the first of /opt/torch/.venv/bin/python
# and python3 that imports torch; with none, one skip line saying so.
# Exit status: 0 if no step failed (skips too), 1 if one did.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=$1 lib=$2
limit=${CHECK_TIMEOUT:-120}
if [ -n "${TORCH_PYTHON:-}" ]; then tried=("$TORCH_PYTHON"); else tried=(/opt/torch/.venv/bin/python python3); fi
python=""
for p in "${tried[@]}"; do
  "$p" -c 'import torch' >/dev/null 2>&1 && { python=$p; break; }
done
if [ -z "$python" ]; then
  echo "skip PyTorch under the preload: no PyTorch here (${tried[*]}: none imports torch; TORCH_PYTHON=python names another)"
  exit 0
fi
failed=0
step() { # NAME STATUS [DETAIL]
  if [ "$2" = 0 ]; then echo "ok   $1${3:+: $3}"; else failed=1; echo "FAIL $1: ${3:-exit $2}"; fi
}
if [ ! -e "$lib" ]; then
  step "PyTorch under the preload" 1 "no $lib to preload (make -C tools whatran builds it)"
  exit 1
fi

# torchrun LOG N [VAR=VALUE...]: torch_collectives.py on N processes, its
# output in LOG.out and LOG.err; returns its status.
torchrun() {
  local log=$1 n=$2
  shift 2
  env "$@" timeout -k 5 "$limit" "$python" -m torch.distributed.run --standalone --nproc_per_node "$n" \
    tests/whatran/torch_collectives.py >"$log.out" 2>"$log.err"
}
# compare NAME N [VAR=VALUE...]: the plain and the preloaded run, as steps.
compare() {
  local name=$1 n=$2 plain=$out/torch-${1// /-} preloaded=$out/torch-${1// /-}-preloaded status r missing=""
  shift 2
  torchrun "$plain" "$n" "$@"
  status=$?
  for r in $(seq 0 $((n - 1))); do
    grep -qx "rank $r of $n: all_reduce ok, all_gather ok" "$plain.out" || missing+="rank $r "
  done
  [ $status != 0 ] || [ -z "$missing" ] || status=1
  step "PyTorch, $name" $status "$( [ -n "$missing" ] && echo "no right result from ${missing% }: ")$(tail -n 1 "$plain.out")"
  torchrun "$preloaded" "$n" "$@" LD_PRELOAD="$lib"
  r=$?
  # (the ranks print in any order)
  if [ $r != $status ]; then step "PyTorch, $name, under the preload" 1 "exit $r, without it $status"
  elif ! diff <(sort "$plain.out") <(sort "$preloaded.out") >"$preloaded.diff"; then
    step "PyTorch, $name, under the preload" 1 "its output differs from the plain run's ($preloaded.diff)"
  else step "PyTorch, $name, under the preload" 0 "the same output and exit status"
  fi
  missing=""
  for r in $(seq 0 $((n - 1))); do
    grep -qE "^What ran \(libwhatran\): communicator [0-9]+, $n ranks?, rank $r: AllReduce of 1 MiB" "$preloaded.err" ||
      missing+="rank $r "
  done
  step "PyTorch, $name: What ran names its communicator" "$([ -z "$missing" ] && echo 0 || echo 1)" \
    "$( [ -n "$missing" ] && echo "no line 'What ran (libwhatran): communicator K, $n rank(s), rank R: AllReduce of 1 MiB' for ${missing% } in $preloaded.err" ||
      grep -m 1 "^What ran (libwhatran): communicator" "$preloaded.err")"
}

compare "1 process" 1
code=$("$python" -c 'import torch; v = torch.cuda.nccl.version(); print(v[0] * 10000 + v[1] * 100 + v[2] if isinstance(v, tuple) else v)' 2>/dev/null)
if [ "${code:-0}" -ge 23000 ] 2>/dev/null; then
  gpu=${CUDA_VISIBLE_DEVICES:-0}
  compare "2 processes sharing a GPU" 2 NCCL_MULTI_RANK_GPU_ENABLE=1 CUDA_VISIBLE_DEVICES="${gpu%%,*}"
else
  echo "skip PyTorch, 2 processes sharing a GPU: PyTorch's NCCL is ${code:-unknown} (NCCL_VERSION_CODE), and sharing needs 2.30 (23000)"
fi
exit $failed
