# tools/whatran (libwhatran.so): What ran for programs this suite did not
# build it into, preloaded before the simulation built as a shared library
# with its CUPTI (tests/Makefile's whatran-programs): a program in another
# style (tests/whatran/other_style.c), and the lessons built without their
# instruments (LEAN=1). The program's own output and status must be those
# of a run without the preload; the verdicts come from what each program
# does (its windows and buffers) and from the simulation's records, as
# tests/sim/cupti.c names them (the H200's names where it recorded them).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
  skip "whatran/other-style-program" "no cupti.h in ${CUDA_HOME:-/usr/local/cuda}/include"
  return 0
fi
. tests/lib/whatran.sh

if begin whatran/other-style-program; then
  rm -f "$f.json"
  preloaded WHATRAN_JSON="$f.json" -- "$S/other_style"
  want_status 0
  unchanged
  # WHATRAN_JSON: an object per rank and communicator, the same words.
  python3 - "$f.json" >"$f.check" 2>&1 <<'PY' || why+="$(head -n 1 "$f.check"); "
import json, sys
objs = [json.loads(line) for line in open(sys.argv[1])]
got = sorted((o["communicator"], o["rank"], o["ranks"]) for o in objs)
if got != [(1, 0, 2), (1, 1, 2), (2, 0, 2), (2, 1, 2)]:
    sys.exit(f"WHATRAN_JSON objects {got}, wanted communicators 1 and 2, ranks 0 and 1 of 2")
two = [o for o in objs if o["communicator"] == 2]
if not all("no window: the output buffer is not registered" in o["ran"] and o["windows"] == "1 window registered (8 KiB)" for o in two):
    sys.exit(f"communicator 2's objects say {two[0]}")
PY
  want_err "What ran (libwhatran): communicator 1, 2 ranks, ranks 0-1: AllReduce of 4 KiB (1 call): NCCL's symmetric kernel AllReduce_AGxLL_R_sum_f32; AllReduce of 4 KiB (1 call): captured into a CUDA graph: its work runs at each replay; 2 windows registered (4 KiB, 4 KiB)"
  want_err "What ran (libwhatran): communicator 2, 2 ranks, ranks 0-1: AllGather of 8 KiB (1 call): NCCL's regular kernels of the RING family (no symmetric kernel): no window: the input buffer is not registered; AllGather of 8 KiB (1 call): NCCL's regular kernels of the RING family (no symmetric kernel): no window: the output buffer is not registered; 1 window registered (8 KiB)"
  want_err "What ran (libwhatran): CUDA graph replays (4 launches): NCCL's symmetric kernel AllReduce_AGxLL_R_sum_f32"
  # It never asks NCCL about a communicator inside a group (NCCL warns).
  ! grep -q "Attempt to use communicator" "$f.err" || why+="the preload made NCCL warn: $(grep -m1 "Attempt" "$f.err"); "
  no_violation
  end
fi
if begin whatran/other-style-program-without-windows; then
  preloaded -- "$S/other_style" no-windows
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 2, 2 ranks, ranks 0-1: AllGather of 8 KiB (2 calls): NCCL's regular kernels of the RING family (no symmetric kernel): no window: neither buffer is registered; 0 windows registered"
  no_violation
  end
fi
# An AllGather's output is its whole gathered result (the ranks times its
# input): a window over only its first half (one rank's input) does not
# hold it, and the line says so as when there is none.
if begin whatran/other-style-program-output-half-in-a-window; then
  preloaded -- "$S/other_style" half-window
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 2, 2 ranks, ranks 0-1: AllGather of 8 KiB (1 call): NCCL's regular kernels of the RING family (no symmetric kernel): no window: the input buffer is not registered; AllGather of 8 KiB (1 call): NCCL's regular kernels of the RING family (no symmetric kernel): no window: the output buffer is not registered; 2 windows registered (8 KiB, 4 KiB)"
  no_violation
  end
fi
# A window one byte shorter than the AllGather's 4 KiB input (4095 B)
# does not hold it: the input is said not to be in a window, as without
# one.
if begin whatran/other-style-program-input-one-byte-past-its-window; then
  preloaded -- "$S/other_style" one-byte-past
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 2, 2 ranks, ranks 0-1: AllGather of 8 KiB (1 call): NCCL's regular kernels of the RING family (no symmetric kernel): no window: the input buffer is not registered; AllGather of 8 KiB (1 call): NCCL's regular kernels of the RING family (no symmetric kernel): no window: the output buffer is not registered; 2 windows registered (8 KiB, 4095 B)"
  no_violation
  end
fi
# Replays of graphs captured on one-rank communicators (4 calls) and on
# a 2-rank one (2 calls, a rank each): not all captured calls were of one
# rank, so no replay is called local; the 2-rank AllReduce's replays are
# NCCL's symmetric kernel (both buffers in windows), as without the
# one-rank ones.
if begin whatran/other-style-program-replays-mostly-one-rank; then
  preloaded -- "$S/other_style" mostly-one-rank
  want_status 0
  unchanged
  want_err "What ran (libwhatran): CUDA graph replays (4 launches): NCCL's symmetric kernel AllReduce_AGxLL_R_sum_f32; "
  no_err "a local"
  no_violation
  end
fi
# Two communicators whose ranks did the same: a line each, never merged.
if begin whatran/other-style-program-twin-communicators; then
  preloaded -- "$S/other_style" twins
  want_status 0
  unchanged
  for c in 1 2; do
    want_err "What ran (libwhatran): communicator $c, 2 ranks, ranks 0-1: AllReduce of 4 KiB (1 call): "
  done
  [ "$(grep -c "^What ran (libwhatran): communicator" "$f.err")" = 2 ] ||
    why+="$(grep -c "^What ran (libwhatran): communicator" "$f.err") communicator lines, wanted 2; "
  no_violation
  end
fi
# The lessons without their own What ran: the preload's verdict is theirs
# (tests/suites/62-cupti.sh's lines for the same runs).
if begin whatran/lean-pthread/allreduce_sm-2; then
  preloaded NTHREADS=2 -- "$S/lean-pthread/allreduce_sm"
  want_status 0
  unchanged
  no_out "What ran:"
  want_err "What ran (libwhatran): communicator 1, 2 ranks, ranks 0-1: AllReduce of 4 MiB (1 call): NCCL's symmetric kernel AllReduce_RSxLD_AGxST_sum_f32; 2 windows registered (4 MiB, 4 MiB)"
  no_violation
  end
fi
if begin whatran/lean-pthread/allgather_ce-2; then
  preloaded NTHREADS=2 -- "$S/lean-pthread/allgather_ce"
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 1, 2 ranks, ranks 0-1: AllGather of 8 MiB (1 call): on the copy engines: 0 kernels, 4 copies; 2 windows registered (4 MiB, 8 MiB)"
  no_violation
  end
fi
# CUPTI failing in one process (a profiler holding it there): that rank is
# "not measured", the other measured, and the program sees no difference.
if begin whatran/lean-mpi/allgather_ce-cupti-fails-on-rank-1 && mpi_cases "$name"; then
  preloaded SIM_CUPTI_FAIL=cuptiActivityEnable:1 -- "${MPIRUN[@]}" -np 2 "$S/lean-mpi/allgather_ce"
  want_status 0
  unchanged
  want_err "CUPTI: cuptiActivityEnable failed"
  want_err "What ran (libwhatran): communicator 1, 2 ranks, rank 1: AllGather of 8 MiB (1 call): not measured: CUPTI failed (see its message above); 2 windows registered (4 MiB, 8 MiB)"
  want_err "What ran (libwhatran): communicator 1, 2 ranks, rank 0: AllGather of 8 MiB (1 call): on the copy engines: 0 kernels, 4 copies; 2 windows registered (4 MiB, 8 MiB)"
  no_violation
  end
fi
# tools/libgaps.so reads CUPTI with the same reader: on the same program,
# every kernel is tied to its call (2 ranks x 3 eager calls, and 2 x 2
# replays, each one kernel on the simulation), and the replays are calls
# of their own.
if begin whatran/gaps-on-the-simulation; then
  need whatran-programs
  SIM_DIR=$TMPDIR run "$S/other_style"
  plain_status=$status
  cp "$f.out" "$f.plain"
  rm -f "$f.gaps"
  LD_PRELOAD="$S/libgaps.so" GAPS_OUT="$f.gaps" SIM_DIR="$TMPDIR" run "$S/other_style"
  want_status 0
  unchanged
  grep -q "^gaps: cuGraphLaunch: calls 4 (with GPU work 4): .* kernels/call 1.00 copies/call 0.00$" "$f.gaps" ||
    why+="no line for the 4 graph replays, each with one kernel; "
  [ "$(grep -c "^gaps: AllReduce count 1024 .*: calls 2 (with GPU work 1): .* kernels/call 1.00 " "$f.gaps")" = 2 ] ||
    why+="wanted 2 lines (a rank each) for the eager and the captured AllReduce; "
  [ "$(grep -c "^gaps: AllGather count 1024 .*: calls 1 (with GPU work 1): " "$f.gaps")" = 4 ] ||
    why+="wanted 4 lines for the AllGathers (2 a rank); "
  grep -q "^gaps: 0 kernels or copies tied to no call; 10 records$" "$f.gaps" ||
    why+="$(tail -n 1 "$f.gaps"), wanted 0 untied of 10; "
  no_violation
  end
fi
# GAPS_KEY=size keys calls by name, count, communicator and in place or
# not: edge_cases' AllReduce in place at one rank moves nothing (no GPU
# work); its out-of-place ones (an eager call, a captured one) copy.
if begin whatran/gaps-keyed-by-size-in-place-apart; then
  need whatran-programs
  rm -f "$f.gaps"
  LD_PRELOAD="$S/libgaps.so" GAPS_KEY=size GAPS_OUT="$f.gaps" SIM_DIR="$TMPDIR" run "$S/edge_cases"
  want_status 0
  grep -q "^gaps: AllReduce count 1024 comm 0x[0-9a-f]* in place: calls 1 (with GPU work 0): " "$f.gaps" ||
    why+="no line for the AllReduce in place, without GPU work; "
  grep -q "^gaps: AllReduce count 1024 comm 0x[0-9a-f]* out of place: calls 2 (with GPU work 1): .* copies/call 1.00$" "$f.gaps" ||
    why+="no line for the 2 AllReduces out of place, one copying; "
  no_violation
  end
fi
# A program that opens NCCL itself and calls it through that handle (as a
# Python binding may): the preload sees no call, changes nothing, and says
# that it saw none although NCCL is loaded.
if command -v python3 >/dev/null && begin whatran/python-standin-opens-nccl-itself; then
  preloaded -- python3 tests/whatran/python_standin.py "$S/libncclsim.so"
  want_status 0
  unchanged
  want_out "both ranks done"
  want_err "What ran (libwhatran): NCCL is loaded in this process, but no call to it went through this library"
  no_violation
  end
fi

# What real programs do and the lessons do not (tests/whatran/edge_cases.c):
# at one rank an out-of-place AllReduce is a local copy and an in-place one
# nothing at all (NCCL 2.30.7 src/device/onerank.cu copies only where the
# buffers differ); fp8 elements are 1 byte (4096 of them: 4 KiB); the
# replays of a graph captured on a one-rank communicator are local copies;
# the window's handle is read when NCCL wrote it, not from memory the
# program has freed since.
EDGE_RAN="AllReduce of 4 KiB (1 call): a local copy (1 copy, 0 kernels); AllReduce of 4 KiB (1 call): in place at one rank: nothing to move, and NCCL launched no work; AllGather of 4 KiB (1 call): a local copy (1 copy, 0 kernels); AllReduce of 4 KiB (1 call): captured into a CUDA graph: its work runs at each replay"
if begin whatran/edge-cases-one-rank; then
  preloaded -- "$S/edge_cases"
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 1, 1 rank, rank 0: $EDGE_RAN; 1 window registered (4 KiB)"
  want_err "What ran (libwhatran): CUDA graph replays (2 launches): a local copy (1 copy, 0 kernels)"
  no_violation
  end
fi
# Without symmetric support NCCL writes NULL (from 2.29.2): said as no
# window, though the program scribbled on its handle's memory since.
if begin whatran/edge-cases-null-window-in-freed-memory; then
  preloaded SIM_NO_SYMMETRIC=1 SIM_NCCL_VERSION=23007 -- "$S/edge_cases"
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 1, 1 rank, rank 0: $EDGE_RAN; 0 windows registered; 1 registration came back NULL (4 KiB): no window"
  no_violation
  end
fi
# A bfloat16 element is 2 bytes (nccl.h 2.30.7: ncclBfloat16): 1024 of
# them gathered at one rank are 2 KiB.
if begin whatran/edge-cases-bfloat16; then
  preloaded -- "$S/edge_cases" bf16
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 1, 1 rank, rank 0: AllGather of 2 KiB (1 call): a local copy (1 copy, 0 kernels); 0 windows registered"
  no_violation
  end
fi
# NCCL writes a handle registered in a group at the end of that thread's
# group (groups are per thread): another thread's group, opened and ended
# meanwhile, writes nothing, and the handle is read when it was written.
if begin whatran/edge-cases-other-thread-group-ends-first; then
  preloaded -- "$S/edge_cases" other-thread-group
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 1, 1 rank, rank 0: AllReduce of 4 KiB (1 call): in place at one rank: nothing to move, and NCCL launched no work; 1 window registered (4 KiB)"
  no_err "came back NULL"
  no_violation
  end
fi
# A registration in a group the program never ended: NCCL never wrote its
# handle, which is said as such, not as a handle that came back NULL
# (SIM_LEAKS=warn: what the program left is listed, not a violation).
if begin whatran/edge-cases-group-never-ended; then
  preloaded SIM_LEAKS=warn -- "$S/edge_cases" group-never-ended
  want_status 0
  unchanged
  want_err "What ran (libwhatran): communicator 1, 1 rank, rank 0: AllReduce of 4 KiB (1 call): in place at one rank: nothing to move, and NCCL launched no work; 0 windows registered; 1 registration in a group that never ended (4 KiB)"
  no_err "came back NULL"
  end
fi
# A child forked after the collectives that exits: its exit handlers,
# inherited, must not report the parent's communicators again.
if begin whatran/edge-cases-fork; then
  preloaded -- "$S/edge_cases" fork
  want_status 0
  unchanged
  [ "$(grep -c "^What ran (libwhatran): communicator" "$f.err")" = 1 ] ||
    why+="$(grep -c "^What ran (libwhatran): communicator" "$f.err") communicator lines, wanted 1 (the parent's); "
  no_violation
  end
fi
# A program that stops before its first NCCL call (NCCL loaded with it):
# it made no communicator; nothing suggests a handle of its own.
if begin whatran/edge-cases-stops-before-nccl; then
  preloaded -- "$S/edge_cases" early
  want_status 0
  unchanged
  want_err "What ran (libwhatran): the program made no NCCL communicator (it may have stopped before its first NCCL call)"
  no_err "a handle of its own"
  no_violation
  end
fi
# A non-blocking communicator asked its size before any poll: refused
# while its init runs (ncclInProgress 7 from the init, ncclInvalidArgument
# 4 from ncclCommCount, NCCL 2.30.7 src/init.cc), with or without the
# preload: the library takes no look of its own at a non-blocking
# communicator, which would end the simulated init early.
if begin whatran/edge-cases-unpolled-nonblocking; then
  preloaded -- "$S/edge_cases" unpolled
  want_status 0
  unchanged
  want_out "unpolled: init 7, count before a poll 4, then 0"
  want_err "Attempt to use communicator before the previous operation returned ncclSuccess"
  no_violation
  end
fi
# A call to make a communicator that came through the preload and failed
# (a rank out of range: ncclInvalidArgument, 4): at exit, that is what the
# library says, not that no call came through. Python's ctypes calls the
# wrapper found in the global scope, the simulation's library opened into
# it.
if command -v python3 >/dev/null && begin whatran/no-communicator-made-calls-failed; then
  need whatran-programs
  LD_PRELOAD="$S/libwhatran.so" SIM_DIR=$TMPDIR run python3 -c '
import ctypes, sys
class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
sim = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
uid, comm = UniqueId(), ctypes.c_void_p()
assert sim.ncclGetUniqueId(ctypes.byref(uid)) == 0
print(ctypes.CDLL(None).ncclCommInitRank(ctypes.byref(comm), 2, uid, 5))' "$S/libncclsim.so"
  want_status 0
  want_out "4"
  want_err "What ran (libwhatran): the program made no NCCL communicator: its calls to make one did not succeed"
  no_err "no call to it went through this library"
  end
fi
# The library as users build it links neither CUPTI nor the CUDA runtime:
# a machine without them starts every preloaded program (CUPTI missing is
# "not measured", tools/whatran/loader.c), and it exports only NCCL's calls.
if begin whatran/real-build-links-no-cupti; then
  run make --no-print-directory -s -C tools whatran WHATRAN_LIB="$B/tools/libwhatran.so"
  want_status 0
  needed=$(readelf -d "$B/tools/libwhatran.so" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  [[ $needed == *libcupti* || $needed == *libcudart* ]] && why+="it needs $needed; "
  exported=$(nm -D --defined-only "$B/tools/libwhatran.so" | awk '$2 == "T" { print $3 }' | grep -v '^nccl' | tr '\n' ' ')
  [ -z "$exported" ] || why+="it exports more than NCCL's calls: $exported; "
  env -i PATH="$PATH" LD_PRELOAD="$B/tools/libwhatran.so" true || why+="true did not start under the preload; "
  # Nothing of NCCL, CUDA or CUPTI left for the dynamic linker to bind: it
  # looks in the global scope only, where a NCCL opened with RTLD_LOCAL
  # is not, and ends the program there (loader.c finds them instead).
  unbound=$(nm -D --undefined-only "$B/tools/libwhatran.so" | awk '$2 ~ /^(nccl|cuda|cupti)/ { print $2 }' | tr '\n' ' ')
  [ -z "$unbound" ] || why+="it leaves to the dynamic linker: $unbound; "
  end
fi
# A wrapped call that no library of the process defines (no NCCL loaded,
# or one older than the call): said once, ncclSystemError (2) returned
# each time, and the program goes on. Python's ctypes finds the wrapper in
# the global scope, as a program linked against a newer NCCL would.
if command -v python3 >/dev/null && begin whatran/no-nccl-behind-a-call-says-so-once; then
  need whatran-programs
  LD_PRELOAD="$S/libwhatran.so" run python3 -c 'import ctypes; f = ctypes.CDLL(None).ncclGroupStart; print(f(), f())'
  want_status 0
  want_out "2 2"
  want_err "libwhatran: ncclGroupStart: no library loaded in this process defines it (NCCL is not loaded, or is older than this call): it returns ncclSystemError, and What ran says nothing of it"
  [ "$(grep -c "^libwhatran:" "$f.err")" = 1 ] || why+="$(grep -c "^libwhatran:" "$f.err") libwhatran lines, wanted 1; "
  end
fi
