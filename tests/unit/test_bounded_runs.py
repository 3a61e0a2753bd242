# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The runner of the suite checks (reframe-tests/lib/h5checks/src/bounded_runs.sh): one
verdict per run, the statuses and failure texts judged, a hang bounded and its session
ended, and a TERM to the runner ending the running program."""

import os
import signal
import subprocess
import time

from conftest import ROOT

RUNNER = os.path.join(ROOT, "reframe-tests", "lib", "h5checks", "src", "bounded_runs.sh")


def _plan(tmp_path, runs):
    plan = tmp_path / "s.plan"
    plan.write_text("".join(f"{name}\t{statuses}\t/bin/sh\t{cmd}\n" for name, statuses, cmd in runs))
    return str(plan)


def _run(tmp_path, runs, bound=2):
    proc = subprocess.run(["bash", RUNNER, "suite", str(bound), _plan(tmp_path, runs)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return [line for line in proc.stdout.splitlines() if line.startswith("suite: ")], proc


def test_each_run_gets_one_verdict_by_status_and_output(tmp_path):
    verdicts, _ = _run(tmp_path, [
        ("ok", "0", "true"),
        ("exits-3", "0", "exit 3"),
        ("exits-1-allowed", "1", "exit 1"),
        ("says-failed", "0", "echo 'Testing X FAILED'"),
        ("hdf5-error", "0", "echo 'HDF5-DIAG: Error detected'"),
        ("dir/prog", "0", "echo fine"),
    ])  # fmt: skip
    assert verdicts == [
        "suite: ok: pass",
        "suite: exits-3: fail (exit 3)",
        "suite: exits-1-allowed: pass",
        "suite: says-failed: fail (exit 0)",
        "suite: hdf5-error: fail (exit 0)",
        "suite: dir/prog: pass",
    ]
    assert (tmp_path / "dir_prog.out").read_text() == "fine\n"


def test_a_hang_is_bounded_its_session_ended_and_the_next_run_runs(tmp_path):
    marker = tmp_path / "child.pid"
    start = time.monotonic()
    verdicts, proc = _run(tmp_path, [("hangs", "0", f"sleep 300 & echo $! > {marker}; wait"), ("next", "0", "true")],
                          bound=1)  # fmt: skip
    assert verdicts == ["suite: hangs: hang (1 s)", "suite: next: pass"], proc.stdout
    assert time.monotonic() - start < 30
    child = int(marker.read_text())
    assert not os.path.exists(f"/proc/{child}") or "Z" in open(f"/proc/{child}/stat").read().split()[2]


def test_a_term_to_the_runner_ends_the_running_program(tmp_path):
    marker = tmp_path / "child.pid"
    runner = subprocess.Popen(["bash", RUNNER, "suite", "60", _plan(tmp_path, [("long", "0", f"sleep 300 & echo $! > {marker}; wait")])],
                              cwd=tmp_path, stdout=subprocess.PIPE, text=True)  # fmt: skip
    for _ in range(100):
        if marker.exists() and marker.read_text().strip():
            break
        time.sleep(0.1)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=30) == 143
    child = int(marker.read_text())
    time.sleep(0.5)
    assert not os.path.exists(f"/proc/{child}") or "Z" in open(f"/proc/{child}/stat").read().split()[2]
