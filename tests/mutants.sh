#!/usr/bin/env bash
# `make test-mutants`: how many plausible one-line bugs the suite catches.
# For each mutant of tests/mutants/mutants.txt (its format is at its top):
# in a scratch copy of the tree, the line is replaced, the cases named for
# it run (TEST_FILTER), and the mutant is killed if one of them fails, or
# survived if all pass; the line is put back. Mutants marked `equivalent`
# are listed with their reason and not run. A mutant whose line no longer
# occurs exactly once fails the run, so the list stays current.
#
#   MUTANT_FILTER=re   only the mutants whose name matches
#   tests/mutants.sh --lines [LIST]  only checks, in seconds, that each
#                      mutant's line occurs exactly once in its file (make
#                      test runs it, so that the list cannot rot unseen);
#                      exits 1 naming each one that does not
#
# Prints a table (mutant, verdict, the case that killed it) and the kill
# rate; exits 0 only if every mutant applied and at least 90% of those run
# were killed.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

if [ "${1:-}" = --lines ]; then
  python3 - "${2:-tests/mutants/mutants.txt}" <<'PY'
import sys
stale = 0
for block in open(sys.argv[1]).read().split("\n\n"):
    f = dict(line.partition(": ")[::2] for line in block.split("\n")
             if line and not line.startswith("#"))
    if "name" not in f:
        continue
    try:
        count = open(f["file"]).read().split("\n").count(f["from"])
    except OSError:
        count = 0
    if count != 1:
        stale += 1
        print(f"mutants: {f['name']}: its line occurs {count} times in {f['file']}:"
              f" {f['from'].strip()}")
print(f"mutants: {stale} stale" if stale else "mutants: every line occurs once")
sys.exit(1 if stale else 0)
PY
  exit
fi
WORK=$ROOT/tests/build/mutants
TREE=$WORK/tree
LIST=$ROOT/tests/mutants/mutants.txt
filter=${MUTANT_FILTER:-}

# The scratch copy: the tracked files (or, outside git, every file but
# build folders), its own build folders kept between runs. Everything else
# of an earlier copy goes first: a file since removed or moved here (an
# old source, an old suite) must not be built or run there.
mkdir -p "$TREE"
find "$TREE" -mindepth 1 \( -name build -prune \) -o \( -type f -print0 \) | xargs -0 -r rm -f
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  git ls-files -z | (cd "$ROOT" && xargs -0 cp --parents -t "$TREE" 2>/dev/null)
  git ls-files --others --exclude-standard -z | (cd "$ROOT" && xargs -0 -r cp --parents -t "$TREE" 2>/dev/null)
else
  (cd "$ROOT" && find . -path ./tests/build -prune -o -type f -print0 | xargs -0 cp --parents -t "$TREE")
fi

mapfile -t mutants < <(python3 - "$LIST" <<'PY'
import sys
for block in open(sys.argv[1]).read().split("\n\n"):
    f = {}
    for line in block.split("\n"):
        if line and not line.startswith("#"):
            key, _, value = line.partition(": ")
            f[key] = value
    if "name" in f:
        # name, file, cases or '-', equivalent or '-', from, to (tab-separated)
        print("\t".join([f["name"], f["file"], f.get("cases", "-"), f.get("equivalent", "-"),
                         f["from"], f["to"]]))
PY
)

# The control: without any mutant, the cases named must all pass, or a
# "killed" would mean nothing.
all_cases=""
for m in "${mutants[@]}"; do
  IFS=$'\t' read -r name file cases why from to <<<"$m"
  [ -z "$filter" ] || [[ $name =~ $filter ]] || continue
  [ "$cases" != - ] && all_cases+="${all_cases:+|}($cases)"
done
start=$(date +%s)
if [ -n "$all_cases" ]; then
  (cd "$TREE" && TEST_RUN_LIMIT=${TEST_RUN_LIMIT:-3600} TEST_LOGS="$WORK/logs/control" TEST_FILTER="$all_cases" bash tests/run_tests.sh) >"$WORK/control.out" 2>&1 || {
    echo "test-mutants: without any mutant, some of the cases fail (see $WORK/control.out):"
    grep -E '^not ok' "$WORK/control.out" | head -n 5
    exit 1
  }
  echo "# control: the $(grep -cE '^ok [0-9]+ - ' "$WORK/control.out") cases pass without any mutant"
fi

killed=0 survived=0 stale=0 equivalent=0
printf '%-36s %-10s %s\n' mutant verdict "case that killed it / why"
for m in "${mutants[@]}"; do
  IFS=$'\t' read -r name file cases why from to <<<"$m"
  [ -z "$filter" ] || [[ $name =~ $filter ]] || continue
  if [ "$why" != - ]; then
    equivalent=$((equivalent + 1))
    printf '%-36s %-10s %s\n' "$name" equivalent "$why"
    continue
  fi
  target=$TREE/$file
  count=$(python3 -c 'import sys; print(open(sys.argv[1]).read().split("\n").count(sys.argv[2]))' "$target" "$from" 2>/dev/null)
  if [ "$count" != 1 ]; then
    stale=$((stale + 1))
    printf '%-36s %-10s %s\n' "$name" STALE "its line occurs ${count:-0} times in $file: update tests/mutants/mutants.txt"
    continue
  fi
  cp "$target" "$WORK/original"
  python3 -c 'import sys
p, a, b = sys.argv[1:4]
lines = open(p).read().split("\n")
lines[lines.index(a)] = b
open(p, "w").write("\n".join(lines))' "$target" "$from" "$to"
  logs=$WORK/logs/$name
  (cd "$TREE" && TEST_RUN_LIMIT=${TEST_RUN_LIMIT:-3600} TEST_LOGS="$logs" TEST_FILTER="$cases" bash tests/run_tests.sh) >"$WORK/$name.out" 2>&1
  status=$?
  cp "$WORK/original" "$target"
  ran=$(grep -cE '^(not )?ok [0-9]+ - ' "$WORK/$name.out")
  if [ "$ran" = 0 ]; then
    stale=$((stale + 1))
    printf '%-36s %-10s %s\n' "$name" STALE "no case matches '$cases'"
  elif [ $status != 0 ]; then
    killed=$((killed + 1))
    printf '%-36s %-10s %s\n' "$name" killed "$(grep -m1 -oE '^not ok [0-9]+ - [^:]+' "$WORK/$name.out" | sed 's/^not ok [0-9]* - //')"
  else
    survived=$((survived + 1))
    printf '%-36s %-10s %s\n' "$name" SURVIVED "$ran case(s) passed: $cases"
  fi
done
run=$((killed + survived))
rate=0
[ $run -gt 0 ] && rate=$((100 * killed / run))
echo "# $killed killed, $survived survived, $equivalent equivalent (not run), $stale stale; kill rate $rate% of $run run; $(($(date +%s) - start)) s"
[ $stale = 0 ] && [ $run -gt 0 ] && [ $rate -ge 90 ]
