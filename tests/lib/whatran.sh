# What the suites of tools/whatran share (63-whatran.sh,
# 66-whatran-torch.sh): the preload and the programs built against
# the simulation as a shared library (tests/Makefile's whatran-programs),
# and programs built as a user builds them. Sourced by those suites.
S=$B/simso
# The flags a user's program is built with here (nccl.h's and CUDA's headers).
own_cflags=(-std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I"$(dirname "$SUITE_NCCL_H")"
  -idirafter "${CUDA_HOME:-/usr/local/cuda}/include")

# preloaded [ENV=VALUE...] -- COMMAND...: runs COMMAND without the preload
# (its stdout kept as $f.plain, its status as $plain_status), then with it.
preloaded() {
  while [ "$1" != -- ]; do local -x "$1"; shift; done
  shift
  local -x SIM_DIR=$TMPDIR
  need whatran-programs
  run "$@"
  plain_status=$status
  cp "$f.out" "$f.plain"
  LD_PRELOAD="$S/libwhatran.so" run "$@"
}
# The program's own output and status, unchanged by the preload.
unchanged() {
  [ "$status" = "$plain_status" ] || why+="exit status $status under the preload, $plain_status without; "
  cmp -s "$f.out" "$f.plain" || why+="stdout differs from a run without the preload; "
}
# tools/simulate.sh --preload: a program of the user's own, built against
# libnccl.so and libcudart.so as on a GPU machine (here: links to the
# simulation's library, named as NCCL's and CUDA's are).
own=$B/own-program
own_program() { # NAME CFLAGS...: torch_style.c built as a user builds it
  local name=$1
  shift
  own_program_of torch_style.c "$name" "$@"
}
own_program_of() { # SOURCE NAME CFLAGS...: a program of tests/whatran, the same way
  local source=$1 name=$2
  shift 2
  mkdir -p "$own/libs"
  for so in libnccl.so libcudart.so; do ln -sfn "$S/libncclsim.so" "$own/libs/$so"; done
  # --no-as-needed: both names lead to one library here, and each must stay.
  cc "${own_cflags[@]}" "$@" -o "$own/$name" "$ROOT/tests/whatran/$source" -L"$own/libs" \
    -Wl,--no-as-needed -lnccl -lcudart -pthread
}
