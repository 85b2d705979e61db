# The simulation against what NCCL did on a GPU: tools/nccl_facts on the
# simulation (with its CUPTI), per recorded file of docs/facts (version and
# ranks), compared fact by fact (tests/oracles/facts_check.py); the known
# differences are in tests/oracles/facts_exceptions.txt, each with its reason.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

for record in "$ROOT"/docs/facts/nccl-*.tsv; do
  b=$(basename "$record" .tsv)        # nccl-2.30.7-2ranks, nccl-2.30.7-2ranks-h100
  [[ $b =~ ^nccl-([0-9]+\.[0-9]+\.[0-9]+)-([0-9]+)ranks?(-([a-z0-9]+))?$ ]] || {
    begin "facts/sim/record-$b" && { why+="$b.tsv: not named nccl-VERSION-Nrank(s)[-MACHINE].tsv; "; end; }
    continue
  }
  version=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} machine=${BASH_REMATCH[4]}
  # make test checks each version's records of 1 and 2 ranks on the main
  # machine; make test-facts (FACTS_MATRIX=full) every record, those of 4
  # ranks and of other machines too.
  [ "${FACTS_MATRIX:-}" = full ] || { [ "$n" -le 2 ] && [ -z "$machine" ]; } || continue
  code=$(echo "$version" | awk -F. '{ printf "%d%02d%02d", $1, $2, $3 }')
  c="facts/sim/record-$version-$n-rank$([ "$n" -gt 1 ] && echo s)${machine:+-$machine}"
  if [ ! -e "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
    skip "$c" "no cupti.h: the simulated probe with CUPTI is not built"; continue
  fi
  begin "$c" || continue
  need simcupti-tools/nccl_facts
  # A record of another machine checks the facts that the same version's
  # and rank count's main record lacks or records otherwise (the rest are
  # checked there, and it saves the suite's time).
  facts=$record
  base=${record%-$machine.tsv}.tsv
  if [ -n "$machine" ] && [ -e "$base" ]; then
    facts=$f.record
    awk -F'\t' 'NR == FNR { seen[$0] = 1; next } FNR == 1 || !($0 in seen)' \
      <(cut -f1,3- "$base") <(cut -f1,3- "$record") | cut -f1 >"$f.ids"
    awk -F'\t' 'NR == FNR { want[$1] = 1; next } FNR == 1 || ($1 in want)' "$f.ids" "$record" >"$facts"
  fi
  # One GPU, as on the machine that recorded them; the facts recorded.
  # The simulation never hangs in these rounds, so a fact that runs past
  # the probe's --timeout ("hung") is a slow machine, which facts_check.py
  # names: the limits leave room for a loaded one (the early reads' 400
  # AllReduces of 4 ranks take 6 s on an idle 2-core machine, and more
  # than 20 s beside the suite's other lanes), scaled further by the
  # machine's measured speed (tests/lib/speed.sh).
  TIMEOUT=$((TIMEOUT * 5)) SIM_DIR=$TMPDIR SIM_NCCL_VERSION=$code SIM_DEVICES=1 NCCL_MULTI_RANK_GPU_ENABLE=1 \
    run "$B/simcupti-tools/nccl_facts" --tsv --ranks "$n" --timeout "$(TIMEOUT=$((TIMEOUT * 5)) wall_limit 90)" \
    --only "$(tail -n +2 "$facts" | cut -f1 | paste -sd, -)"
  want_status 0
  python3 "$ROOT/tests/oracles/facts_check.py" "$facts" "$f.out" "$ROOT/tests/oracles/facts_exceptions.txt" >"$f.check" ||
    why+="$(grep -v '^#' "$f.check" | head -n 4 | tr '\n' ' ')"
  end
done

# Early reads, from NCCL's source (not yet recorded on a GPU): NCCL 2.28 to
# 2.30.4 launch symmetric kernels that may start before the kernel before
# them on the stream ends, and do not wait inside (2.30.4 src/enqueue.cc);
# 2.30.7 waits (src/device/symmetric/generate.py). So an AllReduce in
# windows after a writer that lets it start early reads the old data in
# every round on a simulated 2.30.4, and in none on 2.30.7; without windows
# (regular kernels), or with a writer that does not trigger, never. Each
# fact's 400 AllReduces take seconds of wall time, more on a loaded
# machine: the probe's --timeout is scaled (tests/lib/speed.sh).
for v in 23004 23007; do
  c="facts/sim/early-reads-$v"
  begin "$c" || continue
  need sim-tools/nccl_facts
  SIM_DIR=$TMPDIR SIM_NCCL_VERSION=$v SIM_DEVICES=1 NCCL_MULTI_RANK_GPU_ENABLE=1 \
    run "$B/sim-tools/nccl_facts" --tsv --ranks 2 --timeout "$(wall_limit 20)" \
    --only order.early-reads,order.early-reads-plain
  want_status 0
  wrong=$([ $v = 23004 ] && echo 200 || echo 0)
  grep -q "^order.early-reads	.*	writer letting the AllReduce start early: $wrong of 200 rounds wrong.*; without: 0 of 200" "$f.out" ||
    why+="order.early-reads: wanted $wrong of 200 rounds wrong, and 0 without the early start; "
  grep -q "^order.early-reads-plain	.*early: 0 of 200 rounds wrong; without: 0 of 200" "$f.out" ||
    why+="order.early-reads-plain: wanted 0 of 200 rounds wrong both ways; "
  end
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
      --tsv --ranks 2 --only register.sizes-differ --timeout "$(wall_limit 20)"
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
    SIM_DIR=$TMPDIR run env SIM_NCCL_VERSION=$version $vars "$B/sim-tools/nccl_facts" --tsv --timeout "$(wall_limit 20)"
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

# The check itself: a recorded hang, excepted because the simulation plays
# no hang there, does not "agree" with a simulated probe that ran out of
# time (a loaded machine): that is named, not taken for agreement.
if begin "facts/check/a-simulated-hang-agrees-with-nothing"; then
  printf 'id\tnccl\tranks\tcontrol\tresult\twindow\tlast\tdetail\n%s\n' \
    "order.early-reads	23007	4	hung	-	-	-	no answer within 30 s" >"$f.record"
  printf 'id\tnccl\tranks\tcontrol\tresult\twindow\tlast\tdetail\n%s\n' \
    "order.early-reads	23007	4	hung	-	-	-	no answer within 20 s" >"$f.sim"
  echo "order.early-reads 2.30.7 4 -- recorded hang; the simulation plays none" >"$f.exceptions"
  run python3 "$ROOT/tests/oracles/facts_check.py" "$f.record" "$f.sim" "$f.exceptions"
  want_status 1
  want_out "order.early-reads: the simulated probe got no answer within its limit (no answer within 20 s); the simulation never hangs here"
  end
fi
