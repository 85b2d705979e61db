# The world at its unkindest: what real NCCL and CUDA may do, per NCCL
# version, and the programs surviving it (the simulation's side of each
# behaviour is unit/simulation-is-unkind; a copy that lands only on its own
# stream is in every output case).
# Cases: unkind/pthread/... and unkind/mpi/... (threads, MPI).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: third (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------------ window handles per version
# unkind_run VARIANT PROGRAM N "ORACLE OPTIONS" [VAR=VALUE...]: under those
# settings the program on N ranks prints what the oracle gives for those
# options, exits 0 and breaks no rule.
unkind_run() {
  local variant=$1 p=$2 n=$3 opts=$4 setting
  shift 4
  for setting in "$@"; do local -x "$setting"; done
  # shellcheck disable=SC2086 # the oracle's options are words
  expected $p $n --count $SMALL --mode ${variant#sim-} --gpus 8 $opts >"$f.expected"
  sim_run $variant $p $n -n $SMALL
  want_status 0
  want_out_file "$f.expected"
  no_violation
}
for variant in sim-pthread sim-mpi; do
  mode=${variant#sim-}
  for p in $PROGRAMS; do
    # NCCL 2.28 without symmetric support and with NCCL_LOCAL_REGISTER=0
    # returns success and writes no handle: the program's NULL stands.
    c="unkind/$mode/$p-handle-left-unwritten"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      unkind_run $variant $p 3 --null-windows SIM_NCCL_VERSION=22809 SIM_NO_SYMMETRIC=1 NCCL_LOCAL_REGISTER=0
      end
    fi
    # The same with local registration on (NCCL's default): the handle is
    # an ordinary local registration, which no program can tell from a
    # window (What ran, with CUPTI, can): the run is a plain one.
    c="unkind/$mode/$p-nccl-2.28-local-registration-for-a-window"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      unkind_run $variant $p 3 "" SIM_NCCL_VERSION=22809 SIM_NO_SYMMETRIC=1
      end
    fi
  done
done
for p in $PROGRAMS; do
  # Before 2.28.7 one rank alone on its node has no symmetric support: the
  # handle is a local registration, and the program says so.
  if begin "unkind/pthread/$p-nccl-2.28.3-one-rank-local-registration"; then
    unkind_run sim-pthread $p 1 "--local-registration 2.28.3" SIM_NCCL_VERSION=22803
    end
  fi
  if begin "unkind/pthread/$p-nccl-2.28.3-one-rank-without-local-registration"; then
    unkind_run sim-pthread $p 1 --null-windows SIM_NCCL_VERSION=22803 NCCL_LOCAL_REGISTER=0
    end
  fi
  # Before 2.28.7 only a rank alone on its node lacks symmetric support:
  # two ranks on one node get windows (the oracle's good run).
  if begin "unkind/pthread/$p-nccl-2.28.3-two-ranks-windows"; then
    unkind_run sim-pthread $p 2 "" SIM_NCCL_VERSION=22803
    end
  fi
  # The control, at the edge: from 2.28.7 one rank has a window; 2.28.6
  # is the last version that hands back a local registration.
  if begin "unkind/pthread/$p-nccl-2.28.7-one-rank-window"; then
    unkind_run sim-pthread $p 1 "" SIM_NCCL_VERSION=22807
    end
  fi
  if begin "unkind/pthread/$p-nccl-2.28.6-one-rank-local-registration"; then
    unkind_run sim-pthread $p 1 "--local-registration 2.28.6" SIM_NCCL_VERSION=22806
    end
  fi
done
