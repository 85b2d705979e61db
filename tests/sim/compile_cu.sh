#!/usr/bin/env bash
# CU_COMPILE of the simulated builds (tests/Makefile): compiles a lesson's
# main.cu as host C++ against the simulation's nccl_device.h (tests/sim/
# include), its <<<...>>> launches rewritten to ncclsim_launcher(...)(...)
# with every line kept where it was, so that messages name main.cu's lines.
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
# NAME<<<CONFIG>>>( becomes ncclsim_launcher("NAME", NAME, CONFIG)( ; a
# #line directive keeps the file's name in messages.
{ printf '#line 1 "%s"\n' "$src"
  perl -0pe 's/(\w+)\s*<<<(.*?)>>>\s*\(/ncclsim_launcher("$1", $1, $2)(/gs' "$src"; } >"$rewritten"
# The C flags' -std=c11 and the like do not apply to C++; the warnings
# stay. -Wno-missing-field-initializers as nvcc's build (common/example.mk).
flags=()
for a in "${args[@]}"; do
  case $a in -std=*) ;; *) flags+=("$a") ;; esac
done
exec "$cxx" -x c++ -std=c++17 -I"$here/include" -Wall -Wextra -Werror \
  -Wno-missing-field-initializers "${flags[@]}" "$rewritten"
