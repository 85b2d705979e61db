# The world at its unkindest: what real NCCL and CUDA may do, per NCCL
# version, and the programs surviving it (the simulation's side of each
# behaviour is unit/simulation-is-unkind; a copy that lands only on its own
# stream is in every output case).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).

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

# --------------------------------------------------- the probe's sentinel
# tools/nccl_facts against the simulation: a handle NCCL never wrote reads
# "not written", one it set to NULL "NULL". The rows wanted come from what
# each simulated version does (tests/sim/windows.c, with its sources).
# facts_row FILE ID: the fields of fact ID, tab-separated, from field 4 on.
facts_row() { awk -F'\t' -v id="$2" '$1 == id { print $4 "\t" $5 "\t" $6 "\t" $8 }' "$1"; }
want_fact() { # ID CONTROL RESULT WINDOW DETAIL-PREFIX
  local row
  row=$(facts_row "$f.out" "$1")
  [[ $row == "$2	$3	$4	$5"* ]] || why+="$1 reads '$row', wanted '$2	$3	$4	$5...'; "
}
# Sizes that differ between ranks: refused before 2.30.7, windows from it,
# with the row recorded on the H200 (docs/facts/nccl-2.30.7-2ranks.tsv);
# every rank's AllReduce is checked, and a wrong one on rank 1 is reported.
sizes_row="rank 0 registered 1 MiB; AllReduce in them: no error, cudaSuccess, 0 of 1024 wrong"
for setting in "23007" "23007 SIM_WRONG_RESULT=1"; do
  read -r version vars <<<"$setting"
  if begin "facts/sim/nccl-$version-2ranks-sizes-differ${vars:+-${vars// /-}}"; then
    need sim-tools/nccl_facts
    # shellcheck disable=SC2086 # the variables are words
    SIM_DIR=$TMPDIR run env SIM_NCCL_VERSION=$version SIM_DEVICES=2 $vars "$B/sim-tools/nccl_facts" \
      --tsv --ranks 2 --only register.sizes-differ --timeout 20
    want_status 0
    if [ -z "$vars" ]; then
      row=$(facts_row "$f.out" register.sizes-differ)
      [ "$row" = "ok	no error	non-NULL	$sizes_row" ] || why+="register.sizes-differ reads '$row'; "
    else
      want_fact register.sizes-differ ok "no error" non-NULL "$sizes_row; rank 1: 1 wrong"
    fi
    end
  fi
done

for setting in "22803" "22809 SIM_NO_SYMMETRIC=1 NCCL_LOCAL_REGISTER=0" "22902 SIM_NO_SYMMETRIC=1" "23007" "23007 SIM_NO_SYMMETRIC=1"; do
  read -r version vars <<<"$setting"
  c="facts/sim/nccl-$version${vars:+-${vars// /-}}"
  if begin "$c"; then
    need sim-tools/nccl_facts
    # shellcheck disable=SC2086 # the variables are words
    SIM_DIR=$TMPDIR run env SIM_NCCL_VERSION=$version $vars "$B/sim-tools/nccl_facts" --tsv --timeout 20
    want_status 0
    case $setting in
      22803)
        want_fact register.memalloc ok "no error" non-NULL ""
        want_fact env.local-register-0 ok "no error" "not written" ""
        want_fact register.local-handle ok "no error" non-NULL "ncclCommRegister of the same buffer: no error; its handle is the window"
        want_fact register.grouped ok "no error" non-NULL "before ncclGroupEnd the handle was not written"
        ;;
      22809*)
        want_fact register.grouped "control failed" "no error" "not written" "no error, window not written"
        ;;
      23007)
        want_fact env.local-register-0 ok "no error" non-NULL ""
        want_fact register.local-handle ok "no error" non-NULL "ncclCommRegister of the same buffer: no error; its handle is not the window"
        want_fact register.grouped ok "no error" non-NULL "before ncclGroupEnd the handle was NULL"
        want_fact destroy.registered ok "no error" non-NULL "ncclCommFinalize: no error; ncclMemFree after: no error"
        ;;
      # From 2.29.2 NULL is written first, and no local registration is
      # handed back (NCCL's src/dev_runtime.cc at v2.29.2-1).
      "22902 SIM_NO_SYMMETRIC=1" | "23007 SIM_NO_SYMMETRIC=1")
        want_fact register.memalloc ok "no error" NULL ""
        ;;
    esac
    end
  fi
done
