# The real programs on the GPUs of this machine, if it has any.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).

# ------------------------------------------------ the real programs on GPUs
if [ "$NGPUS" -gt 0 ]; then
  for p in $PROGRAMS; do
    for n in $(seq 1 "$NGPUS"); do
      if begin "gpu/pthread/$p-$n"; then
        expected $p $n --gpus $NGPUS --no-report >"$f.expected"
        need real-programs-pthread
        NTHREADS=$n run "$B/real-pthread/$p"
        want_status 0; want_real_output "$f.expected"; end
      fi
      mpi_cases "gpu/mpi/$p-$n" || continue
      if begin "gpu/mpi/$p-$n"; then
        expected $p $n --mode mpi --no-report >"$f.expected"
        need real-programs-mpi
        run "${MPIRUN[@]}" -np $n "$B/real-mpi/$p"
        want_status 0; want_real_output "$f.expected"; end
      fi
    done
  done
  # Several ranks on one GPU: real NCCL >= 2.30 only.
  [ -n "$LIST" ] || need unit/gpu_facts
  read -r NCCL_CODE GPU_SMS < <("$B/unit/gpu_facts" 2>/dev/null | sed 's/nccl=\([0-9]*\) sms=\([0-9]*\)/\1 \2/')
  if [ "${NCCL_CODE:-0}" -lt 23000 ]; then
    skip "shared-gpu/gpu/*" "the loaded NCCL (code ${NCCL_CODE:-unknown}) is older than 2.30, which lets ranks share a GPU (build with NCCL_HOME=<NCCL 2.30+>)"
  else
    for p in $PROGRAMS; do
      for n in $(seq $((NGPUS + 1)) $((NGPUS * 8 < 8 ? NGPUS * 8 : 8))); do
        if begin "shared-gpu/gpu/pthread/$p-$n"; then
          expected $p $n --gpus $NGPUS --shared-sms $GPU_SMS --no-report >"$f.expected"
          need real-programs-pthread
          NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$n run "$B/real-pthread/$p"
          want_status 0; want_real_output "$f.expected"; end
        fi
        mpi_cases "shared-gpu/gpu/mpi/$p-$n" || continue
        if begin "shared-gpu/gpu/mpi/$p-$n"; then
          expected $p $n --mode mpi --gpus $NGPUS --shared-sms $GPU_SMS --no-report >"$f.expected"
          need real-programs-mpi
          NCCL_MULTI_RANK_GPU_ENABLE=1 run "${MPIRUN[@]}" -np $n "$B/real-mpi/$p"
          want_status 0; want_real_output "$f.expected"; end
        fi
      done
      for n in 2 4; do
        if begin "shared-gpu/gpu/pthread/$p-bench-$n"; then
          need real-programs-pthread
          NCCL_MULTI_RANK_GPU_ENABLE=1 NTHREADS=$((n * NGPUS)) run "$B/real-pthread/$p" --bench -b 1K -e 64M -f 16 -w 2 -i 5 --overlap
          want_status 0; want_out "Benchmark results verified correctly"; no_out " none "; end
        fi
      done
    done
  fi
else
  skip "gpu/*" "no GPU visible (nvidia-smi lists none): the real programs ran only up to the GPU check"
  skip "shared-gpu/gpu/*" "no GPU visible (nvidia-smi lists none)"
fi

