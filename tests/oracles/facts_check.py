#!/usr/bin/env python3
"""The simulation against a recorded run of tools/nccl_facts.

  facts_check.py RECORD MEASURED EXCEPTIONS

RECORD is a docs/facts file, MEASURED the simulated probe's --tsv output
for the same version and rank count, EXCEPTIONS tests/oracles/facts_exceptions.txt.
For every fact of RECORD: control, result and window must be equal, and,
for a fact about what ran, the engine (the copy engines, or the kernels by
name; not the number of copies, which is the simulation's own model),
unless an exception names the fact (and version and ranks); an exception
whose fact now agrees is stale. Facts MEASURED has and RECORD lacks are listed,
not failed (not yet recorded on a GPU). Exit 1 on a difference or a stale
exception."""
import sys


def rows(path):
    with open(path) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    return {r[0]: r for r in lines[1:]}


def exceptions(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or " -- " not in line:
                continue
            fact, version, ranks = line.split(" -- ")[0].split()
            out.append((fact, version, ranks))
    return out


def engine(detail):
    """What ran, from a detail: 'copy engines', 'kernels: NAMES', or None."""
    if detail.startswith("copy engines:"):
        return "copy engines"
    if detail.startswith("kernels:"):
        return detail.split(";")[0]
    return None


def name(code, ranks):
    code = int(code)
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}", ranks


def main():
    record, measured, excepted = rows(sys.argv[1]), rows(sys.argv[2]), exceptions(sys.argv[3])
    problems = []
    for fact, rec in record.items():
        version, ranks = name(rec[1], rec[2])
        rule = [e for e in excepted if e[0] in (fact, "*") and e[1] in (version, "*") and e[2] in (ranks, "*")]
        sim = measured.get(fact)
        if sim is None:
            problems.append(f"{fact}: recorded, but the simulated probe printed no line")
            continue
        ran = engine(rec[7]) if len(rec) > 7 else None
        sim_ran = engine(sim[7]) if len(sim) > 7 else None
        if sim[3] == "hung":
            # The simulation plays no hang: its probe ran out of time (a
            # machine too slow for the limit), which agrees with nothing.
            problems.append(f"{fact}: the simulated probe got no answer within its limit ({sim[7] if len(sim) > 7 else ''});"
                            " the simulation never hangs here: a machine too slow for the limit?")
            continue
        differs = rec[3:6] != sim[3:6] or (ran is not None and ran != sim_ran)
        if differs and not rule:
            problems.append(f"{fact}: recorded {' | '.join(rec[3:6])}{' | ' + ran if ran else ''};"
                            f" simulated {' | '.join(sim[3:6])}{' | ' + str(sim_ran) if ran else ''}")
        elif rule and not differs and rule[0][0] != "*":
            problems.append(f"{fact}: excepted for {version}, {ranks} rank(s), but the simulation now agrees: remove the exception")
    for fact in measured:
        if fact not in record:
            print(f"# {fact}: not in {sys.argv[1]} (not yet recorded on a GPU)")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
