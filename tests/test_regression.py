"""The regression as users run it: `./h5stack run` on this machine, every stack."""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, h5stack

TUTORIAL_PER_STACK = 16  # 4 tutorial programs x {collective, independent} x {mpio, multifile}
MULTIFILE = ["multifile_workload_read", "multifile_workload_write"]  # on the posix file system here
TWIN_ONLY = ["multifile_mpiposix_original"]  # the original patch's API, on patched HDF5
SINGLETONS_CONFIG = os.path.join(ROOT, "tests", "data", "singletons_launcher.py")


@pytest.mark.parametrize("system", ["generic", "slurm-local"])
def test_run_passes_every_check_on_every_stack(stack_descriptions, system):
    """The regression as users run it, on this machine with and without Slurm."""
    if system == "slurm-local":
        h5stack("slurm", "stop", check=True)  # the run must start (and then stop) it
    proc = h5stack("run", "--system", system, "--no-setup", timeout=3600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    total, skipped = 1, 0  # filesystem_preflight (environment builtin)
    bench_ranks = [2, 4]  # multifile_bench; variants with more ranks than CPUs are skipped
    for name, desc in stack_descriptions.items():  # the table names each stack and its checks
        twin = desc.get("variant") == "multifile"
        checks = ["hdf5_tutorial_hyperslab"] + MULTIFILE + (TWIN_ONLY if twin else ["multifile_bench"])
        rows = re.findall(rf"^│ (\S+) .*│ {re.escape(name)} +│ pass +│", proc.stdout, re.M)
        bench = [] if twin else [r for r in bench_ranks if r <= os.cpu_count()]
        assert sorted(set(rows)) == sorted(c for c in checks if c != "multifile_bench" or bench), (name, rows)
        assert len(rows) == TUTORIAL_PER_STACK + len(checks) - 1 - (0 if twin else 1) + len(bench), (name, rows)
        skips = re.findall(rf"^│ multifile_bench \S+ %ranks=(\d+) +│ {re.escape(name)} +│ skip +│", proc.stdout, re.M)
        assert sorted(int(r) for r in skips) == ([] if twin else [r for r in bench_ranks if r > os.cpu_count()])
        total += len(rows)
        skipped += len(skips)
    assert f"{total} passed, {skipped} skipped, 0 failed" in proc.stdout, proc.stdout[-3000:]
    assert re.search(r"^│ filesystem_preflight %fs_kind=posix +│ builtin +│ pass", proc.stdout, re.M)
    report = re.search(r"report: (\S+);", proc.stderr).group(1)
    cases = [c for c in json.load(open(report))["runs"][-1]["testcases"] if not c["fixture"]]
    assert len(cases) == total + skipped
    assert sorted(c["result"] for c in cases) == sorted(["pass"] * total + ["skip"] * skipped)
    assert {c["system"] for c in cases} == {system}
    if system == "slurm-local":  # started for the run, stopped after it
        assert "Slurm is up" in proc.stderr and "stopped: slurmd, slurmctld, munged" in proc.stderr, proc.stderr[-2000:]


def test_run_one_stack_selects_only_its_environment(stack_descriptions):
    name = "openmpi-hdf5-2"
    proc = h5stack("run", "--no-setup", "--stack", name, "hdf5_tutorial_hyperslab", "--", "-l")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "-p ^(openmpi-hdf5-2)$" in proc.stderr


def test_wrong_launcher_starting_singletons_fails(stack_descriptions, tmp_path):
    """A launcher that starts N singletons which all exit 0 must not pass."""
    env = dict(os.environ)
    cmd = [
        "reframe", "-C", ":" + SINGLETONS_CONFIG, "--system", "generic", "-r",
        "-c", os.path.join(ROOT, "reframe-tests", "hdf5-tutorial", "hyperslab.py"),
        "-n", "hdf5_tutorial_hyperslab%pattern=by_chunk%transfer=collective%driver=mpio",
        "-p", "^mpich-hdf5-1_14$",
        "--prefix", str(tmp_path), "--perflogdir", str(tmp_path / "perflogs"),
        "--report-file", str(tmp_path / "report.json"),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode != 0, proc.stdout
    cases = json.load(open(tmp_path / "report.json"))["runs"][-1]["testcases"]
    (case,) = [c for c in cases if not c["fixture"]]
    assert case["result"] == "fail"
    assert case["fail_phase"] == "sanity"
    assert 'expected "rank R of 4"' in case["fail_reason"], case["fail_reason"]


def test_run_on_a_missing_spack_environment_says_so(tmp_path):
    proc = h5stack("run", "--spack-env", str(tmp_path / "nowhere"))
    assert proc.returncode != 0
    assert f"{tmp_path / 'nowhere' / 'spack.yaml'}: not a Spack environment" in proc.stderr, proc.stderr


def test_run_on_an_uninstalled_spack_environment_says_so(tmp_path):
    """An environment whose views were never populated (not installed) is refused up front."""
    env = tmp_path / "mpich-hdf5-1.14"
    shutil.copytree(
        os.path.join(ROOT, "environments", "mpich-hdf5-1.14"),
        env,
        ignore=shutil.ignore_patterns("view*", "spack.lock", ".spack-env"),
    )
    proc = h5stack("run", "--spack-env", str(env))
    assert proc.returncode != 0
    assert f"{env / 'view'}: no HDF5 in this view of {env} (not installed?" in proc.stderr, proc.stderr
    assert "running: reframe" not in proc.stderr  # refused before anything ran
