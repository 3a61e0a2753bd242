# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack test` runs the integration tier in parts: FIRST with BESIDE beside it in a
CPU group of a tenth of a process's weight, then the rest alone (lib/h5stack/testsuite/parts.py)."""

import contextlib
import glob
import json
import os
import re
import signal
import subprocess
import sys

import pytest

from h5stack.testsuite import parts, pytest_run


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
    assert not re.search(r"fuzz\.Runner\((?![^)]*workroot)", text), f"{name}: a fuzz runner in the cache's fuzz/"


def _benchmarks():
    """The checks of reframe-tests/ tagged `performance`, and those that inherit the tag."""
    found, bases = set(), {}
    for path in glob.glob(os.path.join(parts.paths.ROOT, "reframe-tests", "*", "*.py")):
        text = open(path).read()
        for name, base, body in re.findall(r"^class (\w+)\((.*?)\):\n(.*?)(?=^\S|\Z)", text, re.M | re.S):
            bases[name] = re.findall(r"\w+", base)
            if re.search(r"^    tags = \{[^}]*\"performance\"", body, re.M):
                found.add(name)
    for _ in bases:
        found |= {n for n, b in bases.items() if found & set(b)}
    return found


def test_the_benchmarks_are_found():
    found = _benchmarks()
    assert {"h5pwrite3dc_layouts", "h5pwrite3dc_bench", "multifile_bench", "dsm_bench", "h5perf_check"} <= found, found
    assert {"ior_write", "ior_read"} <= found and not found & {"h5pwrite3dc_verify", "dsm_roundtrip"}, found


@pytest.mark.parametrize("name", parts.FIRST)
def test_the_first_files_select_no_benchmark(name):
    """No measurement in the first part (the CephFS layouts' has a file of its own): no
    benchmark named in its code, no selection by the tag."""
    text = open(parts.in_tier(name)).read()
    for check in _benchmarks():
        assert not re.search(rf"[\"']{check}", text), f"{name} selects {check}, a benchmark: it must run alone"
    assert not re.search(r"[\"']performance[\"']", text), f"{name} selects the benchmarks by their tag"


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
    assert pytest_run.status(codes) == status


def test_with_beside_waits_for_both_shows_the_log_and_kills_what_is_left(monkeypatch, tmp_path, capsys):
    """The part beside runs its command in the group (here: a stand-in that prints, leaves a
    process running and fails); its status comes back as a shell's, its output is shown,
    and what it left is killed."""
    child = tmp_path / "child.pid"
    beside = f"import subprocess, sys; print('beside ran'); open({str(child)!r}, 'w').write(str(subprocess.Popen(['sleep', '300']).pid)); sys.exit(3)"
    monkeypatch.setattr(
        parts.pytest_run, "command", lambda args, full, part, when: ([sys.executable, "-c", beside], dict(os.environ))
    )
    monkeypatch.setattr(parts.pytest_run, "run", lambda args, full, part, when: 0)
    monkeypatch.setattr(parts.background, "command_in", lambda group, cmd: cmd)
    killed = []

    def kill_all(group):  # a stand-in: the child is this test's own
        killed.append(group)
        os.kill(int(child.read_text()), signal.SIGKILL)
        return 1

    monkeypatch.setattr(parts.background, "kill_all", kill_all)
    monkeypatch.setattr(parts.paths, "sub", lambda *a, **k: str(tmp_path))
    monkeypatch.setattr(parts, "LASTFAILED", str(tmp_path / "lastfailed"))
    try:
        assert parts.with_beside("/g", ["a.py"], ["b.py"], "STAMP") == [0, 3]
    finally:
        if child.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child.read_text()), signal.SIGKILL)
    assert killed == ["/g"]
    out = capsys.readouterr()
    assert "beside ran" in out.out and f"{tmp_path}/pytest-STAMP-beside.log" in out.out
    assert "killed 1 process(es) the tests beside left running" in out.err
    assert not (tmp_path / "lastfailed").exists()  # nothing failed before, nothing to keep


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


def _python(code):
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


WAITS_FOR_SIGINT = (
    "import sys, time\ntry:\n    print('up', flush=True); time.sleep(60)\nexcept KeyboardInterrupt:\n    sys.exit(2)"
)


def test_a_run_ended_by_an_exception_gets_sigint_and_ends_as_it_would():
    proc = _python(WAITS_FOR_SIGINT)
    assert proc.stdout.readline() == "up\n"
    pytest_run.end(proc, SystemExit(143))  # SIGTERM turned into an exception
    assert proc.returncode == 2  # its own ending, not SIGKILL


def test_after_ctrl_c_a_run_is_not_sent_another_and_is_killed_after_its_time(monkeypatch):
    monkeypatch.setattr(pytest_run, "ENDING", 0.5)
    proc = _python(WAITS_FOR_SIGINT)  # Ctrl-C reached the terminal's group, not this child
    assert proc.stdout.readline() == "up\n"
    pytest_run.end(proc, KeyboardInterrupt())
    assert proc.returncode == -signal.SIGKILL
