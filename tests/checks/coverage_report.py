#!/usr/bin/env python3
"""What `make test-coverage` measured (tests/coverage.sh), read from gcovr's
JSON report: line and branch coverage per file, the branch coverage of the
files the goal names, and the rule sites of the simulation and the verdict
phrases of libwhatran and the watchdog that no case reached.

    coverage_report.py --root TREE COVERAGE.json...

The JSON's file paths are relative to TREE, whose sources are read; the
entries of a file in several reports are merged.

A rule site is a place in tests/sim/*.c where the simulation reports a
violation or refuses a call: a call of one of its reporting functions (the
functions defined _Noreturn there, and those that print NCCL's WARN), or,
outside them, a message of its own (a literal that starts "ncclsim: ").
A verdict phrase is a string literal of two words or more, apart
(adjacent literals are one) in tools/whatran/*.c or the watchdog's files
(instruments/src/watchdog*.c, verdict.c). Either is reached when the line
of its statement ran (gcov counts lines: a site sharing its line with the
condition that guards it, or a phrase picked by ?: in a statement that
ran, counts as reached).
"""
import argparse
import fnmatch
import json
import re
import sys
from pathlib import Path

RULE_FILES = ["tests/sim/*.c"]
PHRASE_FILES = ["tools/whatran/*.c", "instruments/src/watchdog*.c", "instruments/src/verdict.c"]
GOALS = [("tests/sim's rule files", "rule"), ("tools/whatran", "tools/whatran/*.c")]
GOAL_PERCENT = 90

WORD = re.compile(r"(?<![%\w])[A-Za-z]{2,}")  # in a word (a printf conversion, %lu, is none)
DEFINITION = re.compile(r"^(?:static\s+)?(?:_Noreturn\s+)?[A-Za-z_][\w\s\*]*?\b(\w+)\(")


def matches(path, patterns):
    return any(fnmatch.fnmatch(path, p) for p in patterns)


def scan(text):
    """The source without its comments, line by line (strings kept, line
    numbers kept), and its string literals: (first line, text), adjacent
    ones joined."""
    code, literals = [], []
    i, n, line, current = 0, len(text), 1, []
    last_literal = None  # index in literals of a literal that may continue
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for ch in text[i:end]:
                if ch == "\n":
                    code.append("".join(current))
                    current, line = [], line + 1
            i = end
            continue
        if c in "\"'":
            j, body = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    body.append(text[j:j + 2])
                    j += 2
                    continue
                body.append(text[j])
                j += 1
            current.append(text[i:j + 1])
            if c == '"':
                if last_literal is not None:
                    first, joined = literals[last_literal]
                    literals[last_literal] = (first, joined + "".join(body))
                else:
                    literals.append((line, "".join(body)))
                    last_literal = len(literals) - 1
            i = j + 1
            continue
        if c == "\n":
            code.append("".join(current))
            current, line = [], line + 1
        else:
            current.append(c)
            if not c.isspace():
                last_literal = None
        i += 1
    code.append("".join(current))
    return code, literals


def reporters(sources):
    """The simulation's reporting functions: {name: file or None (any
    file)}, and the line ranges of their bodies per file."""
    names, bodies = {}, {}
    for path, (code, _) in sources.items():
        start = None
        for number, text in enumerate(code, 1):
            m = DEFINITION.match(text)
            if start is None and m and not text.rstrip().endswith(";"):
                start, name, head = number, m.group(1), text
            elif start is not None and text.startswith("}"):
                body = "\n".join(code[start - 1:number])
                if "_Noreturn" in head or "NCCL WARN" in body:
                    names[name] = path if head.startswith("static") else None
                    bodies.setdefault(path, []).append((start, number))
                start = None
    return names, bodies


def preprocessor_lines(code):
    """The lines of preprocessor directives, continued lines included: gcov
    counts a macro's calls where it is used, never in its definition."""
    lines, going = set(), False
    for number, text in enumerate(code, 1):
        going = going or text.lstrip().startswith("#")
        if going:
            lines.add(number)
            going = text.rstrip().endswith("\\")
    return lines


def statement_line(code, counts, line):
    """The line gcov counted for the statement that holds LINE: LINE, else
    an earlier line of the same statement, else a later one; None if gcov
    counted none (no code there was measured)."""
    if line in counts:
        return line
    for earlier in range(line - 1, max(0, line - 8), -1):
        if code[earlier - 1].rstrip().endswith((";", "{", "}")):
            break
        if earlier in counts:
            return earlier
    for later in range(line + 1, min(len(code), line + 8) + 1):
        if later in counts:
            return later
        if code[later - 1].rstrip().endswith(";"):
            break
    return None


def merged_lines(entry):
    """{line: (count, [branch counts])} of one file of gcovr's JSON, the
    entries of one line (one per function) merged."""
    lines = {}
    for item in entry.get("lines", []):
        if item.get("gcovr/noncode"):
            continue
        number = item["line_number"]
        branches = [b.get("count", 0) for b in item.get("branches", [])]
        count, known = lines.get(number, (0, []))
        if len(known) == len(branches):
            branches = [a + b for a, b in zip(known, branches)]
        elif len(known) > len(branches):
            branches = known
        lines[number] = (count + item.get("count", 0), branches)
    return lines


def percent(done, total):
    return f"{100.0 * done / total:5.1f}%" if total else "    -"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, help="the measured tree")
    parser.add_argument("reports", nargs="+", help="gcovr's JSON (--json)")
    args = parser.parse_args()
    root = Path(args.root)
    entries = {}
    for report in args.reports:
        for entry in json.load(open(report))["files"]:
            entries.setdefault(entry["file"], []).extend(entry.get("lines", []))
    files = {path: merged_lines({"lines": lines}) for path, lines in entries.items()}

    print(f"{'file':44} {'lines':>16} {'branches':>16}")
    totals = {}
    for path in sorted(files):
        lines = files[path]
        run = sum(1 for c, _ in lines.values() if c > 0)
        branches = [b for _, bs in lines.values() for b in bs]
        taken = sum(1 for b in branches if b > 0)
        totals[path] = (taken, len(branches))
        print(f"{path:44} {run:5}/{len(lines):<5} {percent(run, len(lines))} "
              f"{taken:5}/{len(branches):<5} {percent(taken, len(branches))}")

    sources = {}
    for path in files:
        if matches(path, RULE_FILES + PHRASE_FILES) and (root / path).exists():
            sources[path] = scan((root / path).read_text())
    names, bodies = reporters({p: s for p, s in sources.items() if matches(p, RULE_FILES)})
    call = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\s*\(") if names else None

    sites, phrases = [], []
    for path in sorted(sources):
        code, literals = sources[path]
        counts = {n: c for n, (c, _) in files[path].items()}
        directives = preprocessor_lines(code)
        inside = lambda line: line in directives or any(a <= line <= b for a, b in bodies.get(path, []))
        def reached(line):
            at = statement_line(code, counts, line)
            return at is not None and counts[at] > 0
        if matches(path, RULE_FILES):
            seen = set()
            for number, text in enumerate(code, 1):
                m = call.search(text) if call else None
                if (m and text[:1].isspace() and not inside(number)
                        and names[m.group(1)] in (None, path)):
                    sites.append((path, number, text.strip(), reached(number)))
                    seen.add(number)
            for number, text in literals:
                if text.startswith("ncclsim: ") and not inside(number) and number not in seen:
                    sites.append((path, number, '"' + text + '"', reached(number)))
        if matches(path, PHRASE_FILES):
            for number, text in literals:
                words = [t for t in text.split() if WORD.search(t)]  # (a file name, a.so.1, is one)
                if len(words) >= 2 and number not in directives:
                    phrases.append((path, number, '"' + text + '"', reached(number)))

    print()
    for title, pattern in GOALS:
        chosen = sorted({s[0] for s in sites}) if pattern == "rule" else \
            [p for p in files if fnmatch.fnmatch(p, pattern)]
        taken = sum(totals[p][0] for p in chosen)
        total = sum(totals[p][1] for p in chosen)
        print(f"{title} ({len(chosen)} files): branches {taken}/{total} {percent(taken, total).strip()}"
              f" (the goal: {GOAL_PERCENT}%)")
    for title, found in (("rule sites", sites), ("verdict phrases", phrases)):
        missed = sorted((s for s in found if not s[3]), key=lambda s: (s[0], s[1]))
        print(f"\n{title} no case reaches: {len(missed)} of {len(found)}")
        for path, number, text, _ in missed:
            print(f"  {path}:{number}: {text[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
