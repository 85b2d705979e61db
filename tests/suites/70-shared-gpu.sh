# Several ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL >= 2.30).
# Cases: shared-gpu/pthread/... and shared-gpu/mpi/... (threads, MPI),
# shared-gpu/asan-pthread/..., shared-gpu/tsan-pthread/..., shared-gpu/unit/....
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: fourth (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------- several ranks on one GPU
# NCCL >= 2.30 lets ranks share a GPU when NCCL_MULTI_RANK_GPU_ENABLE=1;
# the simulated GPUs have 132 SMs, like an H200.
for variant in sim-pthread sim-mpi; do
  mode=${variant#sim-}
  for p in $PROGRAMS; do
    # 2 (NCCL's documented limit), 3 (odd, the first above it), 4, and 8
    # (NCCL_MAX_CTAS 16, the most a case here shares); 6 is below, on 4 SMs.
    for n in 2 3 4 8; do
      c="shared-gpu/$mode/$p-$n-ranks-1-gpu"
      [ $mode = mpi ] && { mpi_cases "$c" || continue; }
      begin "$c" || continue
      expected $p $n --count $SMALL --mode $mode --gpus 1 --shared-sms 132 >"$f.expected"
      shared_run $variant $p $n 1 23007 -n $SMALL
      want_status 0; want_out_file "$f.expected"; no_violation
      # More than the 2 ranks per GPU NCCL 2.30 documents: said once.
      warned=$(grep -c "NCCL_MULTI_RANK_GPU_ENABLE is experimental, and NCCL 2.30 documents up to 2 ranks per GPU with its default settings; $n share one here" "$f.err")
      [ "$warned" = $([ $n -gt 2 ] && echo 1 || echo 0) ] || why+="the experimental warning said $warned times with $n ranks per GPU; "
      end
    done
    # More ranks than the GPU has SMs: NCCL_MAX_CTAS stays 1, and no
    # claim that the kernels fit.
    c="shared-gpu/$mode/$p-6-ranks-on-4-sms"
    if [ $p = allreduce_sm ] && { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      expected $p 6 --count $SMALL --mode $mode --gpus 1 --shared-sms 4 >"$f.expected"
      SIM_SMS=4 shared_run $variant $p 6 1 23007 -n $SMALL
      want_status 0; want_out_file "$f.expected"; no_violation; end
    fi
    # As many ranks as SMs: one SM each, and all of them fit (not "more
    # ranks than SMs").
    c="shared-gpu/$mode/$p-4-ranks-on-4-sms"
    if [ $p = allreduce_sm ] && [ $mode = pthread ] && begin "$c"; then
      expected $p 4 --count $SMALL --mode $mode --gpus 1 --shared-sms 4 >"$f.expected"
      SIM_SMS=4 shared_run $variant $p 4 1 23007 -n $SMALL
      want_status 0; want_out_file "$f.expected"
      want_out "NCCL_MAX_CTAS=1: each rank's NCCL kernels use at most 1 of the GPU's 4 SMs, so that all 4 ranks' kernels fit at once"
      no_violation; end
    fi
    c="shared-gpu/$mode/$p-3-ranks-2-gpus"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      expected $p 3 --count $SMALL --mode $mode --gpus 2 --shared-sms 132 >"$f.expected"
      shared_run $variant $p 3 2 23007 -n $SMALL
      want_status 0; want_out_file "$f.expected"; no_violation; end
    fi
    c="shared-gpu/$mode/$p-nccl-2.29-refuses"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      shared_run $variant $p 2 1 22907 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 2
      want_err "NCCL_MULTI_RANK_GPU_ENABLE=1: ranks may share a GPU only with NCCL >= 2.30, and the loaded NCCL is 2.29.7"
      no_out "Starting"; end
    fi
    c="shared-gpu/$mode/$p-without-the-switch"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=0 sim_run $variant $p 2 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 2
      want_err "with NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 lets ranks share a GPU"
      no_out "Starting"; end
    fi
    # NCCL reads its integer variables with strtoll(text, NULL, 0)
    # (src/misc/param.cc): 010 is octal 8, on; 0b1 is 0 before glibc 2.38
    # and binary 1 from 2.38 (C23; NCCL 2.30.7 built on Ubuntu 24.04
    # imports __isoc23_strtoll), so it is refused as ambiguous.
    c="shared-gpu/$mode/$p-switch-in-octal"
    if [ $p = allreduce_sm ] && { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      expected $p 2 --count $SMALL --mode $mode --gpus 1 --shared-sms 132 >"$f.expected"
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=010 sim_run $variant $p 2 -n $SMALL
      want_status 0; want_out_file "$f.expected"; no_violation; end
    fi
    c="shared-gpu/$mode/$p-switch-0b1"
    if [ $p = allreduce_sm ] && [ $mode = pthread ] && begin "$c"; then
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=0b1 sim_run $variant $p 2 -n $SMALL
      want_status 2
      want_err "invalid NCCL_MULTI_RANK_GPU_ENABLE='0b1': NCCL reads it with strtoll, which makes it 0 (off) with a C library before glibc 2.38 and a binary 1 (on) where NCCL was built against glibc 2.38 or later"
      no_out "Starting"; end
    fi
    # A sign before the prefix: strtoll takes "+0b1" as it takes "0b1".
    c="shared-gpu/$mode/$p-switch-plus-0b1"
    if [ $p = allreduce_sm ] && [ $mode = pthread ] && begin "$c"; then
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=+0b1 sim_run $variant $p 2 -n $SMALL
      want_status 2
      want_err "invalid NCCL_MULTI_RANK_GPU_ENABLE='+0b1': NCCL reads it with strtoll, which makes it 0 (off) with a C library before glibc 2.38 and a binary 1 (on) where NCCL was built against glibc 2.38 or later"
      no_out "Starting"; end
    fi
    c="shared-gpu/$mode/$p-switch-not-a-number"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=yes sim_run $variant $p 2 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 2
      want_err "invalid NCCL_MULTI_RANK_GPU_ENABLE='yes': NCCL reads it as a number (strtoll), so this is 0, off"
      end
    fi
    # NCCL reads "1x" as 1 (strtoll): the programs too.
    c="shared-gpu/$mode/$p-switch-1x-is-on-as-for-nccl"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_DEVICES=1 SIM_NCCL_VERSION=23007 NCCL_MULTI_RANK_GPU_ENABLE=1x sim_run $variant $p 2 -n $SMALL
      want_status 0; want_out "Results verified correctly"; no_violation
      end
    fi
    c="shared-gpu/$mode/$p-own-NCCL_MAX_CTAS"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      NCCL_MAX_CTAS=8 shared_run $variant $p 4 1 23007 -n $SMALL
      want_status 0
      want_out "NCCL_MAX_CTAS=8 (yours): with 4 ranks per GPU it must leave every rank's kernels room"
      want_out "Results verified correctly"; end
    fi
    # NCCL reads "abc" as 0 and ignores it (NCCL 2.30.7 src/misc/param.cc,
    # src/init.cc): the program sets its own limit, 132 SMs / 4 ranks.
    c="shared-gpu/$mode/$p-NCCL_MAX_CTAS-not-a-number"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      NCCL_MAX_CTAS=abc shared_run $variant $p 4 1 23007 -n $SMALL
      want_status 0
      want_err "NCCL_MAX_CTAS=abc is no limit to NCCL, which reads it as a number (strtoll) and ignores one below 1: this program sets its own limit instead"
      want_out "NCCL_MAX_CTAS=$((132 / 4)): each rank's NCCL kernels use at most $((132 / 4)) of the GPU's 132 SMs"
      want_out "Results verified correctly"; end
    fi
    c="shared-gpu/$mode/$p-ncclCommWindowRegister-fails-on-rank-1"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_FAIL=ncclCommWindowRegister:1 shared_run $variant $p 4 1 23007 -n $SMALL
      want_failure; [ $mode = pthread ] && want_status 1
      want_err "$p: rank 1: main.c:"; want_err "injected failure of ncclCommWindowRegister on rank 1"; end
    fi
    c="shared-gpu/$mode/$p-wrong-result-rank-3"
    if { [ $mode = pthread ] || mpi_cases "$c"; } && begin "$c"; then
      SIM_WRONG_RESULT=3 shared_run $variant $p 4 1 23007 -n $SMALL
      want_status 1; want_out "  Rank 3: 1 of"; want_out "Results verification failed"; no_violation; end
    fi
    for n in 2 4; do
      c="shared-gpu/$mode/$p-bench-$n-ranks"
      [ $mode = mpi ] && { mpi_cases "$c" || continue; }
      begin "$c" || continue
      shared_run $variant $p $n 1 23007 --bench -b 1K -e 64K -w 1 -i 2 --overlap
      want_status 0
      want_out "roof: copy of that size within GPU 0, which the ranks share"
      want_out "# NCCL 2.30.7 loaded (built against nccl.h "
      if [ $mode = mpi ]; then
        want_out "# WARNING: $n processes share 1 GPU(s): without MPS the GPU time-slices between processes"
      else
        want_out "# $n ranks share 1 GPU(s): times are one GPU doing every rank's part"
      fi
      want_out "Benchmark results verified correctly"; no_violation; end
    done
  done
done
for n in 2 8; do
  if begin "shared-gpu/asan-pthread/allgather_ce-$n"; then
    shared_run asan-pthread allgather_ce $n 1 23007 -n $SMALL
    want_status 0; want_out "Results verified correctly"; no_violation
    ! grep -q "Sanitizer\|runtime error:" "$f.err" || why+="a sanitizer reported; "
    end
  fi
  if begin "shared-gpu/tsan-pthread/allreduce_sm-$n"; then
    shared_run tsan-pthread allreduce_sm $n 1 23007 -n $SMALL
    want_status 0; want_out "Results verified correctly"
    ! grep -q "ThreadSanitizer" "$f.err" || why+="ThreadSanitizer reported; "
    end
  fi
done
for n in 1 3 8; do
  if begin "shared-gpu/unit/bootstrap-$n-ranks-on-2-gpus"; then
    need unit/test_bootstrap
    run "$B/unit/test_bootstrap" $n 2; want_status 0; end
  fi
done

# L2 marking with ranks sharing a GPU: 4 AllGather ranks on one GPU whose
# L2 (1.5 MiB) would hold one rank's 1 MiB result and 256 KiB send buffer,
# but not four ranks' nor the roof's copy: 1 MiB is not L2, 512 KiB is
# (the roof's copy fits).
if begin shared-gpu/bench-l2-marking; then
  SIM_L2_BYTES=1572864 shared_run sim-pthread allgather_ce 4 1 23007 --bench -b 256K -e 1M -f 2 -w 1 -i 2 --csv "$f.csv"
  want_status 0
  python3 tests/oracles/bench_oracle.py "$f.csv" --gpus 1 --l2 1572864 >"$f.oracle" 2>&1 ||
    why+="$(grep -v '^bench_oracle:' "$f.oracle" | head -n 2 | tr '\n' ' '); "
  marked() { awk -F, -v size="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["size_bytes"] == size && $c["in_l2"] == "L2"' "$f.csv" | wc -l; }
  [ "$(marked 1048576)" = 0 ] || why+="1 MiB marked L2; "
  [ "$(marked 524288)" -gt 0 ] || why+="512 KiB not marked L2; "
  no_violation
  end
fi
