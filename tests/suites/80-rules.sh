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

