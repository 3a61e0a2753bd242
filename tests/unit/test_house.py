# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The harness's modules depend on each other one way: no module imports, directly or
through others, a module that imports it (imports inside functions count too), and no
room of lib/h5stack imports a room of a higher rank or a sibling of its own rank."""

import ast
import glob
import os
import re
import subprocess
import sys

from conftest import ROOT

LIB = os.path.join(ROOT, "lib", "h5stack")
SITE = os.path.join(ROOT, "site-configs")
H5VFD = os.path.join(ROOT, "python", "src", "h5vfd")


def _modules():
    """{name: path}: h5stack.<room>.<module> of lib/h5stack and h5vfd.<module> of the
    Python package (a package by the name of its folder), and the site configs' own
    modules."""
    found = {}
    for package in (LIB, H5VFD):
        for path in glob.glob(os.path.join(package, "**", "*.py"), recursive=True):
            parts = os.path.relpath(path, os.path.dirname(package))[:-3].split(os.sep)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    found |= {os.path.basename(p)[:-3]: p for p in glob.glob(os.path.join(SITE, "*.py"))}
    return found


def _imports(path, name, known):
    """The known modules that the module at path imports, anywhere in it."""
    is_package = os.path.basename(path) == "__init__.py"
    package = name if is_package else name.rsplit(".", 1)[0] if "." in name else ""
    targets = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else (node.module or "")
            if node.level and node.module:
                base = f"{base}.{node.module}"
            modules = {f"{base}.{alias.name}" for alias in node.names} & set(known)
            targets |= modules
            if len(modules) < len(node.names):  # a name of base itself: base is imported
                targets.add(base)
    return {t for t in targets if t in known and t != name}


def test_relative_imports_resolve_to_their_room(tmp_path):
    """`from ..reframe import regression` in h5stack.base.x names h5stack.reframe.regression
    (not the package h5stack.reframe: `from . import x` in a package's module is no import
    of the package); `from ..stacks import NAME` names h5stack.stacks."""
    known = {"h5stack.reframe", "h5stack.reframe.regression", "h5stack.base.paths", "h5stack.stacks"}
    code = "from ..reframe import regression\nfrom . import paths\nfrom ..stacks import NAME\n"
    path = tmp_path / "probe.py"
    path.write_text(code)
    assert _imports(str(path), "h5stack.base.probe", known) == {
        "h5stack.reframe.regression", "h5stack.base.paths", "h5stack.stacks",
    }  # fmt: skip


def test_no_module_is_imported_by_a_string_but_the_commands():
    """Imports by name (importlib, __import__) are invisible to the checks above: only the
    command line loads the command modules so."""
    found = []
    for name, path in _modules().items():
        text = open(path).read()
        if ("import_module(" in text or "__import__(" in text) and name != "h5stack.cli":
            found.append(name)
    assert not found, f"imports by string: {found}"


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
    assert graph["h5stack.cli"] and graph["h5vfd.hints"], "the import graph was not read"  # the test can fail
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: the rooms of lib/h5stack and their ranks: a room imports rooms of a lower rank only
#: (docs/architecture.md); rooms of one rank do not import each other
RANKS = {
    "base": 0,
    "stacks": 1,
    "machine": 2,
    "spack": 3,
    "reframe": 3,
    "verify": 3,
    "testsuite": 4,
    "commands": 5,
    "cli": 6,
}


def _room(name):
    """The room of h5stack.<room>[.<module>], or None for the package itself and the site configs."""
    parts = name.split(".")
    return parts[1] if parts[0] == "h5stack" and len(parts) > 1 else None


def _against_the_ranks(graph):
    """The imports ["a -> b", ...] of graph from a room to one of a higher rank or to a sibling."""
    found = []
    for name, targets in sorted(graph.items()):
        here = _room(name)
        for target in sorted(targets):
            there = _room(target)
            if here and there and here != there and RANKS[there] >= RANKS[here]:
                found.append(f"{name} ({here}, rank {RANKS[here]}) -> {target} ({there}, rank {RANKS[there]})")
    return found


def test_rooms_depend_one_way():
    known = _modules()
    rooms = {_room(name) for name in known} - {None}
    assert {"base", "stacks", "machine", "cli"} <= rooms, f"the rooms were not found: {sorted(rooms)}"
    assert not rooms - set(RANKS), f"rooms without a rank in RANKS: {sorted(rooms - set(RANKS))}"
    graph = {name: _imports(path, name, known) for name, path in known.items()}
    found = _against_the_ranks(graph)
    assert not found, "imports against the rooms' ranks:\n" + "\n".join(found)


def test_the_rank_check_finds_an_upward_import():
    graph = {"h5stack.base.ui": {"h5stack.stacks.plan"}, "h5stack.stacks.plan": {"h5stack.base.ui"}}
    assert _against_the_ranks(graph) == ["h5stack.base.ui (base, rank 0) -> h5stack.stacks.plan (stacks, rank 1)"]
    assert len(_against_the_ranks({"h5stack.spack.patches": {"h5stack.reframe.environs"}})) == 1  # siblings
    assert _against_the_ranks({"h5stack.cli": {"h5stack.machine.apt", "h5stack.base"}}) == []


def test_the_parser_needs_the_standard_library_only():
    """./h5stack parses its arguments (and prints --help) before the virtual environment
    exists: building the parser imports nothing outside the standard library and h5stack."""
    code = (
        "import sys; before = set(sys.modules); sys.path.insert(0, sys.argv[1]);"
        "from h5stack import cli; cli.build_parser();"
        "print(*sorted({m.split('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names)))"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-I", "-c", code, os.path.dirname(LIB)], capture_output=True, text=True, check=True
    )
    assert proc.stdout.split() == ["h5stack"], proc.stdout


#: words that tell how the software was made rather than what it does
HISTORY = re.compile(
    r"\b(session \d|issue #?\d+|round \d|tickets?\b|we (found|measured|added)|(later|next|previous|this) session"
    r"|CI lost|later issues?|found while (testing|trying)|(are|is) now (whole|fixed)|belongs to [\w ]+ now"
    r"|now avoided|no\s+longer\s+(fail(s|ed)?|hang(s|ed)?|hung|crash(es|ed)?|happen(s|ed)?|occur(s|red)?|break(s)?"
    r"|broke|appear(s|ed)?)\b|after\s+the\s+fix(es)?\b|added\s+since|the\s+issue's|found\s+this\s+way"
    r"|before\s?/\s?now\b"
    # a commit hash as a point in time: "at d863266", "clone of 1a63408" (hex with a letter and a digit)
    r"|(at|of|commit)\s+(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b)"
    # "## Limitations (now)"; a table that sets a "before" or "now" column beside another
    r"|\(now\)|\|[ \t]*(before|now)\b[^|\n]*\|",
    re.I,
)


def test_tracked_files_speak_of_the_software_only():
    """No history in tracked files."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 100, "no tracked files listed"
    found = []
    for name in files:
        if name == os.path.relpath(__file__, ROOT):
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
        "hung each other; now avoided",
        "a hang of that kind no longer fails the tests",
        "it no longer hangs",
        "(on mpich-hdf5-2, after the fixes above)",
        "after the fix",
        "Added since the bare run",
        "the issue's target 0.80",
        "a before/now table",
        "## Limitations (now)",
        "| multifile, the rows of a chunk one write (now) | 245–332 |",
        "| experiment | distribution | before | now |",
        "| ratio | before, tmpfs | now, tmpfs |",
        "Found this way and fixed",
        "Tried with hpc/ior at 5fcf0ba",
        "a clone of 1a63408",
        "`.ci/cold` at d863266 with debootstrap",
        "commit 95a6d3b",
    ):
        assert HISTORY.search(text), text
    for text in (
        "the session's user; an issue of HDF5",
        "a head whose run the directory no longer holds; it can no longer be opened",
        "in blocks of 1048576 bytes, 1000000 records at 2026-11-24",
        "the 8 bytes at 0x7fce5bbf2490, a checksum of 0xdeadbeef",
        "HDF5 fails some workloads only now and then",
        "| ratio | tmpfs | ext4 |",
        "the fixed cases; before the merge; what is there now",
    ):
        assert not HISTORY.search(text), text


def test_test_modules_have_unique_names():
    """A plain `pytest` from the checkout collects both tiers: two test modules of one
    name (pytest's default import mode) make it fail before it runs anything."""
    names = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, "tests")):
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                names.setdefault(name, []).append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    assert not {n: p for n, p in names.items() if len(p) > 1}
