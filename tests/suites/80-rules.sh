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

