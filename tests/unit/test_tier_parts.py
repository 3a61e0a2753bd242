# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack test` runs the integration tier in parts: FIRST with BESIDE beside it in a
CPU group of the lowest weight, then the rest alone (lib/h5stack/testsuite.py)."""

import contextlib
import os
import re

import pytest

from h5stack import testsuite


def test_the_parts_name_files_of_the_tier_once():
    named = testsuite.FIRST + testsuite.BESIDE
    assert len(set(named)) == len(named), named
    for name in named:
        assert os.path.isfile(testsuite._in_tier(name)), name


@pytest.mark.parametrize("name", testsuite.BESIDE)
def test_the_files_beside_start_no_run_and_no_cluster(name):
    """A file run beside others starts nothing they share: no `./h5stack` command (a
    ReFrame run, the cluster), no cluster fixture."""
    text = open(testsuite._in_tier(name)).read()
    assert not re.search(r"\bh5stack\(", text), f"{name} starts ./h5stack: it cannot run beside FIRST"
    assert not re.search(r"def \w+\([^)]*\bcluster\b", text), f"{name} takes a cluster fixture"


def _recording(monkeypatch, group):
    calls = []

    def pytest_run(args, full, part=""):
        calls.append((part, list(args)))
        return 0

    @contextlib.contextmanager
    def cpu_group(name):
        yield group

    def with_beside(grp, first, beside, extra, full):
        calls.append(("beside", [grp, *first, "|", *beside, *extra]))
        return [0, 0]

    monkeypatch.setattr(testsuite, "_pytest", pytest_run)
    monkeypatch.setattr(testsuite.background, "cpu_group", cpu_group)
    monkeypatch.setattr(testsuite, "_with_beside", with_beside)
    return calls


def test_the_tier_runs_first_and_beside_then_the_rest_without_them(monkeypatch):
    calls = _recording(monkeypatch, "/cgroup/h5stack-beside-1")
    assert testsuite._integration(["-k", "x"], False) == 0
    (part, beside), (rest, args) = calls
    assert part == "beside" and beside[0] == "/cgroup/h5stack-beside-1" and beside[-2:] == ["-k", "x"]
    assert rest == "rest" and args[0] == testsuite.INTEGRATION and args[-2:] == ["-k", "x"]
    ignored = {a.split("=", 1)[1] for a in args if a.startswith("--ignore=")}
    assert ignored == {testsuite._in_tier(f) for f in testsuite.FIRST + testsuite.BESIDE}


@pytest.mark.parametrize("extra, group", [(["-x"], "/g"), (["--lf"], "/g"), (["--junitxml=a.xml"], "/g"), ([], None)])
def test_one_run_where_the_arguments_span_a_session_or_no_group_is_made(monkeypatch, extra, group):
    calls = _recording(monkeypatch, group)
    assert testsuite._integration(extra, False) == 0
    assert calls == [("", [testsuite.INTEGRATION, *extra])]


@pytest.mark.parametrize(
    "codes, status", [([0, 0, 0], 0), ([0, 5, 0], 0), ([5, 5, 5], 1), ([0, 2, 1], 2), ([5, 0, 1], 1)]
)
def test_the_parts_statuses_make_one(codes, status):
    """The first failure's status; no tests collected only where no part collected any."""
    assert testsuite._merged(codes) == status
