# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack test` runs the integration tier in parts: FIRST with BESIDE beside it in a
CPU group of the lowest weight, then the rest alone (lib/h5stack/testsuite/parts.py)."""

import contextlib
import json
import os
import re
import sys

import pytest

from h5stack.testsuite import parts


def test_the_parts_name_files_of_the_tier_once():
    named = parts.FIRST + parts.BESIDE
    assert len(set(named)) == len(named), named
    for name in named:
        assert os.path.isfile(parts.in_tier(name)), name


@pytest.mark.parametrize("name", parts.BESIDE)
def test_the_files_beside_start_nothing_the_first_share(name):
    """A file run beside others starts nothing they share: no ReFrame run, no cluster, no
    fuzzer in the cache's directory (`./h5stack run`, `cluster`, `fuzz`, `crash`), no
    cluster fixture."""
    text = open(parts.in_tier(name)).read()
    assert not re.search(r"\bh5stack\(", text), f"{name} starts ./h5stack: it cannot run beside FIRST"
    assert not re.search(r'"h5stack"\),\s*"(run|cluster|fuzz|crash|setup)"', text), name
    assert not re.search(r"def \w+\([^)]*\bcluster\b", text), f"{name} takes a cluster fixture"
    assert not re.search(r"fuzz\.Runner\(\)", text), f"{name}: a fuzz runner in the cache's fuzz/"


@pytest.mark.parametrize("name", parts.FIRST)
def test_the_first_files_select_no_benchmark(name):
    """No measurement in the first part: the CephFS layouts' has a file of its own."""
    text = open(parts.in_tier(name)).read()
    for check in ("h5pwrite3dc_layouts", "h5pwrite3dc_bench", "multifile_bench", "multifile_scale", "dsm_bench"):
        assert not re.search(rf"[\"']{check}", text), f"{name} selects {check}, a benchmark: it must run alone"


def _recording(monkeypatch, group):
    calls = []

    def pytest_run(args, full, part="", when=None):
        calls.append((part, list(args)))
        return 0

    @contextlib.contextmanager
    def cpu_group(name):
        yield group

    def with_beside(grp, first, beside, when):
        calls.append(("beside", [grp, first, beside]))
        return [0, 0]

    monkeypatch.setattr(parts.pytest_run, "run", pytest_run)
    monkeypatch.setattr(parts.background, "cpu_group", cpu_group)
    monkeypatch.setattr(parts, "with_beside", with_beside)
    return calls


def test_the_tier_runs_first_with_beside_then_the_rest_without_them(monkeypatch):
    calls = _recording(monkeypatch, "/cgroup/h5stack-beside-1")
    assert parts.run([], False) == 0
    (part, (group, first, beside)), (rest, args) = calls
    assert part == "beside" and group == "/cgroup/h5stack-beside-1"
    assert first == [parts.in_tier(f) for f in parts.FIRST] and beside == [parts.in_tier(f) for f in parts.BESIDE]
    assert rest == "rest" and args[0] == parts.INTEGRATION
    ignored = {a.split("=", 1)[1] for a in args[1:] if a.startswith("--ignore=")}
    assert len(args) == 1 + len(ignored) and ignored == set(first + beside)


@pytest.mark.parametrize(
    "extra, full, group",
    [
        (["-x"], False, "/g"),
        (["-k", "fuzz"], False, "/g"),
        (["--lf"], False, "/g"),
        ([], True, "/g"),
        ([], False, None),
    ],
)
def test_one_run_with_arguments_with_full_or_without_a_group(monkeypatch, extra, full, group):
    calls = _recording(monkeypatch, group)
    assert parts.run(extra, full) == 0
    assert calls == [("", [parts.INTEGRATION, *extra])]


@pytest.mark.parametrize(
    "codes, status", [([0, 0, 0], 0), ([0, 5, 0], 0), ([5, 5, 5], 1), ([0, 2, 1], 2), ([5, 0, 1], 1)]
)
def test_the_parts_statuses_make_one(codes, status):
    """The first failure's status; no tests collected only where no part collected any."""
    assert parts.merged(codes) == status


def test_with_beside_waits_for_both_shows_the_log_and_kills_what_is_left(monkeypatch, tmp_path, capsys):
    """The part beside runs its command in the group (here: a stand-in that prints, leaves a
    process running and fails); its status comes back as a shell's, its output is shown,
    and the process it left is killed."""
    beside_script = "import subprocess, sys; print('beside ran'); subprocess.Popen(['sleep', '300']); sys.exit(3)"
    monkeypatch.setattr(
        parts.pytest_run,
        "command",
        lambda args, full, part, when: ([sys.executable, "-c", beside_script], dict(os.environ)),
    )
    monkeypatch.setattr(parts.pytest_run, "run", lambda args, full, part, when: 0)
    monkeypatch.setattr(parts.background, "command_in", lambda group, cmd: cmd)
    killed = []
    monkeypatch.setattr(parts.background, "kill_all", lambda group: killed.append(group) or 1)
    monkeypatch.setattr(parts.paths, "sub", lambda *a, **k: str(tmp_path))
    monkeypatch.setattr(parts, "LASTFAILED", str(tmp_path / "lastfailed"))
    assert parts.with_beside("/g", ["a.py"], ["b.py"], "STAMP") == [0, 3]
    assert killed == ["/g"]
    out = capsys.readouterr()
    assert "beside ran" in out.out and f"{tmp_path}/pytest-STAMP-beside.log" in out.out
    assert "killed 1 process(es) the tests beside left running" in out.err
    os.system("pkill -f '^sleep 300$'")  # the stand-in's child: kill_all was a stand-in too


def test_the_last_failures_of_the_part_beside_replace_those_of_its_files(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    root = parts.paths.ROOT
    ours.write_text(json.dumps({"tests/integration/test_fuzz.py::a": True, "tests/integration/test_cli.py::b": True}))
    theirs.write_text(json.dumps({"tests/integration/test_fuzz.py::c": True}))
    parts.merge_lastfailed(str(theirs), [os.path.join(root, "tests/integration/test_fuzz.py")], str(ours))
    assert json.loads(ours.read_text()) == {
        "tests/integration/test_cli.py::b": True,
        "tests/integration/test_fuzz.py::c": True,
    }
    parts.merge_lastfailed(str(tmp_path / "none"), [os.path.join(root, "tests/integration/test_fuzz.py")], str(ours))
    assert json.loads(ours.read_text()) == {"tests/integration/test_cli.py::b": True}  # every one passed


@pytest.mark.parametrize("rc, status", [(0, 0), (1, 1), (-9, 137), (-15, 143)])
def test_a_death_by_signal_is_a_shells_status(rc, status):
    assert parts._status(rc) == status
