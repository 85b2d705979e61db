#!/usr/bin/env python3
# Over 350 lines: one tool, read in order: the C tokens, the kinds of mutants, the seeded sample, the compile check and its own self-test.
"""The generated mutants of `make test-mutants`: one token changed.

Every C file (and C header) that tests/mutants/coverage.txt names is read
as C tokens (comments, string and character literals, and preprocessor
lines are left alone), and each of these tokens gives mutants:

  comparison  <  -> <=, >=     <= -> <, >     >  -> >=, <=     >= -> >, <
              == -> !=         != -> ==
  constant    an integer literal N (decimal, hex or octal, its suffix kept)
              -> N+1, N-1, 0 (those that differ from N; 0 -> 1 only)
  logical     && -> ||         || -> &&
  order       memory_order_acquire, memory_order_release -> memory_order_relaxed
              memory_order_acq_rel -> memory_order_release, memory_order_acquire
              memory_order_seq_cst -> memory_order_acq_rel
              (the same for __ATOMIC_*; cuda::memory_order_* is the same token)
  delete      a `return ...;` or `break;` statement on one line replaced
              by `{}` (an empty block: valid wherever the statement was)

A mutant is named FILE:LINE:COLUMN, with the token and its replacement.

  generate.py list FILE...                 every mutant of these files
  generate.py sample SEED COUNT            COUNT of the mutants of the files
                                           coverage.txt names, an equal share
                                           from each folder (tests/sim,
                                           tools/whatran, instruments), drawn
                                           with random.Random(SEED)
  generate.py apply SRC DST LINE COL FROM TO   writes SRC with that mutant to DST
  generate.py probe ROOT FILE LINE COL FROM TO    the compile check below
  generate.py selftest                     the generator against its
                                           definition (tests/data/mutants/)

Output lines are tab-separated: file, line, column, kind, from, to, cases.

The probe compiles each translation unit that holds the mutated file (the
file itself, or for a header each .c file of its folder that includes
it) as the suite does (-std=c11 -Wall -Wextra -Werror -O1, without -g)
with and without the mutant and prints one word:
  invalid     the mutant does not compile (counted apart, never run)
  equivalent  every one of those object files is byte-identical to the
              original's: no test can tell them apart
  run         otherwise
"""
import fnmatch
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

COMPARISON = {"<": ["<=", ">="], "<=": ["<", ">"], ">": [">=", "<="], ">=": [">", "<"],
              "==": ["!="], "!=": ["=="]}
LOGICAL = {"&&": ["||"], "||": ["&&"]}
ORDER_NAMES = {"acquire": ["relaxed"], "release": ["relaxed"],
               "acq_rel": ["release", "acquire"], "seq_cst": ["acq_rel"]}
ORDER = {}
for _name, _to in ORDER_NAMES.items():
    ORDER["memory_order_" + _name] = ["memory_order_" + t for t in _to]
    ORDER["__ATOMIC_" + _name.upper()] = ["__ATOMIC_" + t.upper() for t in _to]

PUNCTUATORS = sorted("""... <<= >>= -> ++ -- << >> <= >= == != && || *= /= %= += -= &= ^= |= ## ::
    [ ] ( ) { } . & * + - ~ ! / % < > ^ | ? : ; = , #""".split(), key=len, reverse=True)
INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)$")


def tokens(text):
    """(line, column, text) of each C token, 1-based; comments, literals
    (as one token each) and preprocessor lines are skipped or opaque."""
    i, line, col, n = 0, 1, 1, len(text)
    at_line_start = True

    def advance(k):
        nonlocal i, line, col
        for ch in text[i:i + k]:
            if ch == "\n":
                line, col = line + 1, 1
            else:
                col += 1
        i += k

    while i < n:
        ch = text[i]
        if ch == "\n":
            advance(1)
            at_line_start = True
            continue
        if ch in " \t\r\f\v":
            advance(1)
            continue
        if text.startswith("//", i):
            advance(text.find("\n", i) - i if "\n" in text[i:] else n - i)
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            advance((end + 2 if end >= 0 else n) - i)
            continue
        if ch == "#" and at_line_start:
            # A preprocessor line, with its continuations.
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                j = k + 1
            advance(k - i)
            continue
        at_line_start = False
        if ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            yield line, col, text[i:j + 1]
            advance(j + 1 - i)
            continue
        m = re.compile(r"[A-Za-z_]\w*|\.?\d(?:[eEpP][+-]|[\w.])*").match(text, i)
        if m:
            yield line, col, m.group()
            advance(len(m.group()))
            continue
        for p in PUNCTUATORS:
            if text.startswith(p, i):
                yield line, col, p
                advance(len(p))
                break
        else:
            advance(1)


def integer_mutants(tok):
    m = INTEGER.match(tok)
    if not m:
        return []
    digits, suffix = m.groups()
    if digits.lower().startswith("0x"):
        value, fmt = int(digits, 16), (lambda v: "0x%x" % v)
    elif len(digits) > 1 and digits[0] == "0":
        value, fmt = int(digits, 8), (lambda v: "0%o" % v)
    else:
        value, fmt = int(digits), str
    out = []
    for v in (value + 1, value - 1, 0):
        if v != value and v >= 0:
            s = fmt(v) + suffix
            if s not in out:
                out.append(s)
    return out


def mutants_of_text(text):
    """(line, col, kind, from, to) of every mutant of a C text, in order."""
    toks = list(tokens(text))
    out = []
    for idx, (line, col, tok) in enumerate(toks):
        if tok in COMPARISON:
            out += [(line, col, "comparison", tok, to) for to in COMPARISON[tok]]
        elif tok in LOGICAL:
            out += [(line, col, "logical", tok, to) for to in LOGICAL[tok]]
        elif tok in ORDER:
            out += [(line, col, "order", tok, to) for to in ORDER[tok]]
        elif tok[0].isdigit():
            out += [(line, col, "constant", tok, to) for to in integer_mutants(tok)]
        elif tok in ("return", "break"):
            # The statement up to its `;` (a return's value has no `;`
            # inside, but may have nested parentheses).
            depth, j = 0, idx + 1
            while j < len(toks) and not (toks[j][2] == ";" and depth == 0):
                depth += toks[j][2] in "([{" and len(toks[j][2]) == 1
                depth -= toks[j][2] in ")]}" and len(toks[j][2]) == 1
                j += 1
            if j < len(toks) and toks[j][0] == line:
                # Only a statement on one line: the line is kept.
                stmt = text.split("\n")[line - 1][col - 1:toks[j][1]]
                out.append((line, col, "delete", stmt, "{}"))
    return out


def apply(text, line, col, frm, to):
    lines = text.split("\n")
    s = lines[line - 1]
    if s[col - 1:col - 1 + len(frm)] != frm:
        raise SystemExit(f"generate.py: line {line} column {col} is not '{frm}': {s.strip()}")
    lines[line - 1] = s[:col - 1] + to + s[col - 1 + len(frm):]
    return "\n".join(lines)


def coverage(root):
    """(glob, cases) of coverage.txt, in order: a file takes the first match."""
    rows = []
    for raw in open(os.path.join(root, "tests/mutants/coverage.txt")):
        raw = raw.strip()
        if raw and not raw.startswith("#"):
            glob, cases = raw.split(None, 1)
            rows.append((glob, cases))
    return rows


def covered_files(root):
    rows = coverage(root)
    files = {}
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    listed = out.stdout.split("\n") if out.returncode == 0 and out.stdout else None
    if listed is None:
        listed = [os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs]
    for path in sorted(listed):
        if not path.endswith((".c", ".h")):
            continue
        for glob, cases in rows:
            if fnmatch.fnmatchcase(path, glob):
                if cases != "-":
                    files[path] = cases
                break
    return files


def folder(path):
    """The folder a mutant's score is counted in."""
    for f in ("tests/sim", "tools/whatran", "instruments", "common"):
        if path.startswith(f + "/"):
            return f
    return "lessons" if re.match(r"0\d_", path) else "other"


def sample(root, seed, count):
    """COUNT mutants, shared as evenly as can be among the folders (so that
    each folder's score rests on as many as the others'), each folder's
    drawn with one random.Random(seed) from all of its mutants."""
    every = {}
    for path, cases in covered_files(root).items():
        text = open(os.path.join(root, path)).read()
        every.setdefault(folder(path), []).extend(
            (path,) + m + (cases,) for m in mutants_of_text(text))
    rng = random.Random(seed)
    names = sorted(every)
    drawn = []
    for k, name in enumerate(names):
        share = count // len(names) + (k < count % len(names))
        drawn.append(rng.sample(every[name], min(share, len(every[name]))))
    # Taken in turn from each folder: a run cut short has some of each.
    chosen = [m for i in range(max(map(len, drawn), default=0)) for d in drawn if i < len(d)
              for m in [d[i]]]
    return chosen, sum(len(v) for v in every.values())


def units(root, path):
    """The .c files whose object code the mutated file changes."""
    if path.endswith(".c"):
        return [path]
    folder = os.path.dirname(path)
    name = os.path.basename(path)
    out = []
    for d, _, fs in os.walk(os.path.join(root, os.path.dirname(folder) if folder.endswith(("/include", "/src")) else folder)):
        for f in sorted(fs):
            p = os.path.relpath(os.path.join(d, f), root)
            if p.endswith(".c") and re.search(r'#\s*include\s*"%s"' % re.escape(name), open(os.path.join(d, f)).read()):
                out.append(p)
    return sorted(out)


def compile_flags(root, scratch):
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-D_GNU_SOURCE",
             "-DHAVE_CUPTI=1", "-DHAVE_CUBLAS=1"]
    for inc in ("common/include", "instruments/include", "instruments/src", "tests/sim",
                "tests/sim/include", "tools/whatran", "tests/unit"):
        # The scratch copy first: a mutated header there is the one read.
        flags += ["-I" + os.path.join(scratch, inc), "-I" + os.path.join(root, inc)]
    nccl = os.environ.get("NCCL_HOME")
    if nccl:
        flags.append("-I" + os.path.join(nccl, "include"))
    flags += ["-idirafter", os.path.join(cuda, "include")]
    return flags


def probe(root, path, line, col, frm, to):
    """invalid, equivalent or run (the module's docstring)."""
    root = os.path.abspath(root)
    mutated = apply(open(os.path.join(root, path)).read(), line, col, frm, to)
    tus = units(root, path)
    if not tus:
        return "run"
    with tempfile.TemporaryDirectory() as scratch:
        flags = compile_flags(root, os.path.join(scratch, "tree"))
        def build(tree_text, out):
            # Each unit compiled as tree/<its path>, so that __FILE__ and
            # the local includes are the same for both versions.
            results = []
            for tu in tus:
                src = os.path.join(scratch, "tree", tu)
                os.makedirs(os.path.dirname(src), exist_ok=True)
                for rel in {tu, path}:
                    dst = os.path.join(scratch, "tree", rel)
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    open(dst, "w").write(tree_text if rel == path else open(os.path.join(root, rel)).read())
                obj = os.path.join(scratch, out + "-" + tu.replace("/", "_") + ".o")
                cc = "mpicc" if "mpi.h" in open(src).read() else "cc"
                r = subprocess.run([cc] + flags + ["-iquote", os.path.join(root, os.path.dirname(tu)),
                                                   "-c", "-o", obj, src],
                                   cwd=os.path.join(scratch, "tree"), capture_output=True)
                if r.returncode != 0:
                    return None
                results.append(open(obj, "rb").read())
            return results
        before = build(open(os.path.join(root, path)).read(), "before")
        if before is None:
            print(f"generate.py: {path} does not compile in the probe: no filter", file=sys.stderr)
            return "run"
        after = build(mutated, "after")
        if after is None:
            return "invalid"
        return "equivalent" if after == before else "run"


def selftest(root):
    """The generator against its definition: a hand-checked fixture, the
    same sample for the same seed, one token changed per mutant."""
    errors = []
    fixture = os.path.join(root, "tests/data/mutants/fixture.c")
    want = open(os.path.join(root, "tests/data/mutants/fixture.expected")).read().split("\n")
    got = ["\t".join(str(x) for x in m) for m in mutants_of_text(open(fixture).read())]
    want = [w for w in want if w]
    for w in want:
        if w not in got:
            errors.append(f"fixture.c: the mutant '{w}' is missing")
    for g in got:
        if g not in want:
            errors.append(f"fixture.c: the mutant '{g}' is not in fixture.expected")
    first, total = sample(root, 1, 100)
    if sample(root, 1, 100)[0] != first:
        errors.append("seed 1 gives two different samples")
    if sample(root, 2, 100)[0] == first:
        errors.append("seeds 1 and 2 give the same sample")
    if len(first) != min(100, total):
        errors.append(f"a sample of 100 has {len(first)} mutants")
    for path, line, col, kind, frm, to, _ in first:
        text = open(os.path.join(root, path)).read()
        before = [t[2] for t in tokens(text)]
        after = [t[2] for t in tokens(apply(text, line, col, frm, to))]
        i = 0
        while i < min(len(before), len(after)) and before[i] == after[i]:
            i += 1
        old = [t[2] for t in tokens(frm)]
        new = [t[2] for t in tokens(to)]
        if kind != "delete" and len(old) != 1:
            errors.append(f"{path}:{line}:{col}: '{frm}' is {len(old)} tokens")
        if before[:i] + new + before[i + len(old):] != after or before[i:i + len(old)] != old:
            errors.append(f"{path}:{line}:{col}: '{frm}' -> '{to}' changes more than that token"
                          " (or statement)")
    for e in errors:
        print("generate.py: " + e)
    print(f"generate.py: {len(got)} mutants of the fixture, {len(first)} of a sample of"
          f" {total} checked: {len(errors)} wrong")
    return 1 if errors else 0


def main(argv):
    root = os.path.dirname(os.path.dirname(HERE))
    if len(argv) >= 2 and argv[0] == "list":
        for path in argv[1:]:
            for m in mutants_of_text(open(path).read()):
                print("\t".join([path] + [str(x) for x in m]))
    elif len(argv) == 3 and argv[0] == "sample":
        chosen, total = sample(root, int(argv[1]), int(argv[2]))
        print(f"# {len(chosen)} of {total} mutants, seed {argv[1]}", file=sys.stderr)
        for m in chosen:
            print("\t".join(str(x) for x in m))
    elif len(argv) == 7 and argv[0] == "apply":
        src, dst, line, col, frm, to = argv[1:]
        text = apply(open(src).read(), int(line), int(col), frm, to)
        open(dst, "w").write(text)
    elif len(argv) == 7 and argv[0] == "probe":
        tree, path, line, col, frm, to = argv[1:]
        print(probe(tree, path, int(line), int(col), frm, to))
    elif argv == ["selftest"]:
        return selftest(root)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
