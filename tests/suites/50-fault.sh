# Simulated faults: failing calls, wrong results, missing GPUs, old NCCL.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: third (tests/run_tests.sh runs the lanes of a whole run at once)

# ---------------------------------------------------- simulated faults
# (Each call failing or hanging on each rank: 55-fault-matrix.sh.)
for variant in sim-pthread sim-mpi; do
  mode=${variant#sim-}
  for p in $PROGRAMS; do
    # (AllGather also in a later segment, whose expected value differs.)
    for bad in 2 0:0 3:$((SMALL - 1)) $([ $p = allgather_ce ] && echo 1:$((2 * SMALL + 5))); do
      c="fault/$mode/$p-wrong-result-rank-$bad"
      [ $mode = mpi ] && { mpi_cases "$c" || continue; }
      if begin "$c"; then
        SIM_WRONG_RESULT=$bad sim_run $variant $p 4 -n $SMALL
        want_status 1
        # The whole mismatch line, from the definition: SIM_WRONG_RESULT=R:I
        # adds 1 to element I of rank R's result (tests/sim/collectives.c).
        r=${bad%%:*} i=0
        [[ $bad == *:* ]] && i=${bad#*:}
        if [ $p = allreduce_sm ]; then # every element 0+1+2+3
          want_out "  Rank $r: 1 of $SMALL elements wrong; first at index $i: Expected 6.0, Got 7.0"
        else # element I is in segment I / count, whose value is its rank
          s=$((i / SMALL))
          want_out "  Rank $r: 1 of $((4 * SMALL)) elements wrong; first in segment $s at index $((i % SMALL)): Expected $s.0, Got $((s + 1)).0"
        fi
        want_out "Results verification failed"
        want_err "rank 0: wrong result on rank ${bad%%:*} (see stdout)"
        want_out "All resources cleaned up successfully"
        no_out "Results verified correctly"
        no_out "All NCCL communicators finalized successfully"
        no_violation
        end
      fi
    done
    # Wrong elements in two segments (rank 1's and rank 3's, written in
    # that order): the line names the first, and counts both.
    c="fault/$mode/allgather_ce-wrong-result-in-two-segments"
    if [ $p = allgather_ce ] && { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_WRONG_RESULT=2:$((3 * SMALL + 1)),$((SMALL + 7)) sim_run $variant $p 4 -n $SMALL
      want_status 1
      want_out "  Rank 2: 2 of $((4 * SMALL)) elements wrong; first in segment 1 at index 7: Expected 1.0, Got 2.0"
      want_out "Results verification failed"
      no_violation
      end
    fi
    # (Not under mpirun: the ranks' stdout goes to mpirun, which writes it
    # on and does not tell the ranks when that fails.)
    c="fault/pthread/$p-stdout-full"
    if [ $mode = pthread ] && begin "$c"; then
      need programs-sim-pthread
      SIM_DIR=$TMPDIR NTHREADS=2 run sh -c '"$0" -n '$SMALL' >/dev/full' "$B/sim-pthread/$p"
      want_status 1
      want_err "$p: writing to standard output failed: No space left on device"
      end
    fi
    c="fault/$mode/$p-no-symmetric-support"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      expected $p 3 --count $SMALL --mode $mode --gpus 8 --null-windows >"$f.expected"
      # NCCL 2.30.7 writes NULL (2.28 is unkind: tests/suites/52-unkind.sh).
      SIM_NCCL_VERSION=23007 SIM_NO_SYMMETRIC=1 sim_run $variant $p 3 -n $SMALL
      want_status 0
      want_out_file "$f.expected"
      no_violation
      end
    fi
    c="fault/$mode/$p-nccl-2.26-too-old"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_NCCL_VERSION=22605 sim_run $variant $p 2 -n $SMALL
      want_status 1
      want_err "NCCL 2.26.5 is too old for"
      no_out "Starting"
      no_violation
      end
    fi
    c="fault/pthread/$p-bad-NTHREADS-without-gpus"
    if [ $mode = pthread ] && begin "$c"; then
      need programs-sim-pthread
      SIM_DEVICES=0 NTHREADS=abc SIM_DIR=$TMPDIR run "$B/sim-pthread/$p" -n $SMALL
      want_status 2
      want_err "invalid NTHREADS='abc': use a whole number from 1 to the number of visible GPUs"
      end
    fi
    c="fault/pthread/$p-bad-NTHREADS-with-gpus"
    if [ $mode = pthread ] && begin "$c"; then
      need programs-sim-pthread
      SIM_DEVICES=4 NTHREADS=abc SIM_DIR=$TMPDIR run "$B/sim-pthread/$p" -n $SMALL
      want_status 2
      want_err "invalid NTHREADS='abc': use a whole number from 1 to 4 (the number of visible GPUs)"
      end
    fi
    c="fault/mpi/$p-one-rank-without-gpu"
    if [ $mode = mpi ] && mpi_cases "$c" && begin "$c"; then
      need programs-sim-mpi
      SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np 1 env SIM_DEVICES=0 "$B/sim-mpi/$p" -n $SMALL : -np 1 "$B/sim-mpi/$p" -n $SMALL
      want_failure
      want_err "rank 0: no usable GPU: cudaGetDeviceCount failed"
      # Rank 0 said why the job stops; the others stay quiet.
      ! grep -q "stopping: another rank" "$f.err" || why+="a rank repeated why the job stops; "
      end
    fi
    c="fault/mpi/$p-rank-1-without-gpu"
    if [ $mode = mpi ] && mpi_cases "$c" && begin "$c"; then
      need programs-sim-mpi
      SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np 1 "$B/sim-mpi/$p" -n $SMALL : -np 1 env SIM_DEVICES=0 "$B/sim-mpi/$p" -n $SMALL
      want_failure
      want_err "rank 1: no usable GPU: cudaGetDeviceCount failed"
      want_err "rank 0: stopping: another rank has no GPU of its own (see its message)"
      end
    fi
    for mix in "-n 16:-n 0:rank 1: invalid count '0'" "-n 16:-n 32:rank 1: its command line differs from rank 0's" \
      "-h:-n 16:rank 1: its command line differs from rank 0's" "-n 16:--bogus:rank 1: unknown option '--bogus'" \
      "--timeout 5:--timeout 6:rank 1: its command line differs from rank 0's" \
      "--bench -b 4K -e 4K:--bench -b 4K -e 4K --graph:rank 1: its command line differs from rank 0's"; do
      IFS=: read -r a0 a1 text <<<"$mix"
      # The instruments' options (the watchdog's, the bench's) on one program.
      [[ $a0 == --* ]] && [ $p != allreduce_sm ] && continue
      c="fault/mpi/$p-ranks-disagree-${a0// /}-vs-${a1// /}"
      if [ $mode = mpi ] && mpi_cases "$c" && begin "$c"; then
        need programs-sim-mpi
        SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np 1 "$B/sim-mpi/$p" $a0 : -np 1 "$B/sim-mpi/$p" $a1
        want_status 2
        want_err "$p: $text" # (one "rank R: ", not two)
        [[ $a0 == -h ]] || want_err "rank 0: stopping: "
        end
      fi
    done
    # The same mistake on every rank is said once, by rank 0.
    c="fault/mpi/$p-the-same-mistake-on-every-rank-said-once"
    if [ $mode = mpi ] && mpi_cases "$c" && begin "$c"; then
      need programs-sim-mpi
      SIM_DIR=$TMPDIR run "${MPIRUN[@]}" -np 3 "$B/sim-mpi/$p" -n 0
      want_status 2
      want_err "$p: rank 0: invalid count '0'"
      [ "$(grep -c "invalid count" "$f.err")" = 1 ] ||
        why+="'invalid count' was said $(grep -c "invalid count" "$f.err") times, not once; "
      end
    fi
    # One MPI process killed, or stopped, while its rank's call hangs.
    c="fault/mpi/$p-rank-1-killed"
    if [ $mode = mpi ] && mpi_cases "$c" && begin "$c"; then
      start=$(date +%s)
      mpi_signal_rank $p 1 KILL SIM_HANG=cudaMemcpy:1 -np 3 "$B/sim-mpi/$p" -n $SMALL --timeout 50
      # mpirun passes the killed process's 128 + 9 on: the time tells it
      # from the test's own time limit.
      [ "$status" != 0 ] || why+="exit status 0, wanted a failure; "
      want_err "exited on signal 9 (Killed)"
      [ $(($(date +%s) - start)) -le 15 ] || why+="took $(($(date +%s) - start)) s to end, not seconds; "
      end
    fi
    # Other cases run the same program at the same time: the signal goes
    # to this job's rank 1 only. A decoy job of the same program, started
    # once this one's processes exist (the decoy's are the newest), its
    # rank 1 hanging too, is whole afterwards. (Once, under load, a signal meant for one
    # case's rank went to another case's job, and both failed.)
    c="fault/mpi/$p-signal-spares-other-jobs"
    if [ $mode = mpi ] && [ $p = allreduce_sm ] && mpi_cases "$c" && begin "$c"; then
      mkdir -p "$TMPDIR/decoy"
      (
        for ((i = 0; i < 200; i++)); do
          pgrep -f -- "-n $SMALL --timeout 51" >/dev/null && break
          sleep 0.05
        done
        SIM_HANG=cudaMemcpy:1 SIM_DIR="$TMPDIR/decoy" exec timeout -k 5 "$TIMEOUT" "${MPIRUN[@]}" -np 2 \
          "$B/sim-mpi/$p" -n $SMALL --timeout 0 >"$f.decoy.out" 2>"$f.decoy.err"
      ) &
      decoy=$!
      # (its rank 1 slow to start: the decoy's processes exist before the
      # signal is sent)
      SIM_SLOW=ncclCommInitRank:1:2000 mpi_signal_rank $p 1 KILL SIM_HANG=cudaMemcpy:1 -np 2 \
        "$B/sim-mpi/$p" -n $SMALL --timeout 51
      want_err "exited on signal 9 (Killed)"
      alive=$(job_ranks "$decoy" $p | wc -l)
      [ $alive = 2 ] || why+="the decoy job has $alive of its 2 ranks left; "
      kill -TERM $(descendants "$decoy") 2>/dev/null
      wait "$decoy" 2>/dev/null
      end
    fi
    c="fault/mpi/$p-stopped-rank-does-not-answer"
    if [ $mode = mpi ] && mpi_cases "$c" && begin "$c"; then
      start=$(date +%s)
      mpi_signal_rank $p 2 STOP SIM_HANG=cudaMemcpy:1 -np 3 "$B/sim-mpi/$p" -n $SMALL --timeout 3
      want_status 3
      want_err "rank 1: in cudaMemcpy("
      want_err "rank 2: no answer within 3 s (its process may be"
      [ $(($(date +%s) - start)) -le 20 ] || why+="took $(($(date +%s) - start)) s to end, wanted about 3 + 3; "
      end
    fi
    c="fault/$mode/$p-misspelt-injection"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_FAIL=ncclMemAloc:1 sim_run $variant $p 2 -n $SMALL
      want_failure
      want_err "ncclsim: bad SIM_FAIL='ncclMemAloc:1'"
      end
    fi
    c="fault/$mode/$p-failures-on-two-ranks"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_FAIL=ncclMemAlloc:1,ncclMemAlloc:2 sim_run $variant $p 3 -n $SMALL
      want_failure
      [ $mode = pthread ] && want_status 1
      want_err "injected failure of ncclMemAlloc on rank"
      end
    fi
    c="fault/$mode/$p-no-gpu"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=0 sim_run $variant $p 2
      want_status 1
      want_err "no usable GPU: cudaGetDeviceCount failed: no CUDA-capable device is detected (cudaErrorNoDevice)"
      # Every process has the same problem: said once.
      [ "$(grep -c 'no usable GPU' "$f.err")" = 1 ] ||
        why+="'no usable GPU' was said $(grep -c 'no usable GPU' "$f.err") times, not once; "
      end
    fi
    c="fault/$mode/$p-more-ranks-than-gpus"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=2 sim_run $variant $p 3 -n $SMALL
      if [ $mode = pthread ]; then
        want_status 2
        want_err "NTHREADS=3 asks for more ranks than GPUs: 2 visible"
      else
        want_failure
        # The node's verdict, said once (by its first rank), not by each.
        want_err "rank 0: 3 ranks on "
        # Ranks 0 and 2 take device 0 (node-local rank mod 2 GPUs).
        want_err " share GPUs (ranks 0 and 2 use GPU-"
        [ "$(grep -c 'share GPUs' "$f.err")" = 1 ] ||
          why+="the node's verdict was said $(grep -c 'share GPUs' "$f.err") times, not once; "
      fi
      end
    fi
    c="fault/$mode/$p-count-overflows"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      sim_run $variant $p 2 -n 4611686018427387903
      want_status 2
      want_err "count 4611686018427387903 is too large for 2 ranks"
      end
    fi
  done
done
# CTAPolicy needs 2.28: 2.27 is enough for allreduce_sm but not allgather_ce.
if begin fault/pthread/allgather_ce-nccl-2.27-too-old; then
  SIM_NCCL_VERSION=22703 sim_run sim-pthread allgather_ce 2 -n $SMALL
  want_status 1
  want_err "NCCL 2.27.3 is too old for the copy-engine policy (CTAPolicy ZERO): needs NCCL >= 2.28.3"
  end
fi
if begin fault/pthread/allreduce_sm-nccl-2.27-enough; then
  SIM_NCCL_VERSION=22703 sim_run sim-pthread allreduce_sm 2 -n $SMALL
  want_status 0
  end
fi
