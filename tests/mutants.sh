#!/usr/bin/env bash
# `make test-mutants`: how many plausible one-line bugs the suite catches.
# Two kinds of mutants:
#  - listed: each of tests/mutants/mutants.txt (its format is at its top),
#    chosen by hand, with the cases that should catch it; one marked
#    `equivalent` is listed with its reason and not run; one whose line no
#    longer occurs exactly once is STALE and fails the run;
#  - generated: MUTANTS_SAMPLE (default 24) of the one-token changes of
#    tests/mutants/generate.py, drawn with MUTANT_SEED (default: the time;
#    printed, so that a run can be repeated), each against the cases that
#    tests/mutants/coverage.txt names for its file. Before it runs, each is
#    compiled (generate.py's probe): one that does not compile is
#    `invalid`, one whose object code is the original's is `equivalent`;
#    neither is run or counted in the score.
# A mutant runs in a scratch copy of the tree, one per worker (MUTANT_JOBS,
# default 2, at once): its change is made, its cases run (TEST_FILTER), and
# it is killed if one of them fails, or survived if all pass; the file is
# put back.
#
#   MUTANT_FILTER=re   only the mutants whose name matches (a listed one's
#                      name, a generated one's FILE:LINE:COLUMN)
#   MUTANT_LISTED=0    only the generated mutants
#   MUTANT_PART=K/N    only the K-th of N equal parts of the generated
#                      sample (a long sample run in pieces)
#   MUTANT_RUN_LIMIT=s the limit of each mutant's run (default 600)
#   MUTANT_WORK=dir    where the copies, logs and results go (default
#                      tests/build/mutants)
#   MUTANT_JOIN=K      one more worker, in copy wK, for the run under way
#                      (its queue, its control; prints its own verdicts)
#   MUTANT_CONTROL=0   no control run (the next piece of a sample whose
#                      control an earlier piece ran on the same tree)
#   tests/mutants.sh --score FILE...   the score of earlier runs' results
#                      (tests/build/mutants/results.tsv, copied aside)
#   tests/mutants.sh --lines [LIST]  only checks, in seconds, that each
#                      mutant's line occurs exactly once in its file (make
#                      test runs it, so that the list cannot rot unseen);
#                      exits 1 naming each one that does not
#
# Prints a line per mutant (verdict, name, the case that killed it), then
# the score per folder (tests/sim, tools/whatran, instruments, common,
# lessons, other: killed of those run) and the survivors (FILE:LINE and
# the change); writes the results to tests/build/mutants/results.tsv.
# Exits 0 only if no listed mutant is stale, every generated mutant's
# cases exist, and at least 90% of the listed mutants run were killed.
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

# The score of results files (the format is results.tsv's, below): per
# folder, the listed and the generated mutants killed of those run, the
# generated ones not run (invalid, equivalent), then every survivor.
score() {
  python3 - "$@" <<'PY'
import sys
rows = []
for path in sys.argv[1:]:
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) == 7:
            rows.append(f)
folders = ["tests/sim", "tools/whatran", "instruments", "common", "lessons", "other"]
print(f"{'folder':<15} {'listed killed/run':>18} {'generated killed/run':>21} {'score':>6}"
      f" {'invalid':>8} {'equivalent':>11}")
for name in folders:
    mine = [r for r in rows if r[1] == name]
    if not mine:
        continue
    def count(kind, verdict):
        return sum(1 for r in mine if r[0] == kind and r[2] == verdict)
    lk, ls = count("listed", "killed"), count("listed", "SURVIVED")
    gk, gs = count("generated", "killed"), count("generated", "SURVIVED")
    run = gk + gs
    rate = f"{100 * gk // run}%" if run else "-"
    print(f"{name:<15} {f'{lk}/{lk + ls}':>18} {f'{gk}/{run}':>21} {rate:>6}"
          f" {count('generated', 'invalid'):>8} {count('generated', 'equivalent'):>11}")
survivors = [r for r in rows if r[2] == "SURVIVED"]
print(f"# survivors: {len(survivors)}")
for r in survivors:
    print(f"  {r[4]}  {r[5]}  ({r[0]}: {r[3]})")
PY
}
if [ "${1:-}" = --score ]; then
  shift
  score "$@"
  exit
fi

WORK=${MUTANT_WORK:-$ROOT/tests/build/mutants}
JOBS=${MUTANT_JOBS:-2}
SEED=${MUTANT_SEED:-$(($(date +%s) % 100000))}
SAMPLE=${MUTANTS_SAMPLE:-24}
LIMIT=${MUTANT_RUN_LIMIT:-600}
JOIN=${MUTANT_JOIN:-}
mkdir -p "$WORK"
if [ -z "$JOIN" ]; then
  rm -rf "$WORK/out" "$WORK/logs" "$WORK/results.tsv"
  [ "${MUTANT_CONTROL:-1}" = 0 ] || rm -rf "$WORK/control"
  mkdir -p "$WORK/out" "$WORK/control"
  : >"$WORK/results.tsv"
fi

# A worker's scratch copy: the tracked files (or, outside git, every file
# but build folders), its own build folders kept between runs. Everything
# else of an earlier copy goes first: a file since removed or moved here
# (an old source, an old suite) must not be built or run there.
copy_tree() {
  local tree=$1
  mkdir -p "$tree"
  find "$tree" -mindepth 1 \( -name build -prune \) -o \( -type f -print0 \) | xargs -0 -r rm -f
  if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    git ls-files -z | (cd "$ROOT" && xargs -0 cp --parents -t "$tree" 2>/dev/null)
    git ls-files --others --exclude-standard -z | (cd "$ROOT" && xargs -0 -r cp --parents -t "$tree" 2>/dev/null)
  else
    (cd "$ROOT" && find . -path ./tests/build -prune -o -type f -print0 | xargs -0 cp --parents -t "$tree")
  fi
}

# The queue, a mutant a line, tab-separated (no field empty):
#   kind name folder file cases why line col from to
# listed: why is `-` or its reason of equivalence, line and col `-`;
# generated: its name is FILE:LINE:COLUMN, why `-`.
[ -n "$JOIN" ] || echo "# generated mutants: MUTANTS_SAMPLE=$SAMPLE MUTANT_SEED=$SEED${MUTANT_PART:+ MUTANT_PART=$MUTANT_PART}"
[ -n "$JOIN" ] || python3 - "$SEED" "$SAMPLE" >"$WORK/queue.tsv" <<'PY' || exit 1
import os, re, sys
sys.path.insert(0, "tests/mutants")
import generate
seed, count = int(sys.argv[1]), int(sys.argv[2])
keep = re.compile(os.environ.get("MUTANT_FILTER", ""))
out = []
if os.environ.get("MUTANT_LISTED", "1") != "0":
    for block in open("tests/mutants/mutants.txt").read().split("\n\n"):
        f = {}
        for line in block.split("\n"):
            if line and not line.startswith("#"):
                key, _, value = line.partition(": ")
                f[key] = value
        if "name" in f:
            out.append(["listed", f["name"], generate.folder(f["file"]), f["file"], f.get("cases", "-"),
                        f.get("equivalent", "-"), "-", "-", f["from"], f["to"]])
chosen, total = generate.sample(".", seed, count)
part = os.environ.get("MUTANT_PART")
if part:
    k, n = (int(x) for x in part.split("/"))
    chosen = chosen[(k - 1) * len(chosen) // n:k * len(chosen) // n]
for path, line, col, kind, frm, to, cases in chosen:
    out.append(["generated", f"{path}:{line}:{col}", generate.folder(path), path, cases, "-",
                str(line), str(col), frm, to])
for row in out:
    if keep.search(row[1]):
        print("\t".join(row))
print(f"# {sum(1 for r in out if r[0] == 'generated')} generated of the {total} mutants of"
      f" the files tests/mutants/coverage.txt names", file=sys.stderr)
PY
total=$(wc -l <"$WORK/queue.tsv")
echo "# $total mutants, $JOBS workers"
start=$(date +%s)

# The control, in each worker's copy (which it also builds): without any
# mutant, the cases named must all pass, or a "killed" would mean nothing.
# The mutants' filters are shared out among the workers.
control() {
  local k=$1 tree=$WORK/w$1/tree filters
  copy_tree "$tree"
  [ "${MUTANT_CONTROL:-1}" != 0 ] || return 0
  filters=$(awk -F'\t' -v k="$k" -v n="$JOBS" '$6 == "-" && $5 != "-" && !seen[$5]++ { if ((i++ % n) + 1 == k) printf "%s(%s)", (c++ ? "|" : ""), $5 }' "$WORK/queue.tsv")
  [ -n "$filters" ] || return 0
  (cd "$tree" && TEST_RUN_LIMIT=3600 TEST_LOGS="$WORK/control/logs-$k" TEST_FILTER="$filters" bash tests/run_tests.sh) >"$WORK/control/$k.out" 2>&1
}
[ "${MUTANT_CONTROL:-1}" = 0 ] && echo "# control: not run (MUTANT_CONTROL=0): the last control's failures stand"
if [ -n "$JOIN" ]; then
  MUTANT_CONTROL=0 control "$JOIN"
else
  for ((k = 1; k <= JOBS; k++)); do control "$k" & done
  wait
fi
# A case that fails without a mutant (a timing case on a busy machine)
# can kill nothing: it is left out of every mutant's cases, named here,
# and the run fails at its end.
if [ "${MUTANT_CONTROL:-1}" != 0 ] && [ -z "$JOIN" ]; then
  cat "$WORK/control/"*.out 2>/dev/null | sed -n 's/^not ok [0-9]* - \([^:]*\):.*/\1/p' >"$WORK/control/failed"
  echo "# control: $(cat "$WORK/control/"*.out 2>/dev/null | grep -cE '^ok [0-9]+ - ') cases pass without any mutant ($(($(date +%s) - start)) s)"
fi
touch "$WORK/control/failed"
while read -r name; do
  echo "# control: $name fails without any mutant: left out of every mutant's cases"
done <"$WORK/control/failed"
# cases_of FILTER: the filter, or without the cases that failed the
# control, the list of the others' names.
cases_of() {
  if [ ! -s "$WORK/control/failed" ] || ! grep -qE -- "$1" "$WORK/control/failed"; then
    printf '%s\n' "$1"
    return
  fi
  (cd "$2" && TEST_LIST=1 TEST_FILTER="$1" bash tests/run_tests.sh 2>/dev/null) | grep -vxF -f "$WORK/control/failed" |
    sed 's/[][\.*^$(){}+?|]/\\&/g' | paste -sd'|' | sed 's/.*/^(&)$/'
}

# One mutant: its verdict on a line of results.tsv (kind, folder, verdict,
# name, FILE:LINE, the change, what killed it or why not run).
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" | flock "$WORK/results.lock" tee -a "$WORK/results.tsv" |
    awk -F'\t' '{ printf "%-10s %-44s %s\n", $3, $4, $7 }'
}
one() {
  local tree=$1 n=$2 kind name folder file cases why line col from to where target out status ran
  IFS=$'\t' read -r kind name folder file cases why line col from to < <(sed -n "${n}p" "$WORK/queue.tsv")
  target=$tree/$file
  if [ "$kind" = listed ]; then
    where=$file
    if [ "$why" != - ]; then
      record "$kind" "$folder" equivalent "$name" "$where" "$from -> $to" "$why"
      return
    fi
    count=$(python3 -c 'import sys; print(open(sys.argv[1]).read().split("\n").count(sys.argv[2]))' "$target" "$from" 2>/dev/null)
    where=$file:$(python3 -c 'import sys; print(open(sys.argv[1]).read().split("\n").index(sys.argv[2]) + 1)' "$target" "$from" 2>/dev/null)
    if [ "$count" != 1 ]; then
      record "$kind" "$folder" STALE "$name" "$where" "$from -> $to" "its line occurs ${count:-0} times in $file: update tests/mutants/mutants.txt"
      return
    fi
    cp "$target" "$tree.original"
    python3 -c 'import sys
p, a, b = sys.argv[1:4]
lines = open(p).read().split("\n")
lines[lines.index(a)] = b
open(p, "w").write("\n".join(lines))' "$target" "$from" "$to"
  else
    where=$file:$line
    verdict=$(cd "$tree" && python3 tests/mutants/generate.py probe . "$file" "$line" "$col" "$from" "$to")
    if [ "$verdict" != run ]; then
      record "$kind" "$folder" "$verdict" "$name" "$where" "$from -> $to" "(compile check)"
      return
    fi
    cp "$target" "$tree.original"
    python3 tests/mutants/generate.py apply "$target" "$target" "$line" "$col" "$from" "$to"
  fi
  out=$WORK/out/$n.out
  (cd "$tree" && TEST_RUN_LIMIT=$LIMIT TEST_LOGS="$WORK/logs/$n" TEST_FILTER="$(cases_of "$cases" "$tree")" bash tests/run_tests.sh) >"$out" 2>&1
  status=$?
  cp "$tree.original" "$target"
  ran=$(grep -cE '^(not )?ok [0-9]+ - ' "$out")
  if [ "$ran" = 0 ]; then
    record "$kind" "$folder" STALE "$name" "$where" "$from -> $to" "no case matches '$cases'"
  elif [ $status != 0 ]; then
    record "$kind" "$folder" killed "$name" "$where" "$from -> $to" \
      "$(grep -m1 -oE '^not ok [0-9]+ - [^:]+' "$out" | sed 's/^not ok [0-9]* - //')"
  else
    record "$kind" "$folder" SURVIVED "$name" "$where" "$from -> $to" "$ran case(s) passed: $cases"
  fi
}
# A worker takes the next mutant of the queue until none is left.
[ -n "$JOIN" ] || echo 1 >"$WORK/next"
worker() {
  local k=$1 n
  while :; do
    n=$(flock "$WORK/queue.lock" sh -c 'n=$(cat "$1"); echo $((n + 1)) >"$1"; echo "$n"' _ "$WORK/next")
    [ "$n" -le "$total" ] || break
    one "$WORK/w$k/tree" "$n"
  done
}
printf '%-10s %-44s %s\n' verdict mutant "case that killed it / why not run"
if [ -n "$JOIN" ]; then
  worker "$JOIN"
  exit 0
fi
for ((k = 1; k <= JOBS; k++)); do worker "$k" & done
wait

echo "# $(($(date +%s) - start)) s; MUTANTS_SAMPLE=$SAMPLE MUTANT_SEED=$SEED; results in $WORK/results.tsv"
score "$WORK/results.tsv"
python3 - "$WORK/results.tsv" "$WORK/control/failed" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
stale = sum(1 for r in rows if r[2] == "STALE")
control = open(sys.argv[2]).read().split("\n") if len(sys.argv) > 2 else []
control = [c for c in control if c]
if control:
    print(f"# {len(control)} case(s) failed without any mutant (named above)")
listed = [r for r in rows if r[0] == "listed" and r[2] in ("killed", "SURVIVED")]
killed = sum(1 for r in listed if r[2] == "killed")
rate = 100 * killed // len(listed) if listed else 100
print(f"# {stale} stale; listed mutants: kill rate {rate}% of {len(listed)} run (at least 90% wanted)")
sys.exit(1 if stale or rate < 90 or control else 0)
PY
