# Over 350 lines: one subject's cases, a kernel of tests/kernels/ each, a few lines apiece.
# Kernels of one's own on the simulation's memory model (tests/sim/hb.c,
# access.c, shadow.c, fences.c, sites.c): the lesson's main.cu with its
# kernel replaced by one of tests/kernels/*.cu (or edited), built as the
# simulated lesson is. The correct ones pass, with the lesson's
# verification; each wrong one fails with the rule that names what a GPU
# would get wrong: a missing or one-way barrier, a fence or an atomic of
# too narrow a scope, two CTAs of a rank on one element (lsa-data-race,
# naming the order that is missing), two threads of a CTA on one
# __shared__ word (shared-data-race), threads of a CTA at two barriers
# (cta-barrier), or CTAs sharing an LSA barrier (lsa-barrier).
# Cases: kernels/correct/NAME/MODE-RANKS-seed-S, kernels/wrong/NAME/...,
# kernels/seed/..., kernels/slow-machine/..., kernels/hang/...,
# kernels/copied-lesson/...
# make test runs the lesson's kernel and the two-shot pair at 2 ranks as
# threads and 4 as MPI processes, one seed, every other kernel once;
# make test-kernels (KERNEL_MATRIX=full) at 2, 4 and 8 ranks, both
# modes, seeds 1 to 20.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: second (tests/run_tests.sh runs the lanes of a whole run at once)

if [ "${KERNEL_MATRIX:-}" = full ]; then
  KERNEL_RUNS="" # MODE:RANKS:SEED
  for n in 2 4 8; do for m in threads mpi; do for s in $(seq 1 20); do
    KERNEL_RUNS+="$m:$n:$s "
  done; done; done
else
  KERNEL_RUNS="threads:2:1 mpi:4:2"
fi

# kernel_source DIR SOURCE SED: DIR/main.cu, the lesson's main.cu with its
# kernel replaced by tests/kernels/SOURCE ("-": the lesson's own), then SED
# applied.
kernel_source() {
  local dir=$1 source=$2 edit=$3
  mkdir -p "$dir"
  if [ "$source" = - ]; then
    cp "$ROOT/03_allreduce_lsa/c/main.cu" "$dir/main.cu"
  else
    K="$ROOT/tests/kernels/$source" perl -0pe \
      'BEGIN { local $/; open my $k, "<", $ENV{K} or die; $kernel = <$k> }
       s/__global__ void simpleAllReduceKernel\(.*?\n\}\n/$kernel/s' \
      "$ROOT/03_allreduce_lsa/c/main.cu" >"$dir/main.cu"
  fi
  if [ -n "$edit" ]; then sed -i "$edit" "$dir/main.cu"; fi
}

# kernel_program NAME SOURCE SED: kernel_source's main.cu, built once into
# $KP/pthread (threads), and into $KP/mpi when a run first needs it.
kernel_program() {
  local name=$1 source=$2 edit=$3 dir=$B/kernels/$1 inputs
  KP=$dir
  kernel_source "$dir" "$source" "$edit"
  # Built again when the program or the simulation changed.
  inputs=$(cat "$dir/main.cu" "$ROOT"/tests/sim/compile_cu.sh "$ROOT"/tests/sim/include/* \
    "$B/lsa-pthread/sim.o" $(find "$B"/lsa-*/obj -name '*.o' ! -name main.o | sort) 2>/dev/null | cksum)
  [ "$(cat "$dir/built" 2>/dev/null)" = "$inputs" ] && return 0
  rm -f "$dir/built" "$dir/mpi"
  { "$ROOT/tests/sim/compile_cu.sh" g++ -I"$ROOT/common/include" -I"$LSA_NCCL_HOME/include" \
      -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 -idirafter "${CUDA_HOME:-/usr/local/cuda}/include" \
      -D_GNU_SOURCE -O0 -g -c -o "$dir/main.o" "$dir/main.cu" &&
    kernel_link pthread "$dir"; } >"$dir/build.log" 2>&1 && echo "$inputs" >"$dir/built"
}

# kernel_link MODE DIR: DIR/main.o linked for MODE (pthread, mpi) into
# DIR/MODE. The MPI program is linked when a run first needs it.
kernel_link() {
  local objs
  objs=$(find "$B/lsa-$1/obj/$1" -name '*.o' ! -name main.o | sort)
  $([ "$1" = mpi ] && echo mpicc || echo cc) -o "$2/$1" "$2/main.o" $objs \
    "$B/lsa-pthread/sim.o" -Wl,--wrap=set_error_rank -lstdc++ -pthread -lm
}

# kernel_run MODE RANKS SEED: runs $KP's program; sets $status.
kernel_run() {
  local mode=$1 n=$2 seed=$3
  if [ "$mode" = mpi ]; then
    [ -e "$KP/mpi" ] || kernel_link mpi "$KP" >>"$KP/build.log" 2>&1 || why+="it did not link for MPI (see $KP/build.log); "
    SIM_SEED=$seed SIM_DIR=$TMPDIR SIM_DEVICES=$n run "${MPIRUN[@]}" -np "$n" "$KP/mpi" -n "${KERNEL_COUNT:-$SMALL}"
  else
    SIM_SEED=$seed SIM_DIR=$TMPDIR SIM_DEVICES=$n NTHREADS=$n run "$KP/pthread" -n "${KERNEL_COUNT:-$SMALL}"
  fi
}

# kernel_cases KIND NAME SOURCE SED [RULE TEXT]: the cases of one kernel
# (KIND correct or wrong) at every run of KERNEL_RUNS (or of RUNS, where
# the caller sets it; none: no run; KERNEL_COUNT: the floats per rank,
# default $SMALL).
kernel_cases() {
  local kind=$1 kname=$2 source=$3 edit=$4 rule=${5:-} text=${6:-} r mode n seed c
  if [ -n "${KERNEL_EXPORT:-}" ]; then # (tests/kernels/export.sh)
    kernel_source "$KERNEL_EXPORT/$kname" "$source" "$edit" &&
      printf 'kind %s\nrule %s\ncount %s\n' "$kind" "${rule:-none}" "${KERNEL_COUNT:-$SMALL}" >"$KERNEL_EXPORT/$kname/case"
    return
  fi
  for r in ${RUNS:-$KERNEL_RUNS}; do
    [ "$r" != none ] || continue # (RUNS=none: not in this run)
    IFS=: read -r mode n seed <<<"$r"
    c=kernels/$kind/$kname/$mode-$n-seed-$seed
    lsa_case "$c" || continue
    kernel_program "$kname" "$source" "$edit" || why+="it did not build (see $KP/build.log); "
    kernel_run "$mode" "$n" "$seed"
    if [ "$kind" = correct ]; then
      want_status 0
      want_out "Results verified correctly"
      no_violation
    else
      want_status 70
      want_err "RULE VIOLATION [$rule] rank"
      want_err "$text"
    fi
    end
  done
}

MIDDLE='s/memory_order_acq_rel); \/\* middle \*\//memory_order_ORDER); \/* middle *\//'
NOT_ACQUIRED="this side did not acquire it"
NOT_RELEASED="the other side released nothing after it"
SHARED="while CTA"
# make test runs the lesson's kernel and the two-shot pair at both of
# KERNEL_RUNS (threads and MPI processes), every other kernel once (a
# wrong one at 2 ranks, a correct one at 4, as threads); make
# test-kernels all of them.
[ "${KERNEL_MATRIX:-}" = full ] && ONCE_WRONG="" ONCE_RIGHT="" ONLY_FULL="" ||
  ONCE_WRONG="threads:2:1" ONCE_RIGHT="threads:4:2" ONLY_FULL=none
kernel_cases correct lesson - ""
kernel_cases correct two-shot two-shot.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct stores-then-read stores-then-read.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct pointers-before-the-barrier pointers-before-the-barrier.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct shared-memory shared-memory.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct warp-shuffle warp-shuffle.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct float4 float4.cu ""
kernel_cases wrong two-shot-release-middle two-shot.cu "${MIDDLE/ORDER/release}" lsa-data-race "$NOT_ACQUIRED"
RUNS=$ONCE_WRONG kernel_cases wrong two-shot-acquire-middle two-shot.cu "${MIDDLE/ORDER/acquire}" lsa-data-race "$NOT_RELEASED"
RUNS=$ONCE_WRONG kernel_cases wrong stores-then-acquire stores-then-read.cu "${MIDDLE/ORDER/acquire}" lsa-data-race "$NOT_RELEASED"
RUNS=$ONCE_WRONG kernel_cases wrong stores-then-release stores-then-read.cu "${MIDDLE/ORDER/release}" lsa-data-race "$NOT_ACQUIRED"
RUNS=$ONCE_WRONG kernel_cases wrong relaxed-first-barrier - '0,/memory_order_acquire);/s//memory_order_relaxed);/' lsa-data-race "this side did not acquire it: it observed a barrier that published it, but its wait was relaxed"
RUNS=$ONCE_WRONG kernel_cases wrong reads-after-the-release reads-after-the-release.cu "" lsa-data-race "$NOT_ACQUIRED"
RUNS=$ONCE_WRONG kernel_cases wrong writes-peer-after-the-release writes-peer-after-the-release.cu "" lsa-data-race "$NOT_RELEASED"
RUNS=$ONCE_WRONG kernel_cases wrong all-ctas-on-barrier-0 - 's/devComm.lsaBarrier, blockIdx.x}/devComm.lsaBarrier, 0}/' lsa-barrier "$SHARED"
RUNS=$ONCE_WRONG kernel_cases wrong half-the-barriers - 's/devComm.lsaBarrier, blockIdx.x}/devComm.lsaBarrier, blockIdx.x % 8}/' lsa-barrier "$SHARED"

# GPU threads that interleave, CTA barriers by call site, atomics by
# scope, fences by scope (tests/sim/shadow.c, sites.c, fences.c). make
# test runs each once (a wrong one at 2 ranks, a correct one at 4, as
# threads); make test-kernels all of KERNEL_RUNS. Each expected
# text is what the definition says is missing: a store never released (an
# acquire-only barrier after it, NCCL's releaseOrderOf(acquire) is
# relaxed); two threads of a CTA at one += with no CTA barrier between;
# two barrier calls that a branch sent threads to; atomics of device scope
# from two GPUs; a plain += from two GPUs on one word; two CTAs of one
# rank on one element; a fence of device scope where two GPUs meet.
# The correct twins of the wrong ones that the lesson's kernel and the
# ones above already stand for (stores then a barrier, barriers met by
# every thread, a CTA's own elements) run only there.
RUNS=$ONLY_FULL kernel_cases correct stores-first stores-first.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct shared-count shared-count.cu ""
RUNS=$ONLY_FULL kernel_cases correct converged-barrier converged-barrier.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct atomics-into-peers atomics-into-peers.cu ""
RUNS=$ONLY_FULL kernel_cases correct ctas-own-their-elements ctas-own-their-elements.cu ""
RUNS=$ONCE_RIGHT kernel_cases correct fenced-two-shot fenced-two-shot.cu ""
RUNS=$ONCE_WRONG kernel_cases wrong stores-first-acquire stores-first.cu "${MIDDLE/ORDER/acquire}" lsa-data-race "$NOT_RELEASED"
RUNS=$ONCE_WRONG kernel_cases wrong shared-plus-equals shared-count.cu 's|atomicAdd_block(&threads, 1.0f); /\* count \*/|threads += 1.0f; /* count */|' \
  shared-data-race "and nothing orders the two: no CTA barrier between them"
# (the kernel's line L is main.cu's line L - 1 after the lesson's kernel
# starts: kernel_program puts it there)
branch=$(($(grep -n '^__global__ void simpleAllReduceKernel' "$ROOT/03_allreduce_lsa/c/main.cu" | cut -d: -f1) - 1 +
  $(grep -n 'if (threadIdx.x % 32 < 16) {' "$ROOT/tests/kernels/divergent-barrier.cu" | cut -d: -f1)))
RUNS=$ONCE_WRONG kernel_cases wrong divergent-barrier divergent-barrier.cu "" \
  cta-barrier "every thread of a CTA must reach the same one (__syncthreads() and ncclCoopCta's sync are barrier.sync.aligned, undefined from divergent code: a GPU may hang); they parted at main.cu:$branch: \`if (threadIdx.x % 32 < 16) {\`"
RUNS=$ONCE_WRONG kernel_cases wrong atomics-of-device-scope atomics-into-peers.cu 's|atomicAdd_system(&theirs|atomicAdd(\&theirs|' \
  lsa-data-race "both are atomics, but one is of device scope"
RUNS=$ONCE_WRONG kernel_cases wrong plain-add-into-peers atomics-into-peers.cu 's|atomicAdd_system(&theirs\[i\], send\[i\]);|theirs[i] += send[i];|' \
  lsa-data-race "both are that line's, run by two ranks"
RUNS=$ONCE_WRONG kernel_cases wrong reads-the-next-ctas ctas-own-their-elements.cu 's|owner = blockIdx.x;|owner = (blockIdx.x + 1) % gridDim.x;|' \
  lsa-data-race "they are of two CTAs of one kernel"
RUNS=$ONCE_WRONG kernel_cases wrong device-fence-before-arrive fenced-two-shot.cu 's|__threadfence_system(); /\* release \*/|__threadfence(); /* release */|' \
  lsa-data-race "the __threadfence() before that rank's relaxed arrive does not release it: it is of device scope"
RUNS=$ONCE_WRONG kernel_cases wrong device-fence-after-wait fenced-two-shot.cu 's|__threadfence_system(); /\* acquire \*/|__threadfence(); /* acquire */|' \
  lsa-data-race "the __threadfence() after that wait does not make it an acquire: it is of device scope"
# A += is a load and a store, and a GPU may run another thread between
# them: then that thread's load comes before the first one's store, which
# is named as a store after another thread's read. Each seed's schedule
# decides whether it happens; of seeds 1 to 3, one at least has it.
if lsa_case kernels/wrong/shared-plus-equals/a-load-between-a-load-and-its-store; then
  kernel_program shared-plus-equals shared-count.cu 's|atomicAdd_block(&threads, 1.0f); /\* count \*/|threads += 1.0f; /* count */|'
  interleaved=0
  for seed in 1 2 3; do
    [ $interleaved = 0 ] || break
    kernel_run threads 2 $seed
    want_status 70
    grep -q "main.cu:[0-9]*) writes the word at byte 0 of a __shared__ object of its CTA, which rank [0-9]'s kernel (CTA [0-9]*, thread [0-9]*, main.cu:[0-9]*) read" "$f.err" &&
      interleaved=$((interleaved + 1))
  done
  [ $interleaved -gt 0 ] || why+="no seed ran a thread between another's load and store; "
  end
fi

# SIM_SEED fixes the whole schedule of a kernel that takes a device
# communicator (tests/sim/lockstep.c): the same seed says the same, byte
# for byte, twice as threads and once as MPI processes.
if lsa_case kernels/seed/same-seed-same-message; then
  kernel_program two-shot-release-middle two-shot.cu "${MIDDLE/ORDER/release}"
  for how in threads threads mpi; do
    [ $how = mpi ] && [ $HAVE_MPI = 0 ] && continue
    kernel_run $how 4 11
    want_status 70
    grep -h "RULE VIOLATION" "$f.err" >"$f.$how.$RANDOM"
  done
  [ "$(cat "$f".*.* | sort | uniq -c | wc -l)" = 1 ] && grep -q "SIM_SEED=11 repeats it" "$f".threads.* ||
    why+="the messages differ: $(cat "$f".*.* | sort | uniq -c | head -n 3 | tr '\n' ' '); "
  end
fi
# The same where the schedule's switches between a thread's load and its
# store decide which two threads of a CTA meet first at a +=.
if lsa_case kernels/seed/same-seed-same-message-interleaved; then
  kernel_program shared-plus-equals shared-count.cu 's|atomicAdd_block(&threads, 1.0f); /\* count \*/|threads += 1.0f; /* count */|'
  for how in threads threads mpi; do
    [ $how = mpi ] && [ $HAVE_MPI = 0 ] && continue
    kernel_run $how 2 12
    want_status 70
    grep -h "RULE VIOLATION" "$f.err" >"$f.$how.$RANDOM"
  done
  [ "$(cat "$f".*.* | sort | uniq -c | wc -l)" = 1 ] && grep -q "SIM_SEED=12 repeats it" "$f".threads.* ||
    why+="the messages differ: $(cat "$f".*.* | sort | uniq -c | head -n 3 | tr '\n' ' '); "
  end
fi

# A wait for a peer at an LSA barrier times out (SIM_TIMEOUT_MS) only when
# no rank of the team made progress that long (tests/sim/lockstep.c): on a
# slow machine (every GPU thread's step 40 us longer, SIM_STEP_US; a rank's
# turn then lasts longer than the limit) the lesson still passes; a rank
# that syncs its barrier once more than its peers is named.
if lsa_case kernels/slow-machine/lesson-threads-2; then
  kernel_program lesson - ""
  SIM_STEP_US=40 SIM_TIMEOUT_MS=100 kernel_run threads 2 1
  want_status 0
  want_out "Results verified correctly"
  no_violation
  end
fi
if lsa_case kernels/wrong/one-rank-syncs-once-more/threads-2-seed-1; then
  kernel_program one-rank-syncs-once-more - 's/^  bar.sync(ncclCoopCta(), cuda::memory_order_release);$/&\n  if (devComm.lsaRank == 0)\n    bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);/'
  grep -q "if (devComm.lsaRank == 0)" "$KP/main.cu" || why+="the edit did not apply; "
  SIM_TIMEOUT_MS=500 kernel_run threads 2 1
  want_status 70
  want_err "RULE VIOLATION [lsa-barrier] rank 0"
  want_err "(its sync #3) for rank 1, which never arrived, while no rank of the team made progress"
  end
fi

# The same kernel with the simulation's own limit out of the way: the
# watchdog (--timeout) names rank 0, stuck waiting for its GPU, and says
# that a peer whose kernel synced a barrier fewer times may be the cause.
if lsa_case kernels/hang/one-rank-syncs-once-more-watchdog; then
  kernel_program one-rank-syncs-once-more - 's/^  bar.sync(ncclCoopCta(), cuda::memory_order_release);$/&\n  if (devComm.lsaRank == 0)\n    bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);/'
  SIM_DIR=$TMPDIR SIM_DEVICES=2 NTHREADS=2 SIM_SEED=1 SIM_TIMEOUT_MS=600000 run "$KP/pthread" -n $SMALL --timeout 2
  want_status 3
  want_err "rank 0's call has not returned after --timeout 2 s"
  want_err "rank 0 waits for its GPU, whose queued work has not ended: a kernel of your own that syncs LSA barriers waits there for the same CTA of every peer"
  end
fi
# The same with rank 1's kernel syncing once more: the hint names rank 1,
# the rank blamed, not rank 0.
if lsa_case kernels/hang/rank-1-syncs-once-more-watchdog; then
  kernel_program rank-1-syncs-once-more - 's/^  bar.sync(ncclCoopCta(), cuda::memory_order_release);$/&\n  if (devComm.lsaRank == 1)\n    bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);/'
  grep -q "if (devComm.lsaRank == 1)" "$KP/main.cu" || why+="the edit did not apply; "
  SIM_DIR=$TMPDIR SIM_DEVICES=2 NTHREADS=2 SIM_SEED=1 SIM_TIMEOUT_MS=600000 run "$KP/pthread" -n $SMALL --timeout 2
  want_status 3
  want_err "rank 1's call has not returned after --timeout 2 s"
  want_err "rank 1 waits for its GPU, whose queued work has not ended: a kernel of your own that syncs LSA barriers waits there for the same CTA of every peer"
  no_err "rank 0 waits for its GPU"
  end
fi

# A learner's own kernel: the lesson folder and common/ copied out of the
# repository (to a path with a space), run on the simulation with one
# command (tools/simulate.sh --lesson); an edit that breaks a barrier is
# named; a compile error is the compiler's, with what is not simulated.
# copied_lesson SED: the copy in $copy (made once a run: its build of
# common/ serves every case), its main.cu the lesson's with SED applied.
copied_lesson() {
  copy="$TMPDIR/lesson copy"
  if [ ! -d "$copy/03_allreduce_lsa" ]; then
    mkdir -p "$copy"
    (cd "$ROOT" && tracked_files 03_allreduce_lsa common | grep -v '/python/' | tar -cf - -T -) | tar -xf - -C "$copy"
  fi
  cp "$ROOT/03_allreduce_lsa/c/main.cu" "$copy/03_allreduce_lsa/c/main.cu"
  [ -z "$1" ] || sed -i "$1" "$copy/03_allreduce_lsa/c/main.cu"
}
if lsa_case kernels/copied-lesson/as-copied; then
  copied_lesson ""
  NCCL_HOME=$LSA_NCCL_HOME NTHREADS=2 run "$ROOT/tools/simulate.sh" --lesson "$copy/03_allreduce_lsa" -n $SMALL
  want_status 0
  want_out "Results verified correctly"
  no_violation
  end
fi
if lsa_case kernels/copied-lesson/relaxed-last-barrier; then
  copied_lesson 's/cuda::memory_order_release);/cuda::memory_order_relaxed);/'
  NCCL_HOME=$LSA_NCCL_HOME NTHREADS=2 run "$ROOT/tools/simulate.sh" --lesson "$copy/03_allreduce_lsa" -n $SMALL
  want_status 70
  want_err "RULE VIOLATION [lsa-data-race]"
  want_err "main.cu:"
  end
fi
if lsa_case kernels/copied-lesson/compile-error; then
  copied_lesson 's/float v = 0.0f;/float v = 0.0f; __nanosleep(10);/'
  NCCL_HOME=$LSA_NCCL_HOME NTHREADS=2 run "$ROOT/tools/simulate.sh" --lesson "$copy/03_allreduce_lsa" -n $SMALL
  want_status 1
  want_err "error: '__nanosleep' was not declared in this scope"
  want_err "not simulated here: __nanosleep"
  want_err "simulate.sh: building $copy/03_allreduce_lsa/c for the simulation failed"
  no_err "CUDA_HOME"
  end
fi

# The kinds of mistake that a GPU showed wrong, or that NCCL's headers and
# CUDA's rules forbid, where the simulation once said "verified" or named
# the wrong cause: each wrong kernel beside a correct twin. make test runs
# each once (as above: ONCE_WRONG, ONCE_RIGHT; a kernel wrong only from 4
# ranks at 4); make test-kernels the whole matrix. The expected texts
# follow from each kernel's definition (which sync released what, which
# team, which requirement, which bytes).
# A wait is credited with the earliest arrival that satisfies it: the root
# waited for sync #2, the parts were released by sync #3 (the middle
# barrier came before the stores), or only later, while it read.
RUNS=$ONCE_RIGHT kernel_cases correct reduce-to-root reduce-to-root.cu ""
RUNS=$ONCE_WRONG kernel_cases wrong reads-one-barrier-early reads-one-barrier-early.cu "" lsa-data-race \
  "released it only at its sync #3, and no wait of this side with acquire observed sync #3 before this access: a wait for sync #2 is one barrier too early"
RUNS=$ONCE_RIGHT kernel_cases correct gather-overlapped gather-overlapped.cu ""
RUNS=$ONCE_WRONG kernel_cases wrong gather-arrive-before-stores gather-arrive-before-stores.cu "" lsa-data-race \
  "rank 1 released that write only later, at its sync #3 of LSA barrier 0, after this read: this side read it one barrier too early"
# Teams: a session syncs its team's ranks only (the inner half of the LSA
# team: at 2 ranks one rank alone); the twin's outer barriers start past
# the inner ones' inbox words (index * team size: lsaBarrierCount grown).
TEAMS='0,/reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT;/s//reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT * (total_ranks + 1);/'
RUNS=$ONCE_RIGHT kernel_cases correct two-level-teams two-level-teams.cu "$TEAMS"
RUNS=$ONCE_WRONG kernel_cases wrong sub-team-touches-all sub-team-touches-all.cu "" lsa-data-race \
  "is outside the team of this CTA's LSA barrier session"
# Pairs on barriers CTAs .. 2 CTAs - 1 of the handle whose first CTAs
# barriers the LSA team uses: from 4 ranks they share inbox words
# (2 * (16 + b) + p = 4 * b' + p'); at 2 ranks the two teams are one.
TWO_PER_CTA='0,/reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT;/s//reqs.lsaBarrierCount = 2 * NCCL_DEVICE_CTA_COUNT;/'
RUNS=mpi:4:2 kernel_cases wrong teams-share-inbox-words teams-share-inbox-words.cu "$TWO_PER_CTA" lsa-barrier \
  "so sessions of teams of other shapes on one handle share words"
# What the device communicator did not ask for: multicast (lsaMultimem).
MULTIMEM='0,/reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT;/s//&\n  reqs.lsaMultimem = props.multimemSupport;/'
RUNS=$ONCE_RIGHT kernel_cases correct multimem-if-requested multimem-if-requested.cu "$MULTIMEM"
RUNS=$ONCE_WRONG kernel_cases wrong multimem-not-requested multimem-not-requested.cu "" device-communicator \
  "an LSA barrier session with multimem=true, but the device communicator was created without multicast (ncclDevCommRequirements.lsaMultimem"
RUNS=$ONCE_WRONG kernel_cases wrong multimem-pointer-not-requested multimem-pointer-not-requested.cu "" device-communicator \
  "ncclGetLsaMultimemPointer with a NULL multicast handle: the device communicator was created without ncclDevCommRequirements.lsaMultimem"
if lsa_case kernels/multimem/asked-without-nvls; then # the simulation has none
  kernel_program multimem-asked multimem-if-requested.cu "${MULTIMEM/props.multimemSupport/true}"
  kernel_run threads 2 1
  want_status 1
  want_err "ncclDevCommCreate(comm, &reqs, &devComm) failed: invalid argument [NCCL: Multicast support requested for team but none available on system.]"
  end
fi
# Stale epochs: a session never ended, then a second launch; a second
# session of one CTA on its barrier.
TWICE='0,/^  CUDACHECK(cudaGetLastError());$/s//&\n  simpleAllReduceKernel<<<NCCL_DEVICE_CTA_COUNT, NCCL_DEVICE_THREADS_PER_CTA, 0, stream>>>(send_win, 0, recv_win, 0, count, devComm); \/* again *\/\n  CUDACHECK(cudaGetLastError());/'
RUNS=$ONCE_RIGHT kernel_cases correct lesson-launched-twice - "$TWICE"
RUNS=$ONCE_WRONG kernel_cases wrong session-never-ends session-never-ends.cu "$TWICE" lsa-barrier \
  "in launch #1 of a kernel with this device communicator never ended, so its epoch was never written back"
RUNS=$ONCE_RIGHT kernel_cases correct sessions-one-after-another sessions-one-after-another.cu ""
RUNS=$ONCE_WRONG kernel_cases wrong two-sessions-one-barrier two-sessions-one-barrier.cu "" lsa-barrier \
  "makes a second session on LSA barrier"
# A window deregistered before the kernel that uses it ran (its twin: the
# lesson), named with the call that deregistered it.
DEREG='0,/^  CUDACHECK(cudaGetLastError());$/s//&\n  NCCLCHECK(ncclCommWindowDeregister(comm, recv_win)); \/* before the kernel ran *\/\n  recv_win = NULL;/'
RUNS=$ONCE_WRONG kernel_cases wrong deregistered-before-the-kernel - "$DEREG" lsa-pointer \
  "'s ncclCommWindowDeregister at main.cu:$(($(grep -n '^  CUDACHECK(cudaGetLastError());$' "$ROOT/03_allreduce_lsa/c/main.cu" | head -n 1 | cut -d: -f1) + 1)), before this kernel used it"
# One rank's streams (tests/sim/order.c): the upload on a stream of its
# own, ordered before the kernel's stream by an event (the twin), or by
# nothing, so that the copy's writes and the kernel's reads of the send
# buffer are unordered; the result read with cudaMemcpy (the per-thread
# default stream, which waits for no other stream) without waiting for the
# kernel's stream. Each is named with both calls and the order missing: an
# event after the one queued first, waited for on the other's stream.
UPLOAD_STREAM='s/^  CUDACHECK(cudaStreamCreate(&stream));$/&\n  cudaStream_t upload;\n  CUDACHECK(cudaStreamCreate(\&upload));/; s/cudaMemcpyHostToDevice, stream));/cudaMemcpyHostToDevice, upload));/; s/^  CUDACHECK(cudaStreamDestroy(stream));$/&\n  CUDACHECK(cudaStreamDestroy(upload));/'
UPLOAD_EVENT='/cudaMemcpyHostToDevice, upload));/a\  cudaEvent_t uploaded;\n  CUDACHECK(cudaEventCreateWithFlags(\&uploaded, cudaEventDisableTiming));\n  CUDACHECK(cudaEventRecord(uploaded, upload));\n  CUDACHECK(cudaStreamWaitEvent(stream, uploaded, 0));\n  CUDACHECK(cudaEventDestroy(uploaded));'
NO_WAIT='0,/^  CUDACHECK(cudaStreamSynchronize(stream));$/s//  \/\/ (no wait for the kernel)/'
kernel_cases correct upload-ordered-by-an-event - "$UPLOAD_STREAM
$UPLOAD_EVENT"
kernel_cases wrong upload-on-another-stream - "$UPLOAD_STREAM" stream-data-race \
  "record an event after cudaMemcpyAsync (cudaEventRecord on its stream) and cudaStreamWaitEvent on kernel simpleAllReduceKernel's stream before queuing it"
# (The copy's line is its statement's first: CUDACHECK( on the line before.)
kernel_cases wrong result-read-without-waiting - "$NO_WAIT" stream-data-race \
  "cudaMemcpy at main.cu:$(($(grep -n 'cudaMemcpy(h_result, d_recvbuff' "$ROOT/03_allreduce_lsa/c/main.cu" | cut -d: -f1) - 1)) on the per-thread default stream reads byte"
# Window bounds to the byte: 4099 floats, 16396 bytes; the last float4
# (bytes 16384 to 16399) runs 4 bytes past the window.
KERNEL_COUNT=4099 RUNS=$ONCE_RIGHT kernel_cases correct float4-and-tail float4-and-tail.cu ""
KERNEL_COUNT=4099 RUNS=$ONCE_WRONG kernel_cases wrong float4-tail float4-tail.cu "" memory-access \
  "reads bytes 16384 to 16399 of rank 0's buffer, past the end of its $((4099 * 4))-byte window"
# A grid sized to the GPU: 1024 CTAs (of 32 threads, all resident as on an
# H100), each with its barrier; past the clocks' 1024 lanes, refused.
MANY='s/^#define NCCL_DEVICE_CTA_COUNT       16$/#define NCCL_DEVICE_CTA_COUNT       1024/; s/^#define NCCL_DEVICE_THREADS_PER_CTA 512$/#define NCCL_DEVICE_THREADS_PER_CTA 32/'
RUNS=$ONCE_RIGHT kernel_cases correct grid-of-1024-ctas - "$MANY"
if lsa_case kernels/not-simulated/grid-of-1025-ctas; then
  kernel_program grid-of-1025-ctas - "${MANY//1024/1025}"
  kernel_run threads 2 1
  want_status 70
  want_err "ncclsim: not simulated here: simpleAllReduceKernel: a grid of 1025 CTAs, over the 1024 the simulation's clocks keep apart"
  no_violation
  end
fi
# Several LSA teams (SIM_LSA_TEAM_SIZE=2 at 4 ranks: ranks 0-1 and 2-3):
# ncclGetLsaPointer's peer is a rank of the caller's own LSA team (NCCL
# 2.30.7 nccl_device/impl/core__funcs.h: the team's flat mapping, peer
# times its stride), so each team sums its own ranks' values: element i
# of a team whose first rank is t is pattern_value(t, i) + pattern_value(t
# + 1, i) (common/src/verify.c, the lesson's fill). The lesson, which
# refuses more than one team, with that refusal taken out and the sum it
# expects per team.
TEAMS_OF_2='s/^                                  props.nLsaTeams))$/                                  1))/; s|^  const int ok = verify_allreduce_pattern(ctx, h_result, count);$|  const int t = my_rank - my_rank % 2; int mine = 1; for (size_t i = 0; i < count; i++) mine \&= h_result[i] == pattern_value(t, i) + pattern_value(t + 1, i); const int ok = all_ranks_ok(ctx, mine); print_root(ctx, ok ? "Results verified correctly\\n" : "Results verification failed\\n"); /* teams of 2 */|'
if lsa_case kernels/correct/two-lsa-teams/threads-4-seed-1; then
  kernel_program two-lsa-teams - "$TEAMS_OF_2"
  [ "$(grep -c "teams of 2\|^                                  1))$" "$KP/main.cu")" = 2 ] || why+="the edits did not apply; "
  SIM_LSA_TEAM_SIZE=2 kernel_run threads 4 1
  want_status 0
  want_out "Results verified correctly"
  no_violation
  end
fi
# Fresh __shared__ memory is not zeroed on a GPU (CUDA C++ Programming
# Guide: __shared__ variables cannot be initialised in their declaration,
# and hold whatever was there): shared-memory.cu without the zero that
# thread 0 stores adds every sum to what was there, and its check fails.
if lsa_case kernels/wrong/shared-never-zeroed/threads-2-seed-1; then
  kernel_program shared-never-zeroed shared-memory.cu 's|^    zero = 0.0f;$|    (void)zero; /* never zeroed */|'
  grep -q "never zeroed" "$KP/main.cu" || why+="the edit did not apply; "
  kernel_run threads 2 1
  want_status 1
  want_out "Results verification failed"
  no_out "Results verified correctly"
  no_violation
  end
fi
# Resident CTAs (tests/sim/fibers.c): with SIM_CTA_SLOTS=1 one CTA of
# each rank runs at a time, admitted in a random order; the lesson's
# kernel on 2 CTAs, each CTA syncing its LSA barrier with the same CTA of
# the other rank. Where the ranks admit different CTAs first (as at
# schedule seed 1: rank 1 runs CTA 0, rank 0 CTA 1), each waits for a CTA
# of the other rank that is not resident, and never will be: a hang,
# named. With both CTAs resident it would pass.
TWO_CTAS='s/^#define NCCL_DEVICE_CTA_COUNT       16$/#define NCCL_DEVICE_CTA_COUNT       2/'
if lsa_case kernels/hang/a-cta-past-the-slots/threads-2-seed-1; then
  kernel_program two-ctas - "$TWO_CTAS"
  grep -q "^#define NCCL_DEVICE_CTA_COUNT       2$" "$KP/main.cu" || why+="the edit did not apply; "
  SIM_CTA_SLOTS=1 SIM_TIMEOUT_MS=500 kernel_run threads 2 1
  want_status 70
  want_err "RULE VIOLATION [lsa-barrier] rank"
  # Either side of the deadlock may run out of time first (each rank's
  # resident CTA waits for the peer's CTA that is not): its barrier is its
  # own CTA's, and the rank it waits for is the other one.
  grep -qE "rank ([01]) in kernel simpleAllReduceKernel \(CTA ([01]), thread 0; schedule seed 1.* at LSA barrier \2 \(its sync #1\) for rank (1|0), which never arrived, while no rank of the team made progress" "$f.err" &&
    ! grep -qE "rank ([01]) in kernel [^(]*\(CTA [01], thread 0; schedule seed 1.* for rank \1, which never arrived" "$f.err" ||
    why+="stderr lacks the hang: a rank's CTA waiting at its own LSA barrier (sync #1) for the other rank, which never arrived; "
  end
fi
# A verdict that waited for the writer (tests/sim/races.c) is said in its
# turn of the lockstep: SIM_SEED still repeats it byte for byte.
if lsa_case kernels/seed/same-seed-same-message-after-the-writer; then
  kernel_program gather-arrive-before-stores gather-arrive-before-stores.cu ""
  for how in threads threads mpi; do
    [ $how = mpi ] && [ $HAVE_MPI = 0 ] && continue
    kernel_run $how 4 11
    want_status 70
    grep -h "RULE VIOLATION" "$f.err" >"$f.$how.$RANDOM"
  done
  [ "$(cat "$f".*.* | sort | uniq -c | wc -l)" = 1 ] && grep -q "released that write only later" "$f".threads.* ||
    why+="the messages differ, or say another cause: $(cat "$f".*.* | sort | uniq -c | cut -c1-300 | head -n 3 | tr '\n' ' '); "
  end
fi

# tools/kernels_on_gpu.sh writes the kernel cases' sources as the suite
# makes them: one per kernel_cases line of 42-kernels.sh, each with what
# the suite expects of it, the lesson's own main.cu unchanged and a case's
# edit made; without NCCL_HOME, or without a GPU, it refuses, naming why.
if begin kernels/on-a-gpu/writes-the-suites-cases; then
  run env EXPORT_ONLY=1 bash tools/kernels_on_gpu.sh "$TMPDIR/kernels-gpu"
  want_status 0
  want_out "$(grep -cE '^(RUNS=[^ ]* |KERNEL_COUNT=[0-9]* )*kernel_cases (correct|wrong) ' tests/suites/42-kernels.sh) kernel cases in $TMPDIR/kernels-gpu/src"
  k=$TMPDIR/kernels-gpu/src
  cmp -s "$k/lesson/main.cu" 03_allreduce_lsa/c/main.cu || why+="lesson/main.cu is not the lesson's; "
  grep -q 'memory_order_release); /\* middle \*/' "$k/two-shot-release-middle/main.cu" ||
    why+="two-shot-release-middle lacks its release-only middle barrier; "
  [ "$(cat "$k/float4-tail/case" 2>/dev/null)" = "$(printf 'kind wrong\nrule memory-access\ncount 4099')" ] ||
    why+="float4-tail/case: '$(tr '\n' ' ' <"$k/float4-tail/case" 2>/dev/null)'; "
  end
fi
if [ "$NGPUS" = 0 ] && begin kernels/on-a-gpu/refuses-without-nccl-home-or-a-gpu; then
  run env -u NCCL_HOME bash tools/kernels_on_gpu.sh "$TMPDIR/kernels-gpu-2"
  want_status 2
  want_err "kernels_on_gpu.sh: NCCL_HOME is not set: it names the NCCL (>= 2.30.7) to build and run with"
  NCCL_HOME=$TMPDIR run bash tools/kernels_on_gpu.sh "$TMPDIR/kernels-gpu-2" two-shot
  want_status 2
  want_err "kernels_on_gpu.sh: no GPU here (nvidia-smi -L lists none)"
  run env NCCL_HOME="$TMPDIR" bash tools/kernels_on_gpu.sh "$TMPDIR/kernels-gpu-2" no-such-kernel
  want_status 2
  want_err "kernels_on_gpu.sh: no kernel case named 'no-such-kernel'"
  end
fi
