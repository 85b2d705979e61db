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
for rule in $SIM_RULES; do
  if begin "rules/violation/$rule"; then
    need sim-pthread/rules
    SIM_DIR=$TMPDIR SIM_TIMEOUT_MS=1000 run "$B/sim-pthread/rules" "$rule"
    want_status 70
    want_err "RULE VIOLATION [$rule]"
    end
  fi
done

