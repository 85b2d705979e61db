# tools/whatran (libwhatran.so) on programs that use NCCL as PyTorch does:
# non-blocking communicators, a split, a graph capture
# (tests/whatran/torch_style.c), NCCL reached through a library opened
# with RTLD_LOCAL, and through tools/simulate.sh --preload the programs of
# a user's own (ncclCommInitAll, calls the simulation lacks). The
# program's own output and status must be those of a run without the
# preload; the simulation refuses what NCCL 2.30.7 refuses
# (tests/sim/nonblocking.h).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
  skip "whatran-torch/program-2" "no cupti.h in ${CUDA_HOME:-/usr/local/cuda}/include"
  return 0
fi
. tests/lib/whatran.sh

# A program in PyTorch's style (tests/whatran/torch_style.c): non-blocking
# communicators, polled until ready, a split one, a graph capture. The
# ranks of both communicators are NCCL's, asked once each was ready. As in
# NCCL 2.30.7 (src/group.cc, src/enqueue.cc, src/dev_runtime.cc), each
# collective at more than one rank returns ncclInProgress and NCCL's own
# thread launches its work, and each window's handle is written once a
# poll says ready: the windows are counted, the calls' work is "not seen"
# with that reason, and the replays launched by the program's own thread
# are the symmetric kernel. At one rank NCCL copies in the calling thread
# (a local copy; src/enqueue.cc, ncclLaunchOneRank); the split by parity
# makes one communicator per color: of 1 rank each at 2 ranks, of 2 at 4.
# want_torch_style_lines N: its lines at N ranks, from the case's $f.err.
want_torch_style_lines() {
  local n=$1 inprogress="not seen: the call returned ncclInProgress (a non-blocking communicator), and NCCL's own thread launched its work later, which no call of the program holds"
  local local_copy="a local copy (1 copy, 0 kernels)" windows="2 windows registered (1 MiB, 1 MiB)"
  local captured="AllReduce of 1 MiB (1 call): captured into a CUDA graph: its work runs at each replay"
  case $n in
  1)
    want_err "What ran (libwhatran): communicator 1, 1 rank, rank 0: AllReduce of 1 MiB (1 call): $local_copy; $captured; $windows"
    want_err "What ran (libwhatran): communicator 2, 1 rank, rank 0: AllGather of 1 MiB (1 call): $local_copy; 0 windows registered"
    want_err "What ran (libwhatran): CUDA graph replays (3 launches): $local_copy" ;;
  2 | 4)
    want_err "What ran (libwhatran): communicator 1, $n ranks, ranks 0-$((n - 1)): AllReduce of 1 MiB (1 call): $inprogress; $captured; $windows"
    for c in 2 3; do
      if [ "$n" = 2 ]; then
        want_err "What ran (libwhatran): communicator $c, 1 rank, rank 0: AllGather of 1 MiB (1 call): $local_copy; 0 windows registered"
      else
        want_err "What ran (libwhatran): communicator $c, 2 ranks, ranks 0-1: AllGather of 2 MiB (1 call): $inprogress; 0 windows registered"
      fi
    done
    want_err "What ran (libwhatran): CUDA graph replays ($((3 * n)) launches): NCCL's symmetric kernel AllReduce_RSxLD_AGxST_sum_f32" ;;
  esac
  [ "$(grep -c "^What ran (libwhatran): communicator" "$f.err")" = $((n == 1 ? 2 : 3)) ] ||
    why+="$(grep -c "^What ran (libwhatran): communicator" "$f.err") communicator lines, wanted $((n == 1 ? 2 : 3)); "
}
# torch_style at N ranks, with and without the preload.
torch_style_case() {
  local n=$1
  preloaded NTHREADS=$n -- "$S/torch_style"
  want_status 0
  unchanged
  want_out "rank $((n - 1)): done"
  no_err "NCCL WARN"
  want_torch_style_lines "$n"
  no_violation
}
if begin whatran-torch/program-1; then torch_style_case 1; end; fi
if begin whatran-torch/program-2; then torch_style_case 2; end; fi
if begin whatran-torch/program-4; then torch_style_case 4; end; fi
# Its version before, which used the split's result at once
# (tests/whatran/torch_style.c split_ready, its first line replaced),
# fails as NCCL 2.30.7's source says it must (src/init.cc: the split
# writes NULL, CommCheck's "comm argument is NULL", the parent in progress
# refused by ncclCommEnsureReady), with and without the preload; the
# AllGather into a buffer sized by the failed ncclCommCount (0 bytes) is
# caught.
old_torch_style=$B/simso/torch_style_split_unpolled
if begin whatran-torch/split-result-used-at-once-fails; then
  need whatran-programs
  sed 's/^  return ready(parent) && \*child != NULL && ready(\*child);$/  return (void)parent, ready(*child);/' \
    "$ROOT/tests/whatran/torch_style.c" >"$old_torch_style.c"
  [ "$(diff "$ROOT/tests/whatran/torch_style.c" "$old_torch_style.c" | grep -c '^>')" = 1 ] ||
    why+="split_ready's line was not found in torch_style.c; "
  cc "${own_cflags[@]}" -o "$old_torch_style" "$old_torch_style.c" -L"$S" -Wl,-rpath,"$S" -lncclsim -pthread ||
    why+="it did not build; "
  for n in 1 2 4; do
    for preload in "" "$S/libwhatran.so"; do
      NTHREADS=$n LD_PRELOAD=$preload SIM_DIR=$TMPDIR run "$old_torch_style"
      case=" at $n ranks${preload:+ under the preload}"
      [ "$status" = 70 ] || why+="exit status $status$case, wanted 70; "
      for warning in "ncclGetAsyncError : comm argument is NULL" "CommCount : comm argument is NULL" \
        "ncclCommWindowRegister: NCCL WARN Attempt to use communicator before the previous operation returned ncclSuccess"; do
        [ "$(grep -c -- "$warning" "$f.err")" = "$n" ] || why+="'$warning' $(grep -c -- "$warning" "$f.err") times$case, wanted $n; "
      done
      grep -q "RULE VIOLATION \[buffers-inside-allocations\] rank [0-9] in ncclAllGather: the receive buffer .* needs [0-9]* bytes, but it is not device memory" "$f.err" ||
        why+="no AllGather into a buffer of 0 bytes caught$case; "
    done
  done
  end
fi
# The same program as a library that a program opens with dlopen(RTLD_LOCAL),
# as Python opens PyTorch's libtorch_cuda.so with its libnccl.so.2: NCCL,
# the CUDA runtime and CUPTI (here all the simulation's library) are in no
# global scope, and the preload finds them among the loaded objects.
if begin whatran-torch/dlopen-rtld-local-program; then
  preloaded NTHREADS=4 -- "$S/dlopen_style" "$S/libtorch_style.so" torch_style_main
  want_status 0
  unchanged
  want_out "rank 3: done"
  want_torch_style_lines 4
  no_err "libwhatran:"
  no_violation
  end
fi
# tools/simulate.sh --preload: a program of the user's own, built against
# libnccl.so and libcudart.so as on a GPU machine (here: links to the
# simulation's library, named as NCCL's and CUDA's are), run with the
# simulation standing in for both and libwhatran preloaded. One copy of it
# leaves its stream at exit, as PyTorch-like programs do: CUDA frees it,
# so the program's output, exit status and report stay whole.
if begin whatran-torch/simulate-preload-own-program; then
  need whatran-programs
  own_program torch_style || why+="the program did not build; "
  NTHREADS=2 run "$ROOT/tools/simulate.sh" --preload "$own/torch_style"
  want_status 0
  want_out "# SIMULATED: no GPU ran this; tests/sim stands in for CUDA and NCCL (2 simulated GPUs, 2 ranks)"
  want_out "rank 1: done"
  want_err "What ran (libwhatran): communicator 1, 2 ranks, ranks 0-1: AllReduce of 1 MiB (1 call): not seen: the call returned ncclInProgress"
  want_err "2 windows registered (1 MiB, 1 MiB)"
  no_violation
  end
fi
if begin whatran-torch/simulate-preload-stream-left-at-exit; then
  need whatran-programs
  own_program torch_style_leaves_stream '-DcudaStreamDestroy(s)=cudaStreamSynchronize(s)' ||
    why+="the program did not build; "
  NTHREADS=2 run "$ROOT/tools/simulate.sh" --preload "$own/torch_style_leaves_stream"
  want_status 0
  want_out "rank 0: done"
  want_out "rank 1: done"
  want_err "ncclsim: LEAK: stream on device 0 never destroyed"
  want_err "ncclsim: 2 object(s) left at exit (SIM_LEAKS=warn: listed, not a violation)"
  want_err "What ran (libwhatran): communicator 1, 2 ranks, ranks 0-1"
  no_err "RULE VIOLATION"
  end
fi
# ncclCommInitAll (tests/whatran/init_all.c): a communicator of a rank per
# simulated GPU in one process, its ranks then each in a thread. What the
# simulation lacks says so, naming it, where the program calls it: one
# thread running every rank's collective (NCCL's usual use of
# ncclCommInitAll: the simulation runs a rank's queued work in the thread
# that waits for it), and a call it does not simulate (ncclBroadcast).
if begin whatran-torch/simulate-preload-init-all; then
  need whatran-programs
  own_program_of init_all.c init_all || why+="the program did not build; "
  NTHREADS=3 run "$ROOT/tools/simulate.sh" --preload "$own/init_all"
  want_status 0
  for r in 0 1 2; do want_out "rank $r: done"; done
  want_err "What ran (libwhatran): communicator 1, 3 ranks, ranks 0-2: AllReduce of 4 KiB (1 call): NCCL's regular kernels of the RING family (no symmetric kernel): no window: neither buffer is registered; 0 windows registered"
  no_violation
  end
fi
# init_all MODE WHAT: init_all.c's MODE, which the simulation does not run.
init_all_not_simulated() {
  need whatran-programs
  own_program_of init_all.c init_all || why+="the program did not build; "
  NTHREADS=2 run "$ROOT/tools/simulate.sh" --preload "$own/init_all" "$1"
  want_status 70
  want_err "ncclsim: not simulated here: $2"
  no_err "libwhatran:"
}
if begin whatran-torch/simulate-preload-init-all-one-thread-not-simulated; then
  init_all_not_simulated one-thread "one thread queuing collectives of ranks 0 and 1 of one communicator"
  end
fi
if begin whatran-torch/simulate-preload-init-all-broadcast-not-simulated; then
  init_all_not_simulated broadcast ncclBroadcast
  end
fi
if begin whatran-torch/simulate-preload-refuses-a-program-without-nccl; then
  run "$ROOT/tools/simulate.sh" --preload "$(type -P true)"
  want_status 2
  want_err "simulate.sh: --preload $(type -P true): it does not load libnccl.so"
  end
fi
# Linked with libnccl.so alone (the simulation's library holds CUDA's
# calls too), it stands for a program with the runtime linked in.
if begin whatran-torch/simulate-preload-refuses-a-static-runtime; then
  need whatran-programs
  mkdir -p "$own/libs" && ln -sfn "$S/libncclsim.so" "$own/libs/libnccl.so"
  cc "${own_cflags[@]}" -o "$own/static_runtime" "$ROOT/tests/whatran/torch_style.c" -L"$own/libs" -lnccl -pthread ||
    why+="the program did not build; "
  run "$ROOT/tools/simulate.sh" --preload "$own/static_runtime"
  want_status 2
  want_err "it has the CUDA runtime linked in statically"
  end
fi
