# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The harness's modules depend on each other one way: no module imports, directly or
through others, a module that imports it (imports inside functions count too)."""

import ast
import glob
import os
import re
import subprocess

from conftest import ROOT

LIB = os.path.join(ROOT, "lib", "h5stack")
SITE = os.path.join(ROOT, "site-configs")


def _modules():
    """{name: path}: h5stack.<module> of lib/h5stack, and the site configs' own modules."""
    found = {f"h5stack.{os.path.basename(p)[:-3]}": p for p in glob.glob(os.path.join(LIB, "*.py"))}
    found |= {os.path.basename(p)[:-3]: p for p in glob.glob(os.path.join(SITE, "*.py"))}
    return found


def _imports(path, name, known):
    """The known modules that the module at path imports, anywhere in it."""
    package = name.rsplit(".", 1)[0] if "." in name else ""
    targets = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package if node.level else (node.module or "")
            if node.level and node.module:
                base = f"{package}.{node.module}"
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    return {t for t in targets if t in known and t != name}


def _cycle(graph):
    """One import cycle [a, b, ..., a] of graph, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt, trail + [nxt])):
                return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_no_import_cycle():
    known = _modules()
    graph = {name: _imports(path, name, known) for name, path in known.items()}
    assert graph["h5stack.cli"], "the import graph was not read"  # the test can fail
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: words that tell how the software was made rather than what it does
HISTORY = re.compile(
    r"\b(session \d|issue #?\d+|round \d|tickets?\b|we (found|measured|added)|(later|next|previous|this) session"
    r"|CI lost|later issues?|found while (testing|trying)|(are|is) now (whole|fixed)|belongs to [\w ]+ now)",
    re.I,
)


def test_tracked_files_speak_of_the_software_only():
    """No history in tracked files (the generated patches/ carry HDF5's own text)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 100, "no tracked files listed"
    found = []
    for name in files:
        if name.startswith("patches/") or name == "tests/test_house.py":
            continue
        try:
            text = open(os.path.join(ROOT, name), encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        found += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in HISTORY.finditer(text)]
    assert not found, "history words:\n" + "\n".join(found)


def test_the_history_pattern_matches():
    numbered = ("in session {}", "issue {}", "Issue #{}", "round {}")  # filled in: no such words in this file
    for text in (
        *(t.format(n) for n, t in enumerate(numbered, 2)),
        "we found",
        "the next session",
        "of later issues",
        "found while testing it",
        "segments are now whole pages",
        "belongs to the site now",
    ):
        assert HISTORY.search(text), text
    assert not HISTORY.search("the session's user; an issue of HDF5")


def test_checks_name_no_partition_but_through_the_references_helper():
    """The partitions a performance reference is set for are named in one place
    (reframe-tests/lib/h5checks/references.py): a check that writes its own table
    for some system's partition would drift from the site configs."""
    partitions = re.compile(r"[\"'](generic|slurm-local|slurm-cluster|lustre-cluster|gpfs-cluster):\w+[\"']")
    found = []
    for path in glob.glob(os.path.join(ROOT, "reframe-tests", "*", "*.py")):
        text = open(path).read()
        found += [f"{os.path.relpath(path, ROOT)}: {m.group(0)}" for m in partitions.finditer(text)]
    assert not found, "partitions named outside h5checks/references.py:\n" + "\n".join(found)
