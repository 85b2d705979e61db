#!/usr/bin/env bash
# CU_COMPILE of the simulated builds (tests/Makefile): compiles a lesson's
# main.cu as host C++ against the simulation's nccl_device.h (tests/sim/
# include), with every line kept where it was, so that messages name
# main.cu's lines:
#  - each <<<...>>> launch becomes ncclsim_launcher(...)(...);
#  - each `__shared__ T name;`, `__shared__ T name[N];` becomes a reference
#    to that object of the running CTA, and `extern __shared__ T name[];`
#    a pointer to the launch's dynamic shared memory;
#  - with -fsanitize=thread, so that the compiler calls the simulation
#    (tests/sim/tsan_hooks.c) before every access: the checks of window
#    memory (tests/sim/access.c).
# A name the simulation does not have, but NCCL's device headers (or CUDA)
# do, is said as "not simulated here: NAME" under the compiler's error.
#   compile_cu.sh CXX [FLAGS...] -c -o OUT main.cu
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cxx=$1
shift
args=("$@")
src=${args[$((${#args[@]} - 1))]}
unset "args[$((${#args[@]} - 1))]"
out=""
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = -o ] && out=${args[$((i + 1))]}
done
[ -n "$out" ] || { echo "compile_cu.sh: no -o OUT given" >&2; exit 2; }
rewritten=${out%.o}.sim.cc
type='[\w:<>,\s\*]+?'
{ printf '#line 1 "%s"\n' "$src"
  perl -0pe '
    s/(\w+)\s*<<<(.*?)>>>\s*\(/ncclsim_launcher("$1", $1, $2)(/gs;
    s/\bextern\s+__shared__\s+('"$type"')\s*(\w+)\s*\[\s*\]\s*;/$1 *const $2 = ncclsim_extern_shared<$1>();/g;
    s/\b__shared__\s+('"$type"')\s+(\w+)\s*((?:\[[^\]]*\])+)\s*;/$1 (&$2)$3 = ncclsim_shared<$1 $3>(__COUNTER__);/g;
    s/\b__shared__\s+('"$type"')\s+(\w+)\s*;/$1 &$2 = ncclsim_shared<$1>(__COUNTER__);/g;
    s/\b__shared__\b/ncclsim_not_simulated_here__a_form_of___shared___compile_cu_sh_does_not_rewrite/g;
  ' "$src"; } >"$rewritten"
# The C flags' -std=c11 and the like do not apply to C++; the warnings
# stay. -Wno-missing-field-initializers as nvcc's build (common/example.mk).
flags=()
nccl_device=""
for a in "${args[@]}"; do
  case $a in -std=*) ;; *) flags+=("$a") ;; esac
  case $a in -I*) [ -d "${a#-I}/nccl_device" ] && nccl_device=${a#-I}/nccl_device ;; esac
done
log=${out%.o}.sim.log
status=0
# -iquote: the lesson's own headers beside main.cu (04_allreduce_fast's
# kernels.cuh), which the rewritten copy no longer sits beside.
# -Wno-unknown-pragmas: nvcc's `#pragma unroll`, which g++ does not know.
LC_ALL=C "$cxx" -x c++ -std=c++17 -I"$here/include" -iquote "$(dirname "$src")" -Wall -Wextra -Werror -Wno-unknown-pragmas \
  -Wno-missing-field-initializers -fsanitize=thread -MMD -MP "${flags[@]}" "$rewritten" 2>"$log" || status=$?
cat "$log" >&2
if [ $status != 0 ]; then
  # The names the compiler did not find, said once each.
  sed -n "s/.*error: '\([A-Za-z_][A-Za-z0-9_]*\)' \(was not declared\|has not been declared\|is not a member\|does not name a type\).*/\1/p" "$log" |
    sort -u | while read -r name; do
      if [ -n "$nccl_device" ] && grep -rqw -- "$name" "$nccl_device"; then
        echo "compile_cu.sh: not simulated here: $name (NCCL's device API has it; tests/README.md lists what the simulation runs)" >&2
      elif [[ $name == __* ]]; then
        echo "compile_cu.sh: not simulated here: $name (a CUDA device function the simulation does not have; tests/README.md lists what it runs)" >&2
      fi
    done
fi
exit $status
