# The fast-kernel lesson (04_allreduce_fast) on the simulation: its stages'
# kernels as fibers at 1 to 8 ranks, threads and MPI, against the oracle;
# its kernels at every float-aligned window offset and every count
# remainder (tests/fast/offsets.cu); broken kernels named by the
# simulation's rules or by the lesson's own check; --bench with every
# stage as a mode; tools/simulate.sh.
# Cases: fast/fast-pthread/allreduce_fast-N-count-C, fast/fast-mpi/...,
# fast/offsets/..., fast/rules/..., fast/wrong/..., fast/bench/...,
# fast/simulate/..., fast/properties/... (tests/oracles/properties.py)
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: fourth (tests/run_tests.sh runs the lanes of a whole run at once)

FAST_MEASURED=$([ -e "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ] && echo --measured)

fast_run() { # VARIANT NRANKS ARGS...
  local variant=$1 n=$2
  shift 2
  if [[ $variant == *mpi ]]; then
    SIM_DIR=$TMPDIR SIM_DEVICES=8 run "${MPIRUN[@]}" -np "$n" "$B/$variant/allreduce_fast" "$@"
  else
    SIM_DIR=$TMPDIR SIM_DEVICES=8 NTHREADS=$n run "$B/$variant/allreduce_fast" "$@"
  fi
}

# Every rank count, with a count that is not a multiple of 4 (a scalar
# tail) nor of any rank count from 2 to 8 (4099 is prime), as threads and
# as MPI processes; a few counts more at 3 and 4 ranks: one float, fewer
# than one vector, and more than one CTA's 8192 floats.
fast_output_case() { # VARIANT NRANKS COUNT [properties]
  local variant=$1 n=$2 count=$3 name="fast/$1/allreduce_fast-$2-count-$3"
  [ "${4:-}" = properties ] && name="fast/properties/${variant#fast-}-$n-count-$count"
  fast_case "$name" || return 0
  expected allreduce_fast "$n" --count "$count" --mode "$(mode_of "$variant")" --gpus 8 \
    $FAST_MEASURED >"$f.expected"
  fast_run "$variant" "$n" -n "$count"
  want_status 0
  want_out_file "$f.expected"
  no_violation
  end
}
for n in 1 2 3 4 5 6 7 8; do fast_output_case fast-pthread $n 4099; done
for n in 1 2 3 4 5 6 7 8; do fast_output_case fast-mpi $n 4099; done
for c in 1 3 100003; do fast_output_case fast-pthread 3 $c; done
fast_output_case fast-pthread 4 131072 # at the one-shot's limit: 4 x 512 KiB read
fast_output_case fast-pthread 4 131073 # one float past it: the push kernel

# Properties (tests/oracles/properties.py), as lesson 03's
# (tests/suites/41-lsa.sh): make test a few, make test-properties all.
while read -r n count; do
  fast_output_case fast-pthread "$n" "$count" properties
done < <(python3 "$ROOT/tests/oracles/properties.py" "${PROPERTY_MATRIX:-quick}")

# The kernels at window offsets, threads and MPI (tests/fast/offsets.cu:
# 264 cases per run, every element of the window checked).
for run_spec in threads:1 threads:3 threads:4 mpi:2; do
  IFS=: read -r how n <<<"$run_spec"
  fast_case "fast/offsets/$how-$n" || continue
  need fast-offsets
  if [ $how = mpi ]; then
    SIM_DIR=$TMPDIR SIM_DEVICES=$n run "${MPIRUN[@]}" -np "$n" "$B/fast-offsets/mpi"
  else
    SIM_DIR=$TMPDIR SIM_DEVICES=$n NTHREADS=$n run "$B/fast-offsets/pthread"
  fi
  want_status 0
  want_out "264 cases, all right" # 8 offset pairs x 11 counts x 3 kernels
  no_violation
  end
done

# A broken lesson: its kernels.cuh (or main.cu) edited in a copy, built as
# the simulated lesson is, run at 4 ranks (3 seeds for a rule, 1 for a
# wrong sum). Each must fail:
# either a rule of the simulation names the mistake (exit 70), or the
# lesson's own check finds the wrong sums (exit 1).
fast_broken() { # KIND NAME WANT FILE SED-EXPRESSION [COUNT]
  local kind=$1 name=$2 want=$3 file=$4 edit=$5 count=${6:-4099} dir objs seed
  fast_case "fast/$kind/$name" || return 0
  dir=$TMPDIR/$name
  mkdir -p "$dir"
  cp "$ROOT/04_allreduce_fast/c/main.cu" "$ROOT/04_allreduce_fast/c/kernels.cuh" "$dir/"
  sed -i "$edit" "$dir/$file"
  cmp -s "$ROOT/04_allreduce_fast/c/$file" "$dir/$file" && why+="the edit changed nothing; "
  objs=$(find "$B/fast-pthread/obj/pthread" -name '*.o' ! -name main.o | sort)
  { "$ROOT/tests/sim/compile_cu.sh" g++ -I"$ROOT/common/include" -I"$LSA_NCCL_HOME/include" \
      -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 -idirafter "${CUDA_HOME:-/usr/local/cuda}/include" \
      -D_GNU_SOURCE -O0 -g -c -o "$dir/main.o" "$dir/main.cu" &&
    cc -o "$dir/bin" "$dir/main.o" $objs "$B/lsa-pthread/sim.o" -Wl,--wrap=set_error_rank \
      -lstdc++ -pthread -lm; } >"$f.build" 2>&1 || why+="the edited copy did not build (see $f.build); "
  # Three schedules for a rule of ordering; a wrong sum needs one.
  for seed in $([ "$kind" = rules ] && echo 1 2 3 || echo 1); do
    SIM_SEED=$seed SIM_DIR=$TMPDIR NTHREADS=4 SIM_DEVICES=4 run "$dir/bin" -n "$count"
    if [ "$kind" = rules ]; then want_status 70; else want_status 1; fi
    want_err "$want"
  done
  end
}
# What the simulation names: a barrier of the two-shot that orders one
# way only, or none; the first barrier relaxed.
fast_broken rules two-shot-middle-release-only "this side did not acquire it" kernels.cuh \
  's/bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);/bar.sync(ncclCoopCta(), cuda::memory_order_release);/'
fast_broken rules two-shot-middle-acquire-only "[lsa-data-race] rank" kernels.cuh \
  's/bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);/bar.sync(ncclCoopCta(), cuda::memory_order_acquire);/'
fast_broken rules two-shot-no-middle-barrier "[lsa-data-race] rank" kernels.cuh \
  's/bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);/\/\/ (removed)/'
fast_broken rules vector-past-the-window "[memory-access] rank" kernels.cuh \
  's/l.vectors = (w.count - l.head) \/ FLOATS_PER_VECTOR;/l.vectors = (w.count - l.head + FLOATS_PER_VECTOR - 1) \/ FLOATS_PER_VECTOR;/'
# The reset of the result on a second stream, with no event: unordered
# with the kernel that writes the result and the copy that reads it
# (stream-data-race, tests/sim/order.c).
fast_broken rules memset-on-another-stream "[stream-data-race] rank" main.cu \
  '0,/^    CUDACHECK(cudaMemsetAsync(d_recvbuff, 0xff, size_bytes, stream));$/s//    cudaStream_t side;\n    CUDACHECK(cudaStreamCreateWithFlags(\&side, cudaStreamNonBlocking));\n    CUDACHECK(cudaMemsetAsync(d_recvbuff, 0xff, size_bytes, side));/'
# A head counted in bytes, not floats: at a window offset of 4 bytes the
# first vector is not 16-byte aligned, which a GPU's float4 load faults on
# (tests/fast/offsets.cu, built with the edited kernels.cuh).
if fast_case fast/rules/head-counted-in-bytes; then
  need fast-offsets
  dir=$TMPDIR/head-in-bytes && mkdir -p "$dir"
  sed 's|(16 - s % 16) % 16 / sizeof(float);|(16 - s % 16) % 16;|' "$ROOT/04_allreduce_fast/c/kernels.cuh" >"$dir/kernels.cuh"
  cmp -s "$ROOT/04_allreduce_fast/c/kernels.cuh" "$dir/kernels.cuh" && why+="the edit changed nothing; "
  { "$ROOT/tests/sim/compile_cu.sh" g++ -I"$ROOT/common/include" -I"$dir" -I"$LSA_NCCL_HOME/include" \
      -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 -idirafter "${CUDA_HOME:-/usr/local/cuda}/include" \
      -D_GNU_SOURCE -O0 -g -c -o "$dir/offsets.o" "$ROOT/tests/fast/offsets.cu" &&
    cc -o "$dir/bin" "$dir/offsets.o" $(find "$B/fast-pthread/obj/pthread" -name '*.o' ! -name main.o | sort) \
      "$B/lsa-pthread/sim.o" -Wl,--wrap=set_error_rank -lstdc++ -pthread -lm; } >"$f.build" 2>&1 ||
    why+="the edited copy did not build (see $f.build); "
  SIM_DIR=$TMPDIR NTHREADS=2 SIM_DEVICES=2 run "$dir/bin"
  want_status 70
  want_err "[misaligned-access] rank"
  want_err "an address that is not a multiple of 16: a GPU's 16-byte instruction faults there (misaligned address)"
  end
fi

# What the lesson's check finds: the scalar tail dropped, a wrong owner's
# slice copied in the two-shot's second phase, rank 0's send window never
# read (a sum a constant fill of the rank's number, 0 on rank 0, would not
# see).
fast_broken wrong tail-dropped "wrong result on rank" kernels.cuh \
  's/l.tail_begin = l.head + l.vectors \* FLOATS_PER_VECTOR;/l.tail_begin = w.count;/'
fast_broken wrong two-shot-wrong-owner-slice "wrong result on rank" kernels.cuh \
  's/const Range theirs = slice(l.vectors, owner, n);/const Range theirs = slice(l.vectors, rank, n);/'
# A thread's unrolled vectors taken side by side (the next thread's)
# instead of a CTA apart: threads store the same words unordered.
fast_broken rules unrolled-vectors-adjacent "[lsa-data-race] rank" kernels.cuh \
  's/const size_t k = i + (size_t)u \* blockDim.x;/const size_t k = i + (size_t)u;/'
fast_broken wrong rank-0-never-read "wrong result on rank" kernels.cuh \
  's/for (int peer = 0; peer < npeers; peer++) {/for (int peer = 1; peer < npeers; peer++) {/'

# --bench: every stage a mode, beside ncclAllReduce, each verified.
if fast_case fast/bench/fast-pthread-2; then
  SIM_DIR=$TMPDIR NTHREADS=2 SIM_DEVICES=2 run "$B/fast-pthread/allreduce_fast" --bench -b 4K -e 4K -w 1 -i 2 -r 1
  want_status 0
  want_out "# modes: vec = stage 1: 16-byte vectors, 16 CTAs; grid = stage 2: the grid sized to the GPU; 1shot = stage 3: one-shot; 2shot = stage 3: two-shot; fast = the lesson's choice: one-shot, or the push kernel for larger messages; sym = ncclAllReduce on symmetric windows; plain = ncclMemAlloc buffers, no windows"
  want_out "Benchmark results verified correctly"
  no_violation
  end
fi

# tools/simulate.sh as a learner runs it.
for how in threads:2 mpi:2; do
  IFS=: read -r how n <<<"$how"
  fast_case "fast/simulate/$how-$n" || continue
  if [ $how = mpi ]; then NCCL_HOME=$LSA_NCCL_HOME run "$ROOT/tools/simulate.sh" --mpi $n allreduce_fast -n $SMALL
  else NCCL_HOME=$LSA_NCCL_HOME NTHREADS=$n run "$ROOT/tools/simulate.sh" allreduce_fast -n $SMALL; fi
  want_status 0
  want_out "Results verified correctly"
  [[ $(head -n 1 "$f.out") == "# SIMULATED: no GPU ran this; "* ]] || why+="first line: '$(head -n 1 "$f.out")'; "
  no_violation
  end
done

# Ranks sharing one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1): each rank's grid
# is its share of what the GPU holds, so that every rank's CTAs are on it
# at once.
for n in 2 3; do
  fast_case "fast/shared-gpu/threads-$n-on-one-gpu" || continue
  expected allreduce_fast "$n" --count 4099 --gpus 1 --shared-sms 132 $FAST_MEASURED >"$f.expected"
  NCCL_MULTI_RANK_GPU_ENABLE=1 SIM_DIR=$TMPDIR SIM_DEVICES=1 NTHREADS=$n run "$B/fast-pthread/allreduce_fast" -n 4099
  want_status 0
  want_out_file "$f.expected"
  no_violation
  end
done

# --cold: each operation on the next part of the windows, the lesson's
# kernels at those offsets, every result checked, eager and replayed.
if fast_case fast/bench/fast-pthread-2-cold-graph; then
  SIM_DIR=$TMPDIR NTHREADS=2 SIM_DEVICES=2 run "$B/fast-pthread/allreduce_fast" --bench -b 4K -e 16K -w 1 -i 3 -r 1 --cold --graph
  want_status 0
  want_out "# cache: cold (--cold): operation k of a size works on part k mod P of the buffers"
  want_out "Benchmark results verified correctly"
  no_violation
  end
fi
