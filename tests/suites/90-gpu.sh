# The real programs on the GPUs of this machine, if it has any.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------------ the real programs on GPUs
# stall_case NAME NRANKS STALLED MODE PROGRAM [CALL]: a real hang. A
# preloaded hook keeps rank STALLED in CALL for ever: in
# ncclCommWindowRegister (the default; tests/hooks/stall_in_register.c),
# where the others wait for it inside NCCL's, or in ncclAllReduce or
# ncclAllGather (tests/hooks/stall_in_collective.c), before the collective
# is queued, where the others, whose NCCL returned at once, wait in their
# stream synchronisation. The watchdog must end the job with exit 3 a few
# seconds after --timeout, naming the call and blaming the stalled rank.
stall_case() {
  local name=$1 n=$2 stalled=$3 mode=$4 p=$5 call=${6:-ncclCommWindowRegister} limit=8 start
  local hook=stall_in_register
  [ "$call" = ncclCommWindowRegister ] || hook=stall_in_collective limit=5
  begin "$name" || return 0
  need real-programs-$mode hooks/$hook.so
  start=$(date +%s)
  if [ $mode = mpi ]; then
    gpu_run "${MPIRUN[@]}" -np $n -x STALL_RANK=$stalled -x LD_PRELOAD=$B/hooks/$hook.so "$B/real-mpi/$p" --timeout $limit
  else
    STALL_RANK=$stalled NTHREADS=$n LD_PRELOAD=$B/hooks/$hook.so gpu_run "$B/real-pthread/$p" --timeout $limit
  fi
  want_status 3
  want_err "$hook: rank $stalled stalls in $call"
  want_err "rank $stalled: in $call("
  if [ "$call" != ncclAllReduce ] && [ "$n" -gt 1 ]; then
    # Every rank is inside the call: the registration, which all make
    # together, and the AllGather on the copy engines, which returns on no
    # rank before every rank has called it (both seen so on an H100, NCCL
    # 2.30.7). None is blamed: the watchdog says all are inside it.
    want_err "$p: all $n ranks are inside the same NCCL call, one every rank makes, after --timeout $limit s"
    ! grep -q "call has not returned after" "$f.err" || why+="a rank was blamed; "
    [ "$(grep -c "^$p: rank [0-9]*: in $call(" "$f.err")" = "$n" ] ||
      why+="not every rank shown in $call; "
  else
    want_err "$p: rank $stalled's call has not returned after --timeout $limit s: ending the job (exit 3)"
  fi
  [ $(($(date +%s) - start)) -le $((limit + 20)) ] || why+="took $(($(date +%s) - start)) s for --timeout $limit; "
  end
}

# cupti_fails_case NAME PROGRAM: --bench at 2 MPI ranks sharing the GPU with
# CUPTI failing on rank 1 (tests/hooks/cupti_enable_fails.c): the table is
# printed and verified, its engine column says n/a, and nothing hangs.
cupti_fails_case() {
  local name=$1 p=$2
  begin "$name" || return 0
  need real-programs-mpi hooks/cupti_enable_fails.so
  NCCL_MULTI_RANK_GPU_ENABLE=1 gpu_run "${MPIRUN[@]}" -np 2 -x NCCL_MULTI_RANK_GPU_ENABLE -x FAIL_RANK=1 \
    -x LD_PRELOAD=$B/hooks/cupti_enable_fails.so "$B/real-mpi/$p" --bench -b 1M -e 4M --timeout 60
  want_status 0
  want_err "cupti_enable_fails: rank 1: cuptiActivityEnable"
  want_out "Benchmark results verified correctly"
  want_out "n/a"
  end
}

if [ -z "$GPU_CASES_SKIPPED" ]; then
  [ -n "$LIST" ] || need unit/gpu_facts
  read -r NCCL_CODE GPU_SMS < <("$B/unit/gpu_facts" 2>/dev/null | sed 's/nccl=\([0-9]*\) sms=\([0-9]*\)/\1 \2/')
  NCCL_CODE=${NCCL_CODE:-0}
  nccl_name=$((NCCL_CODE / 10000)).$((NCCL_CODE % 10000 / 100)).$((NCCL_CODE % 100))
  # Before 2.28.7 one rank alone has no symmetric support: its handle is a
  # local registration (NCCL 2.28.3 src/transport.cc), and the programs
  # say so; with NCCL_LOCAL_REGISTER=0 NCCL writes no handle at all.
  one_rank=() one_rank_no_local=()
  if [ "$NCCL_CODE" -lt 22807 ]; then
    one_rank=(--local-registration "$nccl_name") one_rank_no_local=(--null-windows)
  fi
  for p in $PROGRAMS; do
    for n in $(seq 1 "$NGPUS"); do
      windows=()
      [ $n = 1 ] && windows=("${one_rank[@]}")
      if begin "gpu/pthread/$p-$n"; then
        expected $p $n --gpus $NGPUS --no-report "${windows[@]}" >"$f.expected"
        need real-programs-pthread
        NTHREADS=$n gpu_run "$B/real-pthread/$p"
        want_status 0; want_real_output "$f.expected"; end
      fi
      if [ $n = 1 ] && begin "gpu/pthread/$p-NCCL_LOCAL_REGISTER=0-1"; then
        expected $p 1 --gpus $NGPUS --no-report "${one_rank_no_local[@]}" >"$f.expected"
        need real-programs-pthread
        NCCL_LOCAL_REGISTER=0 NTHREADS=1 gpu_run "$B/real-pthread/$p"
        want_status 0; want_real_output "$f.expected"; end
      fi
      [ $n = 1 ] && stall_case "gpu/hang/pthread/$p-register-1-rank" 1 0 pthread $p
      mpi_cases "gpu/mpi/$p-$n" || continue
      [ $n = 1 ] && stall_case "gpu/hang/mpi/$p-register-1-rank" 1 0 mpi $p
      if begin "gpu/mpi/$p-$n"; then
        expected $p $n --mode mpi --no-report "${windows[@]}" >"$f.expected"
        need real-programs-mpi
        gpu_run "${MPIRUN[@]}" -np $n "$B/real-mpi/$p"
        want_status 0; want_real_output "$f.expected"; end
      fi
    done
  done
  # Several ranks on one GPU: real NCCL >= 2.30 only.

  # What the loaded NCCL does with windows (tools/nccl_facts), against what
  # docs/facts recorded for the same version: a difference fails, showing
  # both lines; a version with no record is said, not failed.
  for n in 1 2 4; do
    c="gpu/facts/$n-rank"
    [ $n -gt 1 ] && [ "$NCCL_CODE" -lt 23000 ] && { skip "$c" "NCCL $nccl_name cannot share a GPU (2.30 can)"; continue; }
    begin "$c" || continue
    record=$ROOT/docs/facts/nccl-$nccl_name-${n}rank$([ $n -gt 1 ] && echo s).tsv
    run make --no-print-directory -s -C "$ROOT/tools" facts FACTS_BIN="$B/tools/nccl_facts"
    want_status 0
    # (the whole probe took 67 s at 2 ranks on an H100, NCCL 2.30.7)
    TIMEOUT=180 gpu_run "$B/tools/nccl_facts" --ranks $n --tsv --timeout 30
    want_status 0
    if [ -e "$record" ]; then
      # A field recorded as "unknown" (with the reason in its detail) was
      # not measured: it matches anything, and the case says so.
      # The detail of such a row says why; it is not compared either.
      # A fact the record does not have yet is said, not compared.
      awk -F'\t' -v newer="$f.newer" 'BEGIN { OFS = "\t" }
        NR == FNR { for (i = 1; i <= NF; i++) if ($i == "unknown") { mask[$1, i] = 1; mask[$1, 8] = 1 }
                    for (i = 1; i <= NF; i++) rec[$1, i] = $i; known[$1] = 1; print; next }
        !($1 in known) { print $1 > newer; next }
        { for (i = 1; i <= NF; i++) if (mask[$1, i]) $i = rec[$1, i]; print > "/dev/stderr" }' \
        "$record" "$f.out" >"$f.record" 2>"$f.measured"
      diff "$f.record" "$f.measured" >"$f.diff" ||
        why+="NCCL $nccl_name no longer does what $record recorded: $(grep '^[<>]' "$f.diff" | head -n 4 | tr '\t\n' '  '); "
      [ -s "$f.newer" ] && echo "# $c: not in $record yet (add them from $f.out): $(tr '\n' ' ' <"$f.newer")"
      grep -q unknown "$record" && echo "# $c: $record has fields not measured (unknown); re-record them from $f.out"
    else
      echo "# $c: no record for NCCL $nccl_name in docs/facts (add $f.out there to keep it)"
    fi
    end
  done
  if [ "$NCCL_CODE" -ge 23000 ] && begin gpu/what-ran/allgather_ce-NCCL_CTA_POLICY=0-2-ranks; then
    need real-programs-pthread
    NCCL_CTA_POLICY=0 NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=2 gpu_run "$B/real-pthread/allgather_ce"
    want_status 0
    want_out "What ran: AllGather ran NCCL's symmetric kernel"
    want_out "NCCL_CTA_POLICY=0 replaces config.CTAPolicy: the loaded NCCL reads it as 0, without ZERO (2)"
    end
  fi
  if [ "$NCCL_CODE" -lt 23000 ]; then
    skip "gpu/shared-gpu/*" "the loaded NCCL (code ${NCCL_CODE:-unknown}) is older than 2.30, which lets ranks share a GPU (build with NCCL_HOME=<NCCL 2.30+>)"
  else
    for p in $PROGRAMS; do
      for n in $(seq $((NGPUS + 1)) $((NGPUS * 8 < 8 ? NGPUS * 8 : 8))); do
        if begin "gpu/shared-gpu/pthread/$p-$n"; then
          expected $p $n --gpus $NGPUS --shared-sms $GPU_SMS --no-report >"$f.expected"
          need real-programs-pthread
          NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$n gpu_run "$B/real-pthread/$p"
          want_status 0; want_real_output "$f.expected"; end
        fi
        mpi_cases "gpu/shared-gpu/mpi/$p-$n" || continue
        if begin "gpu/shared-gpu/mpi/$p-$n"; then
          expected $p $n --mode mpi --gpus $NGPUS --shared-sms $GPU_SMS --no-report >"$f.expected"
          need real-programs-mpi
          NCCL_MULTI_RANK_GPU_ENABLE=1 gpu_run "${MPIRUN[@]}" -np $n "$B/real-mpi/$p"
          want_status 0; want_real_output "$f.expected"; end
        fi
      done
      NCCL_MULTI_RANK_GPU_ENABLE=1 stall_case "gpu/hang/pthread/$p-register-rank-1-of-2-sharing" 2 1 pthread $p
      mpi_cases "gpu/hang/mpi/$p-register-rank-1-of-2-sharing" &&
        NCCL_MULTI_RANK_GPU_ENABLE=1 stall_case "gpu/hang/mpi/$p-register-rank-1-of-2-sharing" 2 1 mpi $p
      # One rank held back before its collective. AllReduce: the others'
      # collectives return at once and they wait in cudaStreamSynchronize;
      # the watchdog must blame the held rank. AllGather on the copy
      # engines: the others wait inside ncclAllGather (see stall_case).
      coll=$([ $p = allreduce_sm ] && echo ncclAllReduce || echo ncclAllGather)
      for n in 2 4; do
        for held in $([ $n = 4 ] && echo 0) $((n - 1)); do
          NCCL_MULTI_RANK_GPU_ENABLE=1 stall_case "gpu/hang/pthread/$p-$coll-rank-$held-of-$n-sharing" $n $held pthread $p $coll
          mpi_cases "gpu/hang/mpi/$p-$coll-rank-$held-of-$n-sharing" &&
            NCCL_MULTI_RANK_GPU_ENABLE=1 stall_case "gpu/hang/mpi/$p-$coll-rank-$held-of-$n-sharing" $n $held mpi $p $coll
        done
      done
      if [ -e "$B/hooks/cupti_enable_fails.so" ]; then
        mpi_cases "gpu/cupti/mpi/$p-bench-cuptiActivityEnable-fails-on-rank-1" &&
          cupti_fails_case "gpu/cupti/mpi/$p-bench-cuptiActivityEnable-fails-on-rank-1" $p
      fi
      # Emulated nodes: each MPI rank gets NCCL_HOSTID=node<rank / per
      # node>, so NCCL takes ranks of different ids for different hosts
      # (NCCL 2.30.7, src/misc/utils.cc getHostHash) and connects them over
      # its socket transport on this one machine: no real network, no NVLink
      # domain between the nodes.
      for n in 2 4; do
        for per in 1 2; do
          c="gpu/emulated-nodes/mpi/$p-$n-ranks-$per-per-node"
          mpi_cases "$c" || continue
          begin "$c" || continue
          nodes=$((n / per))
          windows=$([ $nodes -gt 1 ] && echo --null-windows)
          expected $p $n --mode mpi --gpus $NGPUS --shared-sms $GPU_SMS --no-report $windows >"$f.expected"
          need real-programs-mpi
          NCCL_MULTI_RANK_GPU_ENABLE=1 gpu_run "${MPIRUN[@]}" -np $n -x NCCL_MULTI_RANK_GPU_ENABLE -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 \
            bash -c 'NCCL_HOSTID=node$((OMPI_COMM_WORLD_RANK / '$per')) exec "$0" "$@"' "$B/real-mpi/$p"
          want_status 0; want_real_output "$f.expected"
          if [ $nodes -gt 1 ]; then
            want_out "the ranks are on $nodes hosts (by NCCL_HOSTID)"
            no_out "What ran: $( [ $p = allgather_ce ] && echo AllGather || echo AllReduce) ran NCCL's symmetric"
          else # one emulated node: the control, as without NCCL_HOSTID
            no_out "hosts"
          fi
          end
        done
      done
      for n in 2 4; do
        if begin "gpu/shared-gpu/pthread/$p-bench-$n"; then
          need real-programs-pthread
          NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$((n * NGPUS)) gpu_run "$B/real-pthread/$p" --bench -b 1K -e 64M -f 16 -w 2 -i 5 --overlap
          want_status 0; want_out "Benchmark results verified correctly"; no_out " none "; end
        fi
      done
    done
  fi
else
  skip "gpu/*" "$GPU_CASES_SKIPPED"
  skip "gpu/shared-gpu/*" "$GPU_CASES_SKIPPED"
fi

# Its rule for runs of ranks sharing a GPU (can_share), alone: NCCL 2.30.0
# is the first with NCCL_MULTI_RANK_GPU_ENABLE (its release notes; the
# H200 and H100 runs of docs/shared-gpu.md), 2.29.7 and 2.28.9 have none.
if begin gpu/check-gpu-machine-shares-from-2.30.0; then
  rule=$(grep -m 1 '^can_share()' tools/check_gpu_machine.sh)
  [ -n "$rule" ] || why+="no can_share() in tools/check_gpu_machine.sh; "
  for c in 23000:yes 23007:yes 23206:yes 22907:no 22809:no 22703:no; do
    got=$(bash -c "$rule; can_share ${c%%:*} && echo yes || echo no")
    [ "$got" = "${c##*:}" ] || why+="code ${c%%:*}: $got, wanted ${c##*:}; "
  done
  end
fi
# tools/check_gpu_machine.sh refuses where there is no GPU, before its
# `make clean` (which would take the user's builds).
if [ "$NGPUS" = 0 ] && begin gpu/check-gpu-machine-refuses-without-a-gpu; then
  run bash tools/check_gpu_machine.sh "$TMPDIR/gpu-logs"
  want_status 2
  want_err "check_gpu_machine.sh: no GPU here (nvidia-smi -L lists none)"
  [ ! -e "$TMPDIR/gpu-logs" ] || why+="it made its log folder; "
  end
fi
# Its PyTorch step (tests/whatran/torch_check.sh), without a GPU: where no
# python imports torch it skips, saying so, and runs nothing; with a
# stand-in for PyTorch's python (below) that prints what
# torch_collectives.py prints, and under the preload What ran's line, every
# step passes, 2 processes sharing a GPU from NCCL 2.30; a stand-in whose
# output, status or What ran the preload changes fails the step, naming it.
torch_standin() { # FILE: the stand-in; STANDIN_NCCL its NCCL's code, STANDIN_BREAK what the preload breaks
  cat >"$1" <<'STANDIN'
#!/usr/bin/env bash
case "$*" in
  "-c import torch") exit 0 ;;
  *nccl.version*) echo "$STANDIN_NCCL"; exit 0 ;;
  "-m torch.distributed.run --standalone --nproc_per_node "*" tests/whatran/torch_collectives.py") n=$5 ;;
  *) echo "stand-in: unexpected arguments: $*" >&2; exit 9 ;;
esac
for r in $(seq 0 $((n - 1))); do
  if [ -n "${LD_PRELOAD:-}" ] && [ "$STANDIN_BREAK" = output ]; then echo "rank $r of $n: all_reduce element 0 is 0.0, wanted 1.0, all_gather ok"
  else echo "rank $r of $n: all_reduce ok, all_gather ok"; fi
  [ -n "${LD_PRELOAD:-}" ] && [ "$STANDIN_BREAK" != silent ] &&
    echo "What ran (libwhatran): communicator 1, $n rank$([ $n = 1 ] || echo s), rank $r: AllReduce of 1 MiB (1 call): NCCL's symmetric kernel" >&2
done
echo "NCCL 2.30.7"
[ -n "${LD_PRELOAD:-}" ] && [ "$STANDIN_BREAK" = status ] && exit 1
exit 0
STANDIN
  chmod +x "$1"
}
if begin gpu/check-gpu-machine-torch-skips-without-pytorch; then
  printf '#!/bin/sh\necho "$@" >>"%s"\nexit 1\n' "$TMPDIR/no-torch.calls" >"$TMPDIR/no-torch-python"
  chmod +x "$TMPDIR/no-torch-python" && rm -f "$TMPDIR/no-torch.calls"
  TORCH_PYTHON=$TMPDIR/no-torch-python run bash tests/whatran/torch_check.sh "$TMPDIR" "$TMPDIR/no-such-lib.so"
  want_status 0
  want_out "skip PyTorch under the preload: no PyTorch here ($TMPDIR/no-torch-python: none imports torch"
  [ "$(cat "$TMPDIR/no-torch.calls")" = "-c import torch" ] || why+="it ran more than the import: $(tr '\n' ';' <"$TMPDIR/no-torch.calls"); "
  end
fi
if begin gpu/check-gpu-machine-torch-steps-on-a-stand-in; then
  torch_standin "$TMPDIR/torch-standin"
  for nccl in 23007 22703; do
    STANDIN_NCCL=$nccl STANDIN_BREAK="" TORCH_PYTHON=$TMPDIR/torch-standin run bash tests/whatran/torch_check.sh "$TMPDIR" /dev/null
    want_status 0
    want_out "ok   PyTorch, 1 process, under the preload: the same output and exit status"
    want_out "ok   PyTorch, 1 process: What ran names its communicator: What ran (libwhatran): communicator 1, 1 rank, rank 0: AllReduce of 1 MiB"
    if [ $nccl = 23007 ]; then
      want_out "ok   PyTorch, 2 processes sharing a GPU: What ran names its communicator"
    else
      want_out "skip PyTorch, 2 processes sharing a GPU: PyTorch's NCCL is 22703 (NCCL_VERSION_CODE), and sharing needs 2.30"
    fi
    no_out "FAIL"
  done
  end
fi
if begin gpu/check-gpu-machine-torch-fails-what-the-preload-changes; then
  torch_standin "$TMPDIR/torch-standin"
  for broken in output:"PyTorch, 1 process, under the preload: its output differs" \
    status:"PyTorch, 1 process, under the preload: exit 1, without it 0" \
    silent:"PyTorch, 1 process: What ran names its communicator: no line 'What ran (libwhatran): communicator K, 1 rank(s), rank R: AllReduce of 1 MiB' for rank 0"; do
    STANDIN_NCCL=22703 STANDIN_BREAK=${broken%%:*} TORCH_PYTHON=$TMPDIR/torch-standin run bash tests/whatran/torch_check.sh "$TMPDIR" /dev/null
    want_status 1
    want_out "FAIL ${broken#*:}"
  done
  end
fi
# Its copy of the tree for the docs' blocks, in a tree that is no git
# checkout (an exported tree, a release tarball: here the files git
# exports, in a folder of the suite's build, which git ignores): the line
# of the script itself, run there. The copy holds every file of the tree
# and none of its build outputs or logs.
if begin gpu/check-gpu-machine-copies-a-tree-without-git; then
  tree=$TMPDIR/exported-tree
  rm -rf "$tree" && mkdir -p "$tree"
  tracked_files . | sort >"$f.expected"
  (cd "$ROOT" && tar -cf - -T "$f.expected") | tar -xf - -C "$tree"
  mkdir -p "$tree/tests/build/sim-pthread" "$tree/01_allreduce/c/build" "$tree/gpu-logs/docs-tree"
  touch "$tree/tests/build/sim-pthread/sim.o" "$tree/01_allreduce/c/build/main.o" "$tree/allreduce_sm" \
    "$tree/gpu-logs/machine.txt"
  step=$(grep -m 1 '^ *rm -rf "$copy" && ' tools/check_gpu_machine.sh)
  [ -n "$step" ] || why+="no line that makes the copy in tools/check_gpu_machine.sh; "
  copy=$tree/gpu-logs/docs-tree/page out=$tree/gpu-logs run bash -c 'cd "$1" && . tests/lib/tree_files.sh && eval "$2"' - "$tree" "$step"
  want_status 0
  no_err "not a git repository"
  (cd "$tree/gpu-logs/docs-tree/page" 2>/dev/null && find . -type f | sed 's|^\./||' | sort) >"$f.copied"
  [ "$(wc -l <"$f.expected")" -gt 100 ] || why+="only $(wc -l <"$f.expected") files in the exported tree; "
  diff "$f.expected" "$f.copied" >"$f.diff" || why+="the copy is not the tree's files: $(head -n 3 "$f.diff" | tr '\n' ' ')(see $f.diff); "
  end
fi
