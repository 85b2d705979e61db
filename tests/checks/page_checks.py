"""The checks of what the pages say to users, for tests/checks/check_docs.py: no
words about how the project was made, no typed result without its record,
links that work (and, from a lesson or common/, that say where a page of
the suite lives), a paragraph on where each page's results were run, and citations of
recorded facts as recorded."""
import os
import re

from markdown import ROOT, tracked


# Words about how the project was made, which a user cannot act on.
INTERNAL_TEXT = [
    (r"\.\./shared/", "a path outside the repository"),
    (r"\.gpu/|\buntracked\b", "a helper script that is not in the repository"),
    (r"\b[Ii]ssues? \d+\b", "an issue number"),
    (r"\bcommits? [0-9a-f]{7,40}\b", "a commit hash"),
    (r"\b(earlier|this|last|previous) session\b", "work history"),
    (r"\bthe (CPU|GPU|H200) machine\b", "the machines the project was made on"),
]

# Words a user's page does not leave unexplained (pages outside tests/; a
# word inside a file name is fine): the project's own jargon, and names of
# NVIDIA's tools and features that README.md's "Words used here" explains.
JARGON = [
    (r"(?<![\w/.-])oracles?\b(?!/)", "jargon: say what is computed (the expected output)"),
    (r"(?<![\w/.-])hermetic\b", "jargon: say what the run kept out"),
    (r"\bthe driver\b", "'the driver' reads as NVIDIA's: name run_example (common/src/driver.c)"),
    (r"\bCI\b", "'CI': name what runs (.ci/run)"),
]


def check_users_text(problems, files=None):
    """Pages and recordings speak to users (see INTERNAL_TEXT), and user
    pages (.md outside tests/) explain their words (JARGON)."""
    given = files is not None  # files named on the command line: every rule
    if files is None:
        files = [f for f in tracked("*.md") + tracked("*.txt")
                 if not f.startswith("tests/data/") and (f.endswith(".md") or f.startswith("docs/"))]
    checked = 0
    for doc in files:
        rules = INTERNAL_TEXT
        if given or (doc.endswith(".md") and not doc.startswith("tests/")):
            rules = INTERNAL_TEXT + JARGON
        for num, line in enumerate(open(os.path.join(ROOT, doc)), 1):
            for pattern, what in rules:
                checked += 1
                m = re.search(pattern, line)
                if m:
                    problems.append(f"{doc}:{num}: {what}: '{m.group(0)}'")
    return checked


def check_typed_counts(problems, files=None):
    """A page that gives a result of the suite ("N passed") links the
    recorded run it comes from (docs/checks/) on the same line."""
    checked = 0
    if files is None:
        files = [f for f in tracked("*.md") if not f.startswith("tests/data/")]
    for doc in files:
        for num, line in enumerate(open(os.path.join(ROOT, doc)), 1):
            if re.search(r"\b\d[\d,]* passed\b", line):
                checked += 1
                if "checks/" not in line:
                    problems.append(f"{doc}:{num}: a result of the suite typed without the record"
                                    " it comes from (link docs/checks/...)")
    return checked


# A lesson folder is copied with common/ alone (common/README.md): a link
# from there to the rest of the suite names the page by its path in the
# suite, so that the copy still says where the page lives.
COPIED_WITH = {"01_allreduce": "common", "02_allgather": "common", "common": None}


def check_links(problems, docs=None):
    """Every relative link of a tracked .md file names a file or folder
    that exists; one from a lesson or common/ to the rest of the suite is
    written [its/path](...). docs: (path in the tree, file to read) pairs."""
    checked = 0
    for doc, source in docs or [(d, os.path.join(ROOT, d)) for d in tracked("*.md")
                                if not d.startswith("tests/data/")]:
        top = doc.split("/")[0]
        for text, link in re.findall(r"\[([^\]]*)\]\(([^)\s]+)\)", open(source).read()):
            path = link.split("#")[0]
            if not path or re.match(r"^[a-z]+:", link):
                continue
            checked += 1
            target = os.path.normpath(os.path.join(os.path.dirname(doc), path))
            if not docs and not os.path.exists(os.path.join(ROOT, target)):
                problems.append(f"{doc}: the link ({link}) names nothing that exists")
            if top in COPIED_WITH and target.split("/")[0] not in (top, COPIED_WITH[top]) \
                    and text.strip("`") != target:
                problems.append(f"{doc}: the link [{text}]({link}) leaves what is copied with the "
                                f"lesson: write it [{target}]({link}), so that a copy says where it lives")
    return checked


def where_run_pages():
    """The pages that show results: README.md and the pages of docs/."""
    return [d for d in tracked("*.md") if d == "README.md"
            or (d.startswith("docs/") and d.count("/") == 1)
            or re.match(r"^docs/[^/]+/README\.md$", d)]


def check_where_run(problems, files=None):
    """Every page that shows results says where they were run, in a
    paragraph that starts **Where this was run.**"""
    for doc in files or where_run_pages():
        if not re.search(r"^\*\*Where this was run\.\*\* \S", open(os.path.join(ROOT, doc)).read(), re.M):
            problems.append(f"{doc}: no paragraph '**Where this was run.** ...' (the GPU, the "
                            "NCCL and the ranks of its samples and numbers, or the simulation)")
    return len(files or where_run_pages())


CITATION = re.compile(r"\[fact ([\w.=-]+) @ ([\w.-]+\.tsv) = ([^\]]+)\]")


def fact_outcome(row):
    """The row of a docs/facts file as citations state it."""
    result = row["result"].split(" (run with")[0]
    text = f"{result}, window {row['window']}"
    return text + (f"; {row['detail']}" if row.get("detail") else "")


def check_fact_citations(problems):
    """Every [fact ID @ FILE = OUTCOME] cites a recorded fact as recorded."""
    checked = 0
    for doc in tracked("*.md") + tracked("*.c") + tracked("*.h"):
        text = open(os.path.join(ROOT, doc)).read()
        for m in CITATION.finditer(" ".join(text.split())):
            checked += 1
            fact, name, stated = m.group(1), m.group(2), m.group(3).strip()
            path = os.path.join(ROOT, "docs", "facts", name)
            if not os.path.exists(path):
                problems.append(f"{doc}: cites {name}, which docs/facts does not have")
                continue
            lines = open(path).read().rstrip("\n").split("\n")
            header = lines[0].split("\t")
            rows = {r["id"]: r for r in (dict(zip(header, l.split("\t"))) for l in lines[1:])}
            if fact not in rows:
                problems.append(f"{doc}: cites fact {fact}, which {name} does not record")
            elif not fact_outcome(rows[fact]).startswith(stated):
                problems.append(f"{doc}: says fact {fact} in {name} is '{stated}'; it recorded"
                                f" '{fact_outcome(rows[fact])}'")
    return checked
