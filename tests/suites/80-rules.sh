# The lifecycle rules the simulation enforces, each with a wrong program.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------ lifecycle rules are enforced
# Every rule the simulation enforces has a deliberately wrong program.
SIM_RULES=$(python3 - tests/sim/*.c <<'PY'
import re, sys
text = "".join(open(path).read() for path in sys.argv[1:])
rules = set(re.findall(r'violation\(\s*[^,()]+,\s*"([a-z][a-zA-Z-]*)"', text))
rules |= set(re.findall(r'"ncclsim: RULE VIOLATION \[([a-z][a-zA-Z-]*)\]', text))
print(" ".join(sorted(rules)))
PY
)
if begin rules/every-rule-has-a-wrong-program; then
  need sim-pthread/rules
  run "$B/sim-pthread/rules"
  RULE_PROGRAMS=$(sed -n 's/^usage: rules CASE, one of: //p' "$f.err" | tr ' ' '\n' | sort | paste -sd' ')
  [ -n "$SIM_RULES" ] || why+="no rule found in tests/sim/*.c; "
  [ "$SIM_RULES" = "$RULE_PROGRAMS" ] ||
    why+="rules in tests/sim: '$SIM_RULES'; rule programs: '$RULE_PROGRAMS'; "
  end
fi
# Two rules hold only for older NCCL: windows left registered at
# ncclCommDestroy (freed by NCCL from 2.29.7) and sizes that differ per
# rank (allowed from 2.30.7): their programs run as 2.28.9, whatever
# nccl.h the simulation was built with (NCCL_HOME's 2.30.7 on a GPU
# machine, say).
rule_version() {
  case $1 in deregister-before-destroy | symmetric-registration) echo 22809 ;; *) echo "" ;; esac
}
# A CTA barrier left by a thread that ended (thread 0 of rank 0's CTA),
# both ways round (the schedule fixed by SIM_SEED): thread 0 ends first,
# and the first thread to reach the barrier (thread 3) is named (seed 4);
# three threads wait, then thread 0 ends, and is named (seed 1).
for way in "4 3 1" "1 0 3"; do
  read -r seed thread waiting <<<"$way"
  if begin "rules/cta-barrier/seed-$seed-thread-$thread-named"; then
    need sim-pthread/rules
    SIM_SEED=$seed SIM_DIR=$TMPDIR run "$B/sim-pthread/rules" cta-barrier
    want_status 70
    want_err "RULE VIOLATION [cta-barrier] rank 0 in kernel wrong_kernel (CTA 0, thread $thread; schedule seed $seed"
    want_err "$waiting thread(s) of the CTA wait at a CTA barrier that 1 other(s) left by ending"
    end
  fi
done
# Ranks sharing a GPU are NCCL's from 2.30 on, with
# NCCL_MULTI_RANK_GPU_ENABLE=1: before 2.30 the variable changes nothing
# (the violation stands); from 2.30.0 it lifts it (the control).
for version in 22809 23000; do
  if begin "rules/multi-rank-gpu-enable/one-rank-per-device-nccl-$version"; then
    need sim-pthread/rules
    NCCL_MULTI_RANK_GPU_ENABLE=1 SIM_NCCL_VERSION=$version SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 \
      run "$B/sim-pthread/rules" one-rank-per-device
    if [ $version = 22809 ]; then
      want_status 70
      want_err "RULE VIOLATION [one-rank-per-device]"
    else
      want_status 0
      no_violation
    fi
    end
  fi
done
# A window from an offset into its allocation (NCCL_WIN_REQUIRED_ALIGNMENT,
# 4096 bytes into 8192), no larger than the allocation, runs past its end.
if begin rules/window-inside-allocation/from-an-offset-named; then
  need sim-pthread/rules
  SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" window-inside-allocation
  want_status 70
  want_err "RULE VIOLATION [window-inside-allocation]"
  want_err "8192 bytes at 0x"
  want_err ", 4096 bytes into its allocation, run past the end of that 8192-byte allocation"
  end
fi
# Ranks passing different counts to one AllReduce (rank 1 half of rank
# 0's 2048 floats): every rank of a collective passes the same count
# (nccl.h), and whichever rank looks first names both counts.
if begin rules/collective-calls/counts-differ-named; then
  need sim-pthread/rules
  SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" collective-calls/counts-differ
  want_status 70
  want_err "RULE VIOLATION [collective-calls]"
  grep -qE "ncclAllReduce: rank (0 passed count 2048, this rank 1024|1 passed count 1024, this rank 2048)" "$f.err" ||
    why+="no line naming both counts (2048 on rank 0, 1024 on rank 1); "
  end
fi
# A CUDA event left at exit (by each of the 2 ranks) is a leak like any
# other object.
if begin rules/no-leaks/event-left-named; then
  need sim-pthread/rules
  SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" no-leaks/event-left
  want_status 70
  want_err "ncclsim: LEAK: event never destroyed"
  want_err "RULE VIOLATION [no-leaks] 2 object(s) left at exit" # one a rank
  end
fi
# A rank's host writing into its own window once its own kernel ended,
# while a peer's kernel read it after their last barrier: nothing orders
# the two (tests/rules/device_rules.c, host_writes_own_window).
if begin rules/lsa-data-race/host-writes-own-window-named; then
  need sim-pthread/rules
  SIM_SEED=1 SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" lsa-data-race/host-writes-own-window
  want_status 70
  want_err "RULE VIOLATION [lsa-data-race] rank 0 in a copy or memset: rank 0's host (a copy or memset) writes the word at byte 0 of rank 0's window, which rank 1's kernel (CTA 0, thread 0, device_rules.c:"
  want_err ") read, and nothing orders the two"
  end
fi
for rule in $SIM_RULES; do
  if begin "rules/violation/$rule"; then
    need sim-pthread/rules
    version=$(rule_version "$rule")
    if [ -n "$version" ]; then
      SIM_NCCL_VERSION=$version SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" "$rule"
    else
      SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" "$rule"
    fi
    want_status 70
    want_err "RULE VIOLATION [$rule]"
    end
  fi
done

