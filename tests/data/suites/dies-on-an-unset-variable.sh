# A suite that ends its shell between two cases: a variable no one set,
# under set -u (the control of run_tests.sh's suite_stopped in
# 97-checks.sh: the run must fail at once, naming the suite, with no
# guard left behind).
# Lane: own

if begin control/before-the-error; then
  run true
  want_status 0
  end
fi
echo "$NOT_SET_ANYWHERE"
if begin control/after-the-error; then
  run true
  want_status 0
  end
fi
