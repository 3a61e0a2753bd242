# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The fuzzer's bounded run of an MPI job: after its time every process of the job's
session goes, also those in process groups of their own (as Open MPI puts its ranks)."""

import os
import time

from h5stack.verify import fuzz


def _alive(marker):
    """The command lines that name marker, from /proc (a bare machine has no ps)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        if marker in args:
            found.append(args)
    return found


def test_a_job_past_its_time_is_killed_with_its_ranks(monkeypatch, tmp_path):
    monkeypatch.setattr(fuzz, "TIMEOUT", 1)
    marker = f"h5stack-bounded-{os.getpid()}"
    rank = f"import os, time; os.setpgid(0, 0); time.sleep(300)  # {marker}"
    start = time.monotonic()
    result = fuzz.bounded(["bash", "-c", f"python3 -c '{rank}' & python3 -c '{rank}' & wait"], tmp_path, None)
    assert result is None and time.monotonic() - start < 30
    for _ in range(50):
        if not _alive(marker):
            break
        time.sleep(0.1)
    assert not _alive(marker), "ranks in process groups of their own outlived the job's time"


def test_a_job_that_ends_gives_its_status_and_output(tmp_path):
    result = fuzz.bounded(["bash", "-c", "echo out; echo err >&2; exit 3"], tmp_path, None)
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
