"""The repository's Markdown files and their fenced code blocks, for the
checks of the docs (tests/checks/check_docs.py, tests/checks/doc_blocks.py)."""
import collections
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The same checkout by the path the suite's scripts give it (SUITE_ROOT,
# without spaces: tests/lib/environment.sh), when that is this one.
if os.environ.get("SUITE_ROOT") and os.path.isdir(os.environ["SUITE_ROOT"]) \
        and os.path.samefile(os.environ["SUITE_ROOT"], ROOT):
    ROOT = os.environ["SUITE_ROOT"]

# lang: the fence's info word ("sh", "c", "" ...); lines: the block's lines;
# before: the line above the opening fence (where a marker comment goes);
# line: the opening fence's line number, from 1.
Block = collections.namedtuple("Block", "lang lines before line")


def tracked(pattern, root=ROOT):
    """The repository's files matching pattern ("*.md"): git's list in a
    checkout, else every such file outside build folders."""
    out = subprocess.run(["git", "ls-files", pattern], cwd=root, capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        # A copy of the tree whose git index is older may list removed files.
        return [p for p in out.stdout.split() if os.path.exists(os.path.join(root, p))]
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "gpu-logs")]
        found += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(pattern[1:])]
    return sorted(found)


def code_blocks(text):
    """Yields a Block for each fenced block of the Markdown text."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m:
            start = i + 1
            i = start
            while i < len(lines) and lines[i].rstrip() != "```":
                i += 1
            before = lines[start - 2] if start >= 2 else ""
            yield Block(m.group(1), lines[start:i], before, start)
        i += 1
