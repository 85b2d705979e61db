#!/usr/bin/env bash
# `make test-coverage`: the whole suite once, in a scratch copy of the tree
# (tests/build/coverage/tree) whose builds of common/, instruments/,
# tools/whatran/ and tests/sim/ are measured (gcc --coverage, through
# tests/coverage/compiler.sh first on PATH), then gcovr's reading of the
# counters, printed by tests/checks/coverage_report.py: line and branch
# coverage per file, and the rule sites of tests/sim and the verdict
# phrases of libwhatran and the watchdog that no case reached.
#
# gcovr comes from pip, into a virtual environment in
# tests/build/coverage/venv (else the user's site), the first time.
# TEST_FILTER narrows the suite as for `make test` (a partial measure).
# Its own limits: TEST_RUN_LIMIT for the whole run (default 5400 s) and
# TEST_TIMEOUT per command (default 180 s): the measured programs are
# slower, and a command ended at its limit writes no counters. Output: tests/build/coverage/
# (run.tap, coverage.json, report.txt). Exits 0 when the report was made,
# whatever the suite's verdicts (its last line is repeated at the end).
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd -P)
WORK=$ROOT/tests/build/coverage
TREE=$WORK/tree
BIN=$WORK/bin
mkdir -p "$WORK" "$TREE" "$BIN"

# gcovr, once.
if "$WORK/venv/bin/python3" -m gcovr --version >/dev/null 2>&1; then
  GCOVR=("$WORK/venv/bin/python3" -m gcovr)
elif python3 -m gcovr --version >/dev/null 2>&1; then
  GCOVR=(python3 -m gcovr)
else
  echo "# installing gcovr (pip) into $WORK/venv"
  if python3 -m venv "$WORK/venv" >"$WORK/pip.log" 2>&1 &&
    "$WORK/venv/bin/python3" -m pip install -q 'gcovr>=8,<9' >>"$WORK/pip.log" 2>&1; then
    GCOVR=("$WORK/venv/bin/python3" -m gcovr)
  elif python3 -m pip install -q --user 'gcovr>=8,<9' >>"$WORK/pip.log" 2>&1 ||
    python3 -m pip install -q --user --break-system-packages 'gcovr>=8,<9' >>"$WORK/pip.log" 2>&1; then
    GCOVR=(python3 -m gcovr)
  else
    echo "test-coverage: gcovr could not be installed with pip (see $WORK/pip.log)" >&2
    exit 1
  fi
fi

# The scratch copy: the tracked files (or, outside git, every file but
# build folders) with their times, so that its build folder, kept between
# runs, rebuilds only what changed; the counters of an earlier run go. A
# measuring compiler changed since the last run (its flags) starts over.
flavour=$(cat tests/coverage/compiler.sh tests/coverage/flush.c | cksum)
if [ "$(cat "$WORK/flavour" 2>/dev/null)" != "$flavour" ]; then
  rm -rf "$TREE" && mkdir -p "$TREE" && echo "$flavour" >"$WORK/flavour"
fi
find "$TREE" -mindepth 1 \( -name build -prune \) -o \( -type f -print0 \) | xargs -0 -r rm -f
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$ROOT" ]; then
  git ls-files -z | xargs -0 cp -p --parents -t "$TREE" 2>/dev/null
  git ls-files --others --exclude-standard -z | xargs -0 -r cp -p --parents -t "$TREE" 2>/dev/null
else
  find . -path ./tests/build -prune -o -type f -print0 | xargs -0 cp -p --parents -t "$TREE"
fi
find "$TREE" -name '*.gcda' -delete

# The measuring compiler, first on PATH; flush.o by the real one.
cc -O1 -fPIC -c -o "$BIN/flush.o" tests/coverage/flush.c || exit 1
for c in cc gcc g++ c++; do ln -sf "$ROOT/tests/coverage/compiler.sh" "$BIN/$c"; done

echo "# the suite, measured, in $TREE (its TAP in $WORK/run.tap)"
PATH=$BIN:$PATH TEST_COVERAGE_BIN=$BIN TEST_COVERAGE_TREE=$TREE \
  TEST_RUN_LIMIT=${TEST_RUN_LIMIT:-5400} TEST_TIMEOUT=${TEST_TIMEOUT:-180} bash "$TREE/tests/run_tests.sh" >"$WORK/run.tap" 2>&1
suite=$(tail -n 1 "$WORK/run.tap")
grep '^not ok ' "$WORK/run.tap" | cut -c1-200

echo "# gcovr ($WORK/gcovr.log)"
if ! "${GCOVR[@]}" --root "$TREE" -j "$(nproc)" \
  --filter "$TREE/common/" --filter "$TREE/instruments/" --filter "$TREE/tools/whatran/" --filter "$TREE/tests/sim/" \
  --exclude-directories "$TREE/tests/build/logs" --exclude-directories "$TREE/tests/build/mutants" \
  --gcov-ignore-errors all --gcov-ignore-parse-errors all --merge-mode-functions separate \
  --json-pretty --json "$WORK/coverage.json" "$TREE" >"$WORK/gcovr.log" 2>&1; then
  echo "test-coverage: gcovr failed (see $WORK/gcovr.log)" >&2
  exit 1
fi
python3 tests/checks/coverage_report.py --root "$TREE" "$WORK/coverage.json" | tee "$WORK/report.txt"
echo "# the suite, measured: $suite"
