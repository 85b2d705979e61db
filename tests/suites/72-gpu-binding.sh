# One GPU per task: each process sees only the GPU it was given, as device
# 0 (Slurm's --gpus-per-task=1 or --gpu-bind, or a launcher that sets
# CUDA_VISIBLE_DEVICES per rank). The simulation honours
# CUDA_VISIBLE_DEVICES as CUDA does and gives each of the machine's
# devices its own UUID, so two processes that see "device 0" may use two
# GPUs or one; the programs compare the UUIDs.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

# bound_run PROGRAM LIST ARGS...: mpirun with one process per entry of the
# comma-separated LIST, process i seeing the machine's device LIST[i] alone
# (2 simulated devices); sets $status.
bound_run() {
  local p=$1 list=$2 i=0 spec=() d
  shift 2
  need programs-sim-mpi
  for d in ${list//,/ }; do
    [ $i -gt 0 ] && spec+=(:)
    spec+=(-np 1 env CUDA_VISIBLE_DEVICES=$d "$B/sim-mpi/$p" "$@")
    i=$((i + 1))
  done
  SIM_DEVICES=2 SIM_DIR=$TMPDIR run "${MPIRUN[@]}" "${spec[@]}"
}

# The UUID the simulation gives the machine's device 0 (tests/sim/cuda.c).
SIM_GPU0=GPU-513d0000-c0de-4000-8000-000000000000

for p in $PROGRAMS; do
  c="gpu-binding/mpi/$p-one-gpu-per-task"
  if mpi_cases "$c" && begin "$c"; then
    expected $p 2 --count $SMALL --mode mpi --gpus 1 >"$f.expected"
    bound_run $p 0,1 -n $SMALL
    want_status 0; want_out_file "$f.expected"; no_violation; end
  fi
  c="gpu-binding/mpi/$p-two-tasks-one-gpu"
  if mpi_cases "$c" && begin "$c"; then
    bound_run $p 0,0 -n $SMALL
    want_failure
    want_err "rank 0: 2 ranks on "
    want_err " share GPUs (ranks 0 and 1 use $SIM_GPU0); one rank per GPU"
    [ "$(grep -c 'share GPUs' "$f.err")" = 1 ] ||
      why+="the node's verdict was said $(grep -c 'share GPUs' "$f.err") times, not once; "
    no_out "Starting"; end
  fi
  c="gpu-binding/mpi/$p-two-tasks-one-gpu-nccl-2.30.7-shares"
  if mpi_cases "$c" && begin "$c"; then
    expected $p 2 --count $SMALL --mode mpi --gpus 1 --shared-sms 132 >"$f.expected"
    NCCL_MULTI_RANK_GPU_ENABLE=1 SIM_NCCL_VERSION=23007 bound_run $p 0,0 -n $SMALL
    want_status 0; want_out_file "$f.expected"; no_violation; end
  fi
  c="gpu-binding/mpi/$p-two-tasks-one-gpu-nccl-2.28.3-refuses"
  if mpi_cases "$c" && begin "$c"; then
    NCCL_MULTI_RANK_GPU_ENABLE=1 SIM_NCCL_VERSION=22803 bound_run $p 0,0 -n $SMALL
    want_failure
    want_err "ranks may share a GPU only with NCCL >= 2.30, and the loaded NCCL is 2.28.3"
    want_err "(ranks 0 and 1 use $SIM_GPU0)"
    no_out "Starting"; end
  fi
  c="gpu-binding/mpi/$p-three-tasks-two-gpus"
  if mpi_cases "$c" && begin "$c"; then
    bound_run $p 1,0,1 -n $SMALL
    want_failure
    want_err " share GPUs (ranks 0 and 2 use GPU-513d0000-c0de-4000-8000-000000000001)"
    no_out "Starting"; end
  fi
done
c="gpu-binding/pthread/allreduce_sm-CUDA_VISIBLE_DEVICES=1"
if begin "$c"; then
  expected allreduce_sm 1 --count $SMALL >"$f.expected"
  CUDA_VISIBLE_DEVICES=1 SIM_DEVICES=2 sim_run sim-pthread allreduce_sm 1 -n $SMALL
  want_status 0; want_out_file "$f.expected"; no_violation; end
fi
# CUDA reads CUDA_VISIBLE_DEVICES up to the first entry that names no
# device: "0,9,1" on 4 GPUs is device 0 alone, so 2 ranks are too many.
c="gpu-binding/pthread/allreduce_sm-CUDA_VISIBLE_DEVICES-list-ends-at-a-missing-device"
if begin "$c"; then
  CUDA_VISIBLE_DEVICES=0,9,1 SIM_DEVICES=4 sim_run sim-pthread allreduce_sm 2 -n $SMALL
  want_status 2
  want_err "allreduce_sm: NTHREADS=2 asks for more ranks than GPUs: 1 visible"
  end
fi
c="gpu-binding/pthread/allreduce_sm-CUDA_VISIBLE_DEVICES-names-no-device"
if begin "$c"; then
  CUDA_VISIBLE_DEVICES=7 SIM_DEVICES=2 sim_run sim-pthread allreduce_sm 1 -n $SMALL
  want_status 1
  want_err "no usable GPU: cudaGetDeviceCount failed"
  end
fi
