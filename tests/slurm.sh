#!/usr/bin/env bash
# The programs under a real Slurm, as a cluster's users run them
# (`make test-slurm`; as root, no GPU needed). It starts a one-node Slurm
# cluster of its own: slurmctld, slurmd and munged in a scratch folder, on
# ports of their own, with four GPUs that exist only for Slurm (GRES on
# character devices made with mknod; Slurm sets CUDA_VISIBLE_DEVICES from
# them, and the simulation honours it). It copies the checkout into a
# folder whose path has spaces, owned by an unprivileged user, and as that
# user:
#   - runs docs/clusters.md's blocks marked "needs Slurm" (make MPI=1 against
#     the simulation, srun --gpus-per-task=1, sbatch --wait with the scripts
#     of docs/slurm: one GPU per task, and mpirun inside an allocation of
#     every GPU of the node);
#   - runs srun jobs whose output is checked against the one oracle
#     (tests/oracles/expected_output.py): one GPU per task, two tasks given one
#     GPU (refused; shared with NCCL 2.30's switch), a rank that hangs;
#   - runs a few cases of `make test` there (the suite from a path with
#     spaces, as a user who is not root).
# Everything it started is stopped at the end, the user it made removed.
#
# Output is TAP like run_tests.sh's, ending "N passed, N failed, N skipped";
# exit 0 only if none failed. Without root or Slurm's packages it says why
# and skips (exit 0), unless TEST_SLURM_REQUIRED=1 (CI), which fails then.
# Logs: tests/build/slurm-logs (the daemons' logs too). TEST_FILTER=re runs
# only the cases whose name matches; TEST_LIST=1 prints their names.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib/environment.sh
ROOT=$PWD
B=$ROOT/tests/build
LOG=$B/slurm-logs
TIMEOUT=${TEST_TIMEOUT:-60}
FILTER=${TEST_FILTER:-}
LIST=${TEST_LIST:-}
USER_NAME=nccl-suite-user
DOC=docs/clusters.md

. tests/lib/tap.sh
CASES="slurm/cluster-starts slurm/docs/$DOC"
for p in allreduce_sm allgather_ce; do CASES+=" slurm/srun/$p-one-gpu-per-task"; done
CASES+=" slurm/srun/two-tasks-one-gpu-refused slurm/srun/two-tasks-one-gpu-nccl-2.30.7-shares"
CASES+=" slurm/srun/hang-ends-the-step-with-exit-3 slurm/make-test-as-a-user-in-a-path-with-spaces"
if [ -n "$LIST" ]; then
  for c in $CASES; do begin "$c"; done
  exit 0
fi

# Can it run here? Else every case is a skip with the reason.
lacking=""
[ "$(id -u)" = 0 ] || lacking="it starts Slurm's daemons and adds a user: run it as root"
for c in slurmctld slurmd srun sbatch sinfo munged mknod useradd runuser mpicc mpirun python3; do
  command -v $c >/dev/null || lacking+="${lacking:+; }$c not found"
done
if [ -n "$lacking" ]; then
  [[ $lacking == *"not found"* ]] &&
    lacking+=" (Debian: apt-get install slurmd slurmctld slurm-client munge openmpi-bin libopenmpi-dev)"
  for c in $CASES; do skip "$c" "$lacking"; done
  echo "1..$number"
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "${TEST_SLURM_REQUIRED:-}" = 1 ] && { echo "slurm.sh: TEST_SLURM_REQUIRED=1, and it cannot run: $lacking" >&2; exit 1; }
  exit 0
fi

rm -rf "$LOG" && mkdir -p "$LOG"
. tests/lib/programs.sh
why="" unbuilt=""
need programs-sim-mpi
[ -z "$unbuilt" ] || { echo "slurm.sh: the simulation did not build (see $LOG/build.log)" >&2; exit 1; }

# The scratch folder: the cluster's files (root's), the simulation, and the
# user's checkout, in a folder whose path has spaces.
S=$(mktemp -d /tmp/nccl-slurm.XXXXXX) || exit 1
chmod 755 "$S"
C=$S/cluster
HOMEDIR="$S/home of a user"
REPO="$HOMEDIR/nccl symmetric memory"
made_user=0
stop_all() {
  local pid
  for pid in "$C/slurmd.pid" "$C/slurmctld.pid"; do
    [ -s "$pid" ] && kill "$(cat "$pid")" 2>/dev/null
  done
  [ -S "$C/munge/socket" ] && munged --stop --socket="$C/munge/socket" >/dev/null 2>&1
  sleep 1
  cp "$C"/log/*.log "$LOG/" 2>/dev/null
  [ $made_user = 1 ] && userdel "$USER_NAME" 2>/dev/null
  [ "${TEST_SLURM_KEEP:-}" = 1 ] && echo "# kept: $S" || rm -rf "$S"
}
trap stop_all EXIT

if ! id "$USER_NAME" >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /bin/bash "$USER_NAME" || { echo "slurm.sh: useradd $USER_NAME failed" >&2; exit 1; }
  made_user=1
fi

mkdir -p "$C"/{state,spool,log,dev,munge,key} "$S/sim" "$REPO" "$S/tmp"
chmod 700 "$C/key"
for i in 0 1 2 3; do mknod "$C/dev/gpu$i" c 195 $i; done
cp "$B/sim-mpi/sim.o" "$S/sim/sim.o"
chmod -R a+rX "$S/sim" "$C"
chmod 700 "$C/key"
read -r ctld_port d_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
host=$(hostname -s)
cat >"$C/slurm.conf" <<EOF
ClusterName=ncclsuite
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$C/munge/socket
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd.pid
SlurmctldLogFile=$C/log/slurmctld.log
SlurmdLogFile=$C/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=8 Gres=gpu:4 State=UNKNOWN
PartitionName=suite Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
echo "Name=gpu File=$C/dev/gpu[0-3]" >"$C/gres.conf"
export SLURM_CONF=$C/slurm.conf
dd if=/dev/urandom of="$C/key/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$C/key/munge.key"
munged --force --socket="$C/munge/socket" --key-file="$C/key/munge.key" --log-file="$C/log/munged.log" \
  --pid-file="$C/key/munged.pid" --seed-file="$C/key/munged.seed" >"$LOG/munged.out" 2>&1
chmod 755 "$C/munge"
echo "# $(srun --version), $(mpirun --version 2>/dev/null | head -n 1), user $USER_NAME, checkout '$REPO'"
slurmctld -f "$SLURM_CONF" >"$LOG/slurmctld.out" 2>&1
slurmd -f "$SLURM_CONF" >"$LOG/slurmd.out" 2>&1

if begin slurm/cluster-starts; then
  for ((i = 0; i < 100; i++)); do
    state=$(sinfo -h -N -o '%t %G' 2>"$f.err")
    [ "$state" = "idle gpu:4" ] && break
    sleep 0.2
  done
  echo "$state" >"$f.out"
  [ "$state" = "idle gpu:4" ] || why+="the node is '$state' (sinfo), not 'idle gpu:4' after 20 s (see $LOG/slurmctld.log, slurmd.log); "
  end
fi

# The user's checkout, in the path with spaces; what they build links the
# simulation instead of libcudart and libnccl (as the doc blocks do).
tracked_files . | (cd "$ROOT" && tar -cf - -T -) | tar -xf - -C "$REPO"
chown -R "$USER_NAME" "$S/tmp" "$HOMEDIR"
# as_user CMD...: runs it as the user, in their checkout, with the
# simulation (a script: `run` starts it under timeout).
as_user() { "$S/as-user" "$@"; }
{
  echo '#!/bin/bash'
  echo "cd $(printf %q "$REPO") || exit 1"
  echo "exec runuser -u $USER_NAME -- env HOME=$(printf %q "$HOMEDIR") TMPDIR=$S/tmp SLURM_CONF=$SLURM_CONF \\"
  echo "  RUNTIME_LIBS=$S/sim/sim.o LDFLAGS=-Wl,--wrap=set_error_rank HAVE_CUPTI=0 SIM_DEVICES=4 \"\$@\""
} >"$S/as-user"
chmod 755 "$S/as-user"
sim_dir() { # a fresh folder for the simulation's shared state, the user's
  local d
  d=$(mktemp -d "$S/tmp/sim.XXXXXX") && chown "$USER_NAME" "$d" && echo "$d"
}

if begin "slurm/docs/$DOC"; then
  python3 tests/checks/doc_blocks.py --script "$DOC" Slurm "$S/tmp" >"$S/doc-blocks.sh"
  chmod a+r "$S/doc-blocks.sh"
  TIMEOUT=240 run "$S/as-user" SIM_DIR="$(sim_dir)" DOC_REPO="$REPO" bash "$S/doc-blocks.sh"
  want_status 0
  want_out "doc_blocks: every block ran"
  [ "$status" = 0 ] || why+="$(grep '^doc_blocks: ' "$f.err" | tail -n 1) "
  # The two batch jobs' outputs, in job order: one GPU per task (every rank
  # on its device 0), then every GPU for every task (rank r on device r).
  mapfile -t outs < <(cd "$REPO" && ls slurm-*.out 2>/dev/null | sort -t- -k2 -n)
  if [ ${#outs[@]} = 2 ]; then
    for i in 0 1; do
      grep -q "Results verified correctly" "$REPO/${outs[$i]}" || why+="${outs[$i]} lacks 'Results verified correctly'; "
      for r in 0 1 2 3; do
        d=$([ $i = 0 ] && echo 0 || echo $r)
        grep -qx "  Rank $r communicator initialized using device $d" "$REPO/${outs[$i]}" ||
          why+="${outs[$i]}: rank $r not on device $d; "
      done
    done
  else
    why+="${#outs[@]} batch job outputs (slurm-*.out), wanted 2; "
  fi
  end
fi

# The programs the doc blocks built (built here if their case did not run);
# a case without them says so.
[ -x "$REPO/allreduce_sm" ] && [ -x "$REPO/allgather_ce" ] ||
  "$S/as-user" make -s MPI=1 >"$LOG/user-build.log" 2>&1
built() {
  [ -x "$REPO/$1" ] && return 0
  why+="$REPO/$1 was not built (slurm/docs/$DOC builds it); "
  unbuilt=1
}
SIM_GPU=GPU-513d0000-c0de-4000-8000-00000000000 # the simulation's UUIDs, less the last digit (tests/sim/cuda.c)

for p in allreduce_sm allgather_ce; do
  if begin "slurm/srun/$p-one-gpu-per-task"; then
    built $p
    expected $p 4 --count $SMALL --mode mpi --gpus 1 >"$f.expected"
    run "$S/as-user" SIM_DIR="$(sim_dir)" srun --mpi=pmix -n 4 --gpus-per-task=1 ./$p -n $SMALL
    want_status 0; want_out_file "$f.expected"; no_violation; end
  fi
done
if begin slurm/srun/two-tasks-one-gpu-refused; then
  built allreduce_sm
  run "$S/as-user" SIM_DIR="$(sim_dir)" srun --mpi=pmix -n 2 --gres=gpu:1 ./allreduce_sm -n $SMALL
  want_status 2
  want_err " share GPUs (ranks 0 and 1 use $SIM_GPU"
  [ "$(grep -c 'share GPUs' "$f.err")" = 1 ] ||
    why+="the node's verdict was said $(grep -c 'share GPUs' "$f.err") times, not once; "
  no_out "Starting"; end
fi
if begin slurm/srun/two-tasks-one-gpu-nccl-2.30.7-shares; then
  built allreduce_sm
  expected allreduce_sm 2 --count $SMALL --mode mpi --gpus 1 --shared-sms 132 >"$f.expected"
  run "$S/as-user" SIM_DIR="$(sim_dir)" SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=1 \
    srun --mpi=pmix -n 2 --gres=gpu:1 ./allreduce_sm -n $SMALL
  want_status 0; want_out_file "$f.expected"; no_violation; end
fi
if begin slurm/srun/hang-ends-the-step-with-exit-3; then
  built allreduce_sm
  run "$S/as-user" SIM_DIR="$(sim_dir)" SIM_HANG=ncclAllReduce:2 \
    srun --mpi=pmix -n 4 --gpus-per-task=1 ./allreduce_sm -n $SMALL --timeout 3
  want_status 3
  want_err "allreduce_sm: rank 2's call has not returned after --timeout 3 s"
  want_err "allreduce_sm: rank 2: in ncclAllReduce("
  end
fi

# The suite itself from the path with spaces, as the user: a case of each
# build mode (the suite works through a link without spaces:
# tests/lib/environment.sh; it clears what as_user sets for the programs).
if begin slurm/make-test-as-a-user-in-a-path-with-spaces; then
  TIMEOUT=300 run "$S/as-user" \
    TEST_FILTER='^options/help/allreduce_sm$|^sim/sim-(pthread|mpi)/allreduce_sm-2$' make test
  want_status 0
  want_out "3 passed, 0 failed, 0 skipped"
  end
fi

echo "1..$number"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
