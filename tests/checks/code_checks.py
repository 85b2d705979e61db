"""The checks of the README's tables and lists against the code, for
tests/checks/check_docs.py: the option and exit-status tables, the
lifecycle diagram, `make help`'s targets in docs/building.md, lessons that
name nothing of --bench, and the glossary."""
import glob
import os
import re

from markdown import ROOT

# The lessons' main files, by program.
MAIN = {"allreduce_sm": "01_allreduce/c/main.c", "allgather_ce": "02_allgather/c/main.c",
        "allreduce_lsa": "03_allreduce_lsa/c/main.cu", "allreduce_fast": "04_allreduce_fast/c/main.cu"}

def table(text, heading):
    """The rows (lists of cells) of the Markdown table whose first heading
    cell is `heading`."""
    rows, inside = [], False
    for line in text.split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells and cells[0] == heading:
            inside = True
        elif inside and cells is None:
            break
        elif inside and not set(cells[0]) <= set("- "):
            rows.append(cells)
    return rows


def code_options():
    """The options the programs accept: the lesson's (common/src/options.c:
    its getopt string and option table) and the instruments'
    (instruments/src/options.c: the letters and long options of its
    instruments_options table)."""
    lesson = open(os.path.join(ROOT, "common", "src", "options.c")).read()
    tools = open(os.path.join(ROOT, "instruments", "src", "options.c")).read()
    short = re.search(r'snprintf\(shorts, size, "([^"%]+)', lesson).group(1)
    short += re.search(r'instruments_option_set instruments_options = \{\s*"([^"]*)"', tools).group(1)
    opts = {"-" + c for c in short if c.isalpha()}
    for text in (lesson, tools):
        opts |= {"--" + name for name in re.findall(r'\{"([a-z-]+)",\s*\w+_argument', text)}
    return opts


def header_value(name):
    for path in glob.glob(os.path.join(ROOT, "common", "include", "*.h")) + \
            glob.glob(os.path.join(ROOT, "instruments", "include", "*.h")):
        m = re.search(r"#define " + name + r"\s+(.+)", open(path).read())
        if m:
            return re.sub(r"/\*.*", "", m.group(1)).strip()
    return None


def check_tables(problems):
    """The README's option and exit-status tables (and the --bench usage
    line of docs/bench/README.md) against the code."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    checks = 0
    options = table(readme, "option")
    # The --bench options: in the usage line of docs/bench/README.md.
    bench_doc = open(os.path.join(ROOT, "docs", "bench", "README.md")).read()
    bench = re.search(r"\./allreduce_sm --bench (.*)", bench_doc)
    documented = set()
    for row in options:
        documented |= set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", row[0]))
    bench_documented = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", bench.group(0))) if bench else set()
    accepted = code_options()
    checks += 1
    for opt in sorted(accepted - documented - bench_documented):
        problems.append(f"README.md: option {opt} is accepted by the programs (common/src/options.c, instruments/src/options.c) but not in the option table"
                        " or docs/bench/README.md's --bench usage line")
    for opt in sorted(documented - accepted):
        problems.append(f"README.md: the option table lists {opt}, which the programs do not accept")
    if not options:
        problems.append("README.md: no table with the heading 'option'")
    # The defaults and limits the table states.
    count = header_value("DEFAULT_COUNT")
    nthreads = header_value("NTHREADS_MAX")
    for key, value, where in (("--count", count, "default"), ("NTHREADS", nthreads, "up to")):
        checks += 1
        try:
            number = eval(re.sub(r"\(size_t\)", "", value), {}) if value else None
        except (SyntaxError, NameError):
            number = None
        row = next((r for r in options if key in r[0]), None)
        if number is None or row is None or f"{where} {number}" not in row[1]:
            problems.append(f"README.md: the option table's {key} row does not say '{where} {number}'"
                            " (the code's value)")
    # Exit statuses: 0, 1 and every EXIT_* code of common/ and instruments/.
    checks += 1
    codes = {"0": "EXIT_SUCCESS", "1": "EXIT_FAILURE"}
    for path in glob.glob(os.path.join(ROOT, "common", "include", "*.h")) + \
            glob.glob(os.path.join(ROOT, "instruments", "include", "*.h")):
        for name, value in re.findall(r"#define (EXIT_\w+)\s+(\d+)", open(path).read()):
            codes[value] = name
    listed = {row[0] for row in table(readme, "status")}
    for value in sorted(set(codes) - listed):
        problems.append(f"README.md: exit status {value} ({codes[value]}) is missing from the exit-status table")
    for value in sorted(listed - set(codes)):
        problems.append(f"README.md: the exit-status table lists {value}, which no EXIT_* code in common/include or instruments/include has")
    return checks


def check_lifecycle_diagram(problems):
    """The README's Mermaid lifecycle names NCCL calls in the order both
    main.c files make them ("A / B": either)."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"```mermaid\n(.*?)```", readme, re.S)
    if not m:
        problems.append("README.md: no ```mermaid block (the lifecycle diagram)")
        return 0
    steps = [item.replace(" ", "").split("/")
             for item in re.findall(r"nccl\w+(?:\s*/\s*nccl\w+)*", m.group(1))]
    checked = 0
    for prog, path in MAIN.items():
        calls = [l for l in open(os.path.join(ROOT, path)).read().split("\n") if "NCCLCHECK(" in l or "ncclComm" in l]
        code = "\n".join(calls)
        at = 0
        for alternatives in steps:
            found = [code.find(name, at) for name in alternatives]
            found = [f for f in found if f >= 0]
            checked += 1
            if not found:
                problems.append(f"README.md: the lifecycle diagram's {' / '.join(alternatives)} is not in {path}"
                                " after the steps before it")
                break
            at = min(found) + 1
    return checked


def check_make_help(problems):
    """docs/building.md names every target and variable `make help` lists
    (the top-level Makefile's help recipe)."""
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    recipe = makefile[makefile.index("\nhelp:"):]
    targets = set(re.findall(r'@echo "make ([a-z0-9_-]+)', recipe)) - {"MPI"}
    variables = set(re.findall(r"([A-Z_]+)=", re.search(r'@echo "variables: (.*)"', recipe).group(1)))
    doc = open(os.path.join(ROOT, "docs", "building.md")).read()
    for name in sorted(targets | variables):
        if f"`{name}" not in doc:
            problems.append(f"docs/building.md: `make help` lists {name}, which it does not name")
    return len(targets) + len(variables)


def check_lesson_names_no_benchmark(problems):
    """A lesson's main.c uses nothing of --bench: its descriptor names the
    collective it teaches (COLLECTIVE_*), the driver maps it to a benchmark."""
    for path in MAIN.values():
        for number, line in enumerate(open(os.path.join(ROOT, path)).read().split("\n"), 1):
            code = re.sub(r"/\*.*?\*/|^\s*\*.*", "", line)
            if re.search(r"\b(BENCH_\w+|bench_\w+|run_bench)\b", code):
                problems.append(f"{path}:{number}: the lesson names the benchmark: {line.strip()}")
    return len(MAIN)


GLOSSARY_TERMS = ["CUPTI", "NVLS", "VMM", "lesson", "[fact", "CTA", "LSA team", "LSA barrier", "session", "epoch"]


def check_glossary(problems):
    """README.md's "Words used here" table explains the words the pages
    use without explaining them each time."""
    rows = table(open(os.path.join(ROOT, "README.md")).read(), "word")
    words = " ".join(row[0] for row in rows)
    for term in GLOSSARY_TERMS:
        if term not in words:
            problems.append(f"README.md: the 'word' table does not explain {term}")
    return len(GLOSSARY_TERMS)
