# The device API lesson (03_allreduce_lsa) on the simulation: its kernel
# run as fibers, both modes at 1 to 8 ranks against the oracle, every
# refusal, the rules of its barriers, and tools/simulate.sh.
# Cases: lsa/lsa-pthread/allreduce_lsa-N and lsa/lsa-mpi/allreduce_lsa-N
# (threads, MPI), lsa/refuse/... (what the lesson refuses, in one line),
# lsa/rules/... (a broken kernel named by the simulation), lsa/simulate/...,
# lsa/bench/... (--bench, mode lsa), lsa/properties/... (tests/oracles/properties.py)
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: second (tests/run_tests.sh runs the lanes of a whole run at once)

# With the toolkit's cupti.h the build measures what ran (tests/Makefile).
LSA_MEASURED=$([ -e "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ] && echo --measured)

# lsa_run VARIANT NRANKS ARGS...: as sim_run, for the lesson's own builds
# (lsa_case built them: no programs-VARIANT of the other two lessons).
lsa_run() {
  local variant=$1 n=$2
  shift 2
  if [[ $variant == *mpi ]]; then
    SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np "$n" "$B/$variant/allreduce_lsa" "$@"
  else
    SIM_DIR=$TMPDIR NTHREADS=$n run "$B/$variant/allreduce_lsa" "$@"
  fi
}


# At 3, 5, 6 and 7 ranks (which do not divide the grid's 16 CTAs) a count
# past one stride of the grid (16 CTAs x 512 threads = 8192 floats), so
# that a thread's second element is reached: a stride that leaves out the
# ranks (each rank as if alone) has two ranks store one element there.
for variant in lsa-pthread lsa-mpi; do
  for n in 1 2 3 4 5 6 7 8; do
    [ $variant = lsa-mpi ] && [[ " 1 2 4 8 " != *" $n "* ]] && continue
    lsa_case "lsa/$variant/allreduce_lsa-$n" || continue
    count=$SMALL
    [[ " 3 5 6 7 " == *" $n "* ]] && count=12289
    expected allreduce_lsa "$n" --count $count --mode "$(mode_of $variant)" --gpus 8 $LSA_MEASURED >"$f.expected"
    lsa_run $variant "$n" -n $count
    want_status 0
    want_out_file "$f.expected"
    no_violation
    end
  done
done
# Properties (tests/oracles/properties.py): rank counts and counts of
# every remainder modulo 4 and modulo the rank count, each run's output
# the oracle's; make test a few, make test-properties (PROPERTY_MATRIX=
# full) every one.
while read -r n count; do
  lsa_case "lsa/properties/pthread-$n-count-$count" || continue
  expected allreduce_lsa "$n" --count "$count" --gpus 8 $LSA_MEASURED >"$f.expected"
  lsa_run lsa-pthread "$n" -n "$count"
  want_status 0
  want_out_file "$f.expected"
  no_violation
  end
done < <(python3 "$ROOT/tests/oracles/properties.py" "${PROPERTY_MATRIX:-quick}")
if lsa_case lsa/lsa-pthread/allreduce_lsa-4-count-1048576; then # as users run it
  expected allreduce_lsa 4 --gpus 8 $LSA_MEASURED >"$f.expected"
  lsa_run lsa-pthread 4
  want_status 0
  want_out_file "$f.expected"
  no_violation
  end
fi

# What the lesson refuses, each in one line per rank and exit 1, with
# nothing of the kernel run. The version refusals are the driver's
# (common/src/requirements.c), before the lesson starts.
refusal() { # NAME ERROR-LINE VAR=VALUE [WHAT-RAN-LINE]: 2 ranks as threads
  local c=$1 line=$2 setting=$3 cause=${4:-}
  lsa_case "lsa/refuse/$c" || return
  export "${setting?}"
  SIM_DIR="$TMPDIR" NTHREADS=2 SIM_DEVICES=2 run "$B/lsa-pthread/allreduce_lsa" -n 64
  unset "${setting%%=*}"
  want_status 1
  [ "$(grep -cF -- "$line" "$f.err")" = 2 ] || why+="stderr lacks '$line' once per rank; "
  [ -n "$cause" ] && [ -n "$LSA_MEASURED" ] && want_out "$cause"
  no_out "Starting AllReduce with"
  no_violation
  end
}
refusal nccl-2.28.9 "NCCL 2.28.9 is too old for the device API (ncclDevCommCreate, LSA barriers): needs NCCL >= 2.30.7" \
  SIM_NCCL_VERSION=22809
# The headers the lesson was built with (NCCL_HOME's, or the wheel's):
# a loaded 2.30.7 is older than them unless they are 2.30.7 too.
headers_code=$(nccl_h_code "$LSA_NCCL_HOME")
if [ -n "$LSA_MISSING" ] || [ "$headers_code" -gt 23007 ]; then
  refusal library-older-than-headers "the loaded NCCL 2.30.7 is older than the nccl.h $((headers_code / 10000)).$((headers_code / 100 % 100)).$((headers_code % 100)) this program was built with, and NCCL's device API refuses that" \
    SIM_NCCL_VERSION=23007
else
  skip lsa/refuse/library-older-than-headers "the lesson's nccl.h is 2.30.7 (LSA_NCCL_HOME=$LSA_NCCL_HOME), the oldest it builds with: no NCCL it runs with can be older"
  [ -z "$LIST" ] && echo "the loaded NCCL %s is older than the nccl.h %s this program was built with, and NCCL's device API refuses that: run with NCCL %s or newer, or build against the NCCL you run (make NCCL_HOME=dir) -- lsa/refuse/library-older-than-headers: the lesson's nccl.h is 2.30.7" >>"$LOG/skipped-messages.txt"
fi
refusal no-device-api "this communicator has no device API support (deviceApiSupport 0: docs/troubleshooting.md says when)" \
  NCCL_WIN_ENABLE=0 "Why not the lesson's kernel: deviceApiSupport 0 on ranks 0-1 (NCCL gives the device API where it gives symmetric windows: NCCL_WIN_ENABLE=0 is set"
c=lsa/refuse/ranks-on-two-hosts
if mpi_cases $c && lsa_case $c; then # NCCL_HOSTID per process: deviceApiSupport 0, as 2.30.7 said on a GPU
  SIM_DIR=$TMPDIR SIM_DEVICES=2 run "${MPIRUN[@]}" -np 2 sh -c 'NCCL_HOSTID=node$OMPI_COMM_WORLD_RANK exec "$0" -n 64' "$B/lsa-mpi/allreduce_lsa"
  want_failure
  [ "$(grep -cF "this communicator has no device API support" "$f.err")" = 2 ] ||
    why+="stderr lacks the device API's line once per rank; "
  [ -n "$LSA_MEASURED" ] && want_out "Why not the lesson's kernel: deviceApiSupport 0 on ranks 0-1 (NCCL gives the device API where it gives symmetric windows: the ranks are on 2 hosts (by NCCL_HOSTID)"
  no_out "Starting AllReduce with"
  no_violation
  end
fi
# Several LSA teams with device API support: a layout no recorded run had,
# which the simulation gives with SIM_LSA_TEAM_SIZE.
refusal two-lsa-teams "this communicator has 2 LSA teams, and this kernel needs one" SIM_LSA_TEAM_SIZE=1 \
  "Why not the lesson's kernel: 2 LSA teams on ranks 0-1: ranks on different nodes (NCCL_HOSTID too) or without NVLink between them cannot load and store each other's memory"

# A broken kernel, named by the simulation's rules (exit 70), whatever the
# schedule: each edit is made to a copy of the lesson, built as the
# simulated build builds it. (The same edits are mutants of `make
# test-mutants`, against these and the output cases.)
# The copy's main.cu is compiled as the simulated build compiles it, and
# linked with that build's other objects.
broken() { # NAME RULE-TEXT SED-EXPRESSION [in-kernel|host]
  local c=lsa/rules/$1 want=$2 edit=$3 where=${4:-in-kernel} copy objs
  lsa_case "$c" || return
  copy=$TMPDIR/$1-main.cu
  sed "$edit" "$ROOT/03_allreduce_lsa/c/main.cu" >"$copy"
  cmp -s "$ROOT/03_allreduce_lsa/c/main.cu" "$copy" && why+="the edit changed nothing; "
  objs=$(find "$B/lsa-pthread/obj/pthread" -name '*.o' ! -name main.o | sort)
  { "$ROOT/tests/sim/compile_cu.sh" g++ -I"$ROOT/common/include" -I"$LSA_NCCL_HOME/include" \
      -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 -idirafter "${CUDA_HOME:-/usr/local/cuda}/include" \
      -D_GNU_SOURCE -O0 -g -c -o "$copy.o" "$copy" &&
    cc -o "$copy.bin" "$copy.o" $objs "$B/lsa-pthread/sim.o" -Wl,--wrap=set_error_rank -lstdc++ -pthread -lm; } \
    >"$f.build" 2>&1 || why+="the edited copy did not build (see $f.build); "
  SIM_DIR=$TMPDIR NTHREADS=4 SIM_DEVICES=4 run "$copy.bin" -n $SMALL
  want_status 70
  want_err "$want"
  [ "$where" = host ] || want_err "repeats it)" # a kernel's schedule seed
  end
}
broken no-first-barrier "this side did not acquire it: it was released" '0,/bar.sync(ncclCoopCta(), cuda::memory_order_acquire);/s//\/\/ (removed)/'
broken relaxed-first-barrier "this side did not acquire it: it observed a barrier that published it, but its wait was relaxed" 's/cuda::memory_order_acquire);/cuda::memory_order_relaxed);/'
broken no-last-barrier "the other side released nothing after it: no LSA barrier with release after that access" 's/bar.sync(ncclCoopCta(), cuda::memory_order_release);/\/\/ (removed)/' host
broken peer-past-the-team "[lsa-pointer] rank" 's/for (int peer = 0; peer < nRanks; peer++) {/for (int peer = 0; peer <= nRanks; peer++) {/'
broken index-past-the-window "past its end (a window offset or an element index too large?)" 's/v += sendPtr\[offset\];/v += sendPtr[offset + 1];/'
# A send window registered with the element count as its size (a quarter
# of the buffer): a peer's reads past it are named (NCCL maps the size
# registered); a thread index without its "* nRanks" makes the ranks'
# slices overlap, two ranks writing the same element unordered.
broken send-window-of-count-bytes "past the end of its $((SMALL))-byte window: NCCL maps a peer's window" 's/ncclCommWindowRegister(comm, d_sendbuff, size_bytes, &send_win,/ncclCommWindowRegister(comm, d_sendbuff, count, \&send_win,/'
broken thread-index-without-nranks "[lsa-data-race] rank" 's/(rank + (size_t)blockIdx.x \* nRanks)/(rank + (size_t)blockIdx.x)/'
broken no-device-comm-destroy "[destroy-device-communicator] rank" '/NCCLCHECK(ncclDevCommDestroy(comm, &devComm));/d' host
broken fewer-barriers-than-ctas "barrier index" 's/reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT;/reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT \/ 2;/'
# NCCL does not wait for the kernels that take a device communicator when
# it is destroyed (2.30.7 src/dev_runtime.cc): its stream must be waited
# for first. (The result is not read here: a read of it before that wait
# is the rule stream-data-race, a case of kernels/.)
broken destroy-before-the-kernel-ends "kernel(s) that take this device communicator are still queued or running" '0,/  CUDACHECK(cudaStreamSynchronize(stream));/s//  \/\/ (no wait for the kernel)/; s/cudaMemcpy(h_result, d_recvbuff, size_bytes, cudaMemcpyDeviceToHost)/cudaSuccess/' host

# nccl_version DIR: DIR/include/nccl.h's version, as 2.32.6.
nccl_version() { local c=$(nccl_h_code "$1"); echo "$((c / 10000)).$((c % 10000 / 100)).$((c % 100))"; }
# own_build_folder NCCL_HOME: tools/simulate.sh's folder for the device API
# lessons with these headers and the suite's CUDA (its file homes names
# them), or nothing.
own_build_folder() {
  local link
  link=$(path_without_spaces "$1") || return
  dirname "$(grep -lxF "LSA_NCCL_HOME=$link" "$B"/simulate/*/homes 2>/dev/null | head -n 1)" 2>/dev/null | grep -v '^\.$'
}
# tools/simulate.sh as a learner runs it: 1, 2, 4 and 8 ranks, threads and
# MPI, to exit 0.
for n in 1 2 4 8; do
  for how in threads mpi; do
    lsa_case "lsa/simulate/$how-$n" || continue
    folders=$(ls "$B/simulate" 2>/dev/null)
    if [ $how = mpi ]; then NCCL_HOME=$LSA_NCCL_HOME run "$ROOT/tools/simulate.sh" --mpi $n allreduce_lsa -n $SMALL
    else NCCL_HOME=$LSA_NCCL_HOME NTHREADS=$n run "$ROOT/tools/simulate.sh" allreduce_lsa -n $SMALL; fi
    want_status 0
    want_out "Results verified correctly"
    # (--mpi runs the MPI build: one job of N ranks, not N jobs of threads)
    [ $how = mpi ] && want_out "MPI initialized: rank $((n - 1)) of $n"
    [[ $(head -n 1 "$f.out") == "# SIMULATED: no GPU ran this; "* ]] || why+="first line: '$(head -n 1 "$f.out")'; "
    want_err "simulate.sh: allreduce_lsa with nccl.h $(nccl_version "$LSA_NCCL_HOME") of NCCL_HOME ($LSA_NCCL_HOME)"
    # (the suite's NCCL and CUDA: built in tests/build, where the suite's are)
    [ "$(ls "$B/simulate" 2>/dev/null)" = "$folders" ] || why+="it made a build folder of its own ($B/simulate), with the suite's NCCL and CUDA; "
    no_violation
    end
  done
done

# An nccl.h older than 2.30.7 (here 2.30.6, the edge) is refused for
# allreduce_lsa, naming what it needs, when CUDA_HOME has none newer.
# NCCL_HOME in a path with a space, as a user's unpacked wheel may be.
if lsa_case lsa/simulate/nccl-home-with-a-space; then
  rm -rf "$TMPDIR/nccl home" && mkdir -p "$TMPDIR/nccl home" &&
    cp -r "$LSA_NCCL_HOME/include" "$TMPDIR/nccl home/" || why+="could not copy the headers; "
  suite_build=$(cksum "$B/lsa-pthread/allreduce_lsa" "$B/lsa-pthread/sim.o" 2>&1)
  NCCL_HOME="$TMPDIR/nccl home" NTHREADS=2 run "$ROOT/tools/simulate.sh" allreduce_lsa -n $SMALL
  want_status 0
  want_out "Results verified correctly"
  want_err "simulate.sh: allreduce_lsa with nccl.h $(nccl_version "$LSA_NCCL_HOME") of NCCL_HOME ($TMPDIR/nccl home)"
  no_violation
  # Other headers than the suite's: built in a folder of their own, the
  # suite's programs left as they were (a run of the suite may be using them).
  [ "$(cksum "$B/lsa-pthread/allreduce_lsa" "$B/lsa-pthread/sim.o" 2>&1)" = "$suite_build" ] ||
    why+="the suite's $B/lsa-pthread was built again; "
  own=$(own_build_folder "$TMPDIR/nccl home")
  [ -x "$own/lsa-pthread/allreduce_lsa" ] || why+="no build folder of its own in $B/simulate names LSA_NCCL_HOME=$(path_without_spaces "$TMPDIR/nccl home"); "
  end
fi
# An object cut short, as a build interrupted while writing it leaves it
# (newer than the program): the next run builds it again and runs, saying
# so, rather than failing at the link.
if lsa_case lsa/simulate/object-cut-short-is-built-again; then
  mkdir -p "$TMPDIR/nccl home" && cp -r "$LSA_NCCL_HOME/include" "$TMPDIR/nccl home/" || why+="could not copy the headers; "
  own=$(own_build_folder "$TMPDIR/nccl home")
  if [ ! -x "$own/lsa-pthread/allreduce_lsa" ]; then # (the case above builds it, where it ran)
    NCCL_HOME="$TMPDIR/nccl home" NTHREADS=1 "$ROOT/tools/simulate.sh" allreduce_lsa -n 64 >/dev/null 2>&1
    own=$(own_build_folder "$TMPDIR/nccl home")
  fi
  # (an object of common/: the quickest to build again)
  object=$(find "$own/lsa-pthread" -path '*/common/*.o' 2>/dev/null | sort | head -n 1)
  [ -n "$object" ] && truncate -s 200 "$object" || why+="no object of common/ in '$own/lsa-pthread'; "
  NCCL_HOME="$TMPDIR/nccl home" NTHREADS=2 run "$ROOT/tools/simulate.sh" allreduce_lsa -n $SMALL
  want_status 0
  want_out "Results verified correctly"
  want_err "simulate.sh: building again: $object was cut short (a build interrupted before)"
  no_err "headers"
  end
fi
if lsa_case lsa/simulate/refuses-nccl-h-2.30.6; then
  mkdir -p "$TMPDIR/nccl-2.30.6/include"
  printf '#define NCCL_VERSION_CODE 23006\n' >"$TMPDIR/nccl-2.30.6/include/nccl.h"
  mkdir -p "$TMPDIR/cuda-without-nccl/include"
  NCCL_HOME=$TMPDIR/nccl-2.30.6 CUDA_HOME=$TMPDIR/cuda-without-nccl run "$ROOT/tools/simulate.sh" allreduce_lsa -n $SMALL
  want_status 2
  want_err "simulate.sh: allreduce_lsa needs an nccl.h >= 2.30.7 (the device API), and NCCL_HOME=$TMPDIR/nccl-2.30.6 and $TMPDIR/cuda-without-nccl/include have none"
  [ ! -s "$f.out" ] || why+="it printed before refusing; "
  end
fi
# With NCCL_HOME unset and no nccl.h >= 2.30.7 in CUDA_HOME, the headers
# the checkout has: the suite's unpacked copy (tests/build/lsa-nccl), else
# the newest wheel in NCCL_WHEELS, unpacked there; the line says which.
# The script in a tree of its own (its two files), where the build then
# fails: what it found is said before.
if begin lsa/simulate/finds-headers-the-checkout-has; then
  tree=$TMPDIR/simulate-alone wheels=$TMPDIR/wheels
  rm -rf "$tree" "$wheels" && mkdir -p "$tree/tools" "$tree/tests/lib" "$wheels" "$TMPDIR/cuda-without-nccl/include"
  cp "$ROOT/tools/simulate.sh" "$tree/tools/" && cp "$ROOT/tests/lib/path_without_spaces.sh" "$tree/tests/lib/"
  for w in cu12-2.29.3:22903 cu13-2.31.4:23104 cu13-2.30.12:23012; do # (2.31.4 the newest)
    python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("nvidia/nccl/include/nccl.h", "#define NCCL_VERSION_CODE %s\n" % sys.argv[2])
    z.writestr("nvidia/nccl/lib/libnccl.so.2", "")' "$wheels/nvidia_nccl_${w%%:*}-py3-none-manylinux_2_27_x86_64.whl" "${w##*:}"
  done
  found=$tree/tests/build/lsa-nccl/2.31.4/nvidia/nccl
  alone=(env -u NCCL_HOME CUDA_HOME="$TMPDIR/cuda-without-nccl" NCCL_WHEELS="$wheels" NTHREADS=1 "$tree/tools/simulate.sh" allreduce_lsa)
  run "${alone[@]}"
  want_status 1
  want_err "simulate.sh: allreduce_lsa with nccl.h 2.31.4 of the wheel $wheels/nvidia_nccl_cu13-2.31.4-py3-none-manylinux_2_27_x86_64.whl ($found)"
  [ -e "$found/include/nccl.h" ] && [ ! -e "$found/lib" ] || why+="the wheel's headers (and nothing else) are not in $found; "
  mv "$wheels" "$wheels-gone"
  run "${alone[@]}"
  want_status 1
  want_err "simulate.sh: allreduce_lsa with nccl.h 2.31.4 of the test suite's copy ($found)"
  rm -rf "$tree/tests/build/lsa-nccl"
  run "${alone[@]}"
  want_status 2
  want_err "simulate.sh: allreduce_lsa needs an nccl.h >= 2.30.7 (the device API), and NCCL_HOME=(unset) and $TMPDIR/cuda-without-nccl/include have none, nor the test suite's tests/build/lsa-nccl, nor $wheels"
  end
fi

# An nccl.h of exactly 2.30.7, the minimum, is taken: simulate.sh goes on
# to build against it (a stand-in make, first on PATH, records the headers
# it was given and fails, so that no build of the suite is touched).
if lsa_case lsa/simulate/takes-nccl-h-2.30.7; then
  mkdir -p "$TMPDIR/nccl-2.30.7/include" "$TMPDIR/cuda-without-nccl/include" "$TMPDIR/stand-in-make"
  printf '#define NCCL_VERSION_CODE 23007\n' >"$TMPDIR/nccl-2.30.7/include/nccl.h"
  printf '#!/bin/sh\necho "$LSA_NCCL_HOME" >"%s"\nexit 1\n' "$TMPDIR/make-was-given" >"$TMPDIR/stand-in-make/make"
  chmod +x "$TMPDIR/stand-in-make/make"
  rm -f "$TMPDIR/make-was-given"
  PATH=$TMPDIR/stand-in-make:$PATH NCCL_HOME=$TMPDIR/nccl-2.30.7 CUDA_HOME=$TMPDIR/cuda-without-nccl \
    run "$ROOT/tools/simulate.sh" allreduce_lsa -n $SMALL
  want_status 1
  no_err "needs an nccl.h >= 2.30.7"
  want_err "simulate.sh: allreduce_lsa with nccl.h 2.30.7 of NCCL_HOME ($TMPDIR/nccl-2.30.7)"
  want_err "simulate.sh: building the simulated allreduce_lsa failed"
  [ "$(cat "$TMPDIR/make-was-given" 2>/dev/null)" = "$TMPDIR/nccl-2.30.7" ] ||
    why+="make was given LSA_NCCL_HOME='$(cat "$TMPDIR/make-was-given" 2>/dev/null)', wanted $TMPDIR/nccl-2.30.7; "
  end
fi

# --bench where the lesson would refuse its kernel (two LSA teams): each
# rank says why, as the lesson does, and sym and plain are still measured.
if lsa_case lsa/bench/lsa-left-out-with-two-lsa-teams; then
  SIM_LSA_TEAM_SIZE=1 SIM_DIR=$TMPDIR NTHREADS=2 SIM_DEVICES=2 run "$B/lsa-pthread/allreduce_lsa" --bench -b 4K -e 4K -w 1 -i 2 -r 1
  want_status 0
  [ "$(grep -cF "this communicator has 2 LSA teams, and this kernel needs one" "$f.err")" = 2 ] ||
    why+="stderr lacks the lesson's line once per rank; "
  want_out "# --bench: mode lsa left out: the lesson's kernel cannot run on this communicator (said above)"
  want_out "# modes: sym = ncclAllReduce on symmetric windows; plain = ncclMemAlloc buffers, no windows"
  want_out "Benchmark results verified correctly"
  no_violation
  end
fi
# --graph: the lesson's kernel captured into a CUDA graph and replayed.
if lsa_case lsa/bench/lsa-pthread-2-graph; then
  SIM_DIR=$TMPDIR NTHREADS=2 SIM_DEVICES=2 run "$B/lsa-pthread/allreduce_lsa" --bench -b 4K -e 4K -w 1 -i 2 -r 1 --graph
  want_status 0
  want_out "Benchmark results verified correctly"
  no_violation
  end
fi
# --bench: the lesson's kernel (mode lsa) beside ncclAllReduce, verified,
# and labelled as the simulation's.
if lsa_case lsa/bench/lsa-pthread-2; then
  SIM_DIR=$TMPDIR NTHREADS=2 SIM_DEVICES=2 run "$B/lsa-pthread/allreduce_lsa" --bench -b 4K -e 4K -w 1 -i 2 -r 1
  want_status 0
  want_out "# modes: lsa = the lesson's kernel on symmetric windows; sym = ncclAllReduce on symmetric windows"
  want_out "# rank 0's GPU: NVIDIA H200 (simulated)"
  want_out "Benchmark results verified correctly"
  no_violation
  end
fi
