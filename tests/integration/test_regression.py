# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The regression as users run it: `./h5stack run` on this machine, every stack."""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import FULL, ROOT, SELECTED_STACKS, h5stack, in_stack, in_turn, turn
from h5stack.machine import images
from h5stack.reframe.faults import FAULT_CHECKS
from h5stack.reframe.regression import SCHEDULERS

TUTORIAL_VARIANTS = [  # 4 tutorial programs x {collective, independent} x {mpio, multifile}
    f"%pattern={p} %transfer={t} %driver={d}"
    for p in ("by_row", "by_col", "by_pattern", "by_chunk")
    for t in ("collective", "independent")
    for d in ("mpio", "multifile")
]
MULTIFILE = ["multifile_workload_read", "multifile_workload_write"]  # on the posix file system here
TWIN_ONLY = ["multifile_mpiposix_original"]  # the original patch's API, on patched HDF5
SINGLETONS_CONFIG = os.path.join(ROOT, "tests", "data", "singletons_launcher.py")


H5PWRITE3DC_VERIFY = ["mpio", "mpio-independent", "multifile", "subfiling"]  # drivers, every stack
H5PWRITE3DC_BENCH = ["mpio", "multifile"]
DSM_DISTRIBUTIONS = ["linear", "mask:1m", "block-cyclic:4k", "random-block:1k:7"]  # dsm_roundtrip, every stack


#: a known fault that shows by chance: an expected failure where it shows, a pass where not
EITHER = "pass|xfail"


def expected_rows(desc, job_cpus=None):
    """{(check, variant text or ''): 'pass' | 'skip' | 'xfail' | EITHER} for one local stack on this machine
    (job_cpus: the CPUs a job of the system's partition has, JOB_CPUS; a node's by default)."""
    job_cpus = job_cpus or os.cpu_count()
    twin = desc.get("variant") == "multifile"
    rows = {("hdf5_tutorial_hyperslab", v): "pass" for v in TUTORIAL_VARIANTS}
    rows |= {(c, ""): "pass" for c in MULTIFILE + (TWIN_ONLY if twin else [])}
    if not twin:  # multifile_bench needs the package; more ranks than CPUs are skipped
        rows |= {("multifile_bench", f"%ranks={r}"): "pass" if r <= os.cpu_count() else "skip" for r in (2, 4)}
        rows |= {("multifile_scale", f"%ranks={r}"): "pass" for r in (1, 2, 4)}  # oversubscribed too
    rows |= {("h5pwrite3dc_verify", f"%fs_kind=posix %driver={d}"): "pass" for d in H5PWRITE3DC_VERIFY}
    rows |= {("h5pwrite3dc_bench", f"%driver={d}"): "pass" for d in H5PWRITE3DC_BENCH}
    # h5perf only where the stack's tools are built with its own HDF5 (Debian's serial
    # tools, those of a 2.x stack built from the crate, have none)
    rows[("h5perf_check", "")] = "pass" if desc["tools"]["origin"] == "build" else "skip"
    # the DSM in one MPMD job (mpirun ... : ..., srun --multi-prog), every stack
    rows |= {("dsm_roundtrip", f"%distribution={d}"): "pass" for d in DSM_DISTRIBUTIONS}
    rows[("dsm_bench", "")] = "pass"
    rows[("dsm_h5pwrite3dc", "")] = "pass"  # h5pwrite3dc --driver dsm
    rows[("h5py_workload", "")] = "pass"  # parallel h5py with h5vfd: every local stack has it
    # netCDF-C through the preload library: the stacks netCDF-C is built into (plain ones)
    if any(c["name"] == "netcdf-c" for c in desc.get("clients", [])):
        rows[("netcdf_reopen", "")] = "pass"
    # the MPI-IO faults, on the posix file system here: Debian's Open MPI writes process
    # memory into never-written gaps and leaves a collective read's tail unread (stacks.yaml
    # names both as known: expected failures)
    rows[("mpiio_faults", "%probe=lost-writes")] = "pass"
    rows[("mpiio_faults", "%probe=never-written")] = "xfail" if desc["mpi"] == "openmpi" else "pass"
    rows[("mpiio_faults", "%probe=unread-tail")] = "xfail" if desc["mpi"] == "openmpi" else "pass"
    # HDF5's own faults, on the posix file system here: HDF5 1.14.6 and 2.2.0 fail a collective operation after independent
    # reads that left the metadata caches different (stacks.yaml names it for both series)
    rows[("hdf5_faults", "%fs_kind=posix %probe=coll-md-cache")] = "xfail"
    # the fill of a new contiguous dataset races earlier writes: every run with Debian's
    # MPICH, by chance elsewhere (stacks.yaml names it for both series)
    rows[("hdf5_faults", "%fs_kind=posix %probe=contig-fill")] = "xfail" if desc["mpi"] == "mpich" else EITHER
    # scaleoffset on int8 chunks that span the whole range does not read back with 1.14.6
    # (stacks.yaml names it for that series); 2.2.0 reads it back
    rows[("hdf5_faults", "%fs_kind=posix %probe=scaleoffset-int")] = (
        "xfail" if desc["hdf5_series"] == "1.14" else "pass"
    )
    # so does a chunk filtered by deflate, then nbit, that deflate cannot shrink
    rows[("hdf5_faults", "%fs_kind=posix %probe=nbit-after-deflate")] = (
        "xfail" if desc["hdf5_series"] == "1.14" else "pass"
    )
    # a collective read of a filtered dataset without chunks, closes in different orders:
    # neither shows here (the checks stay for the HDF5 versions where they do)
    rows[("hdf5_faults", "%fs_kind=posix %probe=filtered-empty-read")] = "pass"
    rows[("hdf5_faults", "%fs_kind=posix %probe=close-order")] = "pass"
    # a shrink of a deflated dataset fails on the ranks that read the edge chunk after
    # another rank's close wrote it: every run with Debian's MPICH (stacks.yaml names it for
    # both series), at times with Open MPI; a loaded machine can hide it (a rank 0.3 s late)
    rows[("hdf5_faults", "%fs_kind=posix %probe=shrink-filtered")] = EITHER
    rows[("filesystem_locking", "%fs_kind=posix")] = "pass"  # a finding, never a failure
    # HDF5's own parallel tests and netCDF-C's, where the stack has them (the plain 1.14
    # stacks): through MPI-IO and multifile; more ranks than CPUs skipped (SUITE_CHECKS)
    for driver in SUITE_DRIVERS if desc.get("hdf5_testpar") else []:
        rows |= {("hdf5_testpar", f"%driver={driver} %ranks={r}"): "pass" if r <= job_cpus else "skip"
                 for r in (2, 4)}  # fmt: skip
    for driver in SUITE_DRIVERS if any(c.get("source_dir") for c in desc.get("clients", [])) else []:
        rows[("netcdf_partests", f"%driver={driver}")] = "pass"
    # the Apptainer image of the stack's MPI, in both run models (the plain 1.14 stack's
    # environment: the host MPI of the image); skipped where the image is not built
    if not twin and desc["hdf5_series"] == "1.14":
        image = "pass" if os.path.exists(images.image_link(desc["mpi"])) else "skip"
        for model in ("inside", "hybrid"):
            rows[("container_tutorial", f"%model={model}")] = image
            for app in ("hdf5-1.14", "hdf5-2"):
                rows[("container_h5pwrite3dc", f"%model={model} %image_stack={app}")] = image
    # IOR checks: skipped where no ior is found (see reframe-tests/ior)
    return rows


def selected_rows(rows, checks):
    """The rows of `expected_rows` that `./h5stack run CHECK...` selects, as ReFrame's -n and
    -x select: a regular expression searched in the display name without its spaces
    (`name%param=value...`, the parameters in the check's order); all without checks."""
    if not checks:
        return rows
    chosen = {}
    for selector in checks:
        pattern = re.compile(selector)
        matched = {
            (check, variant): result
            for (check, variant), result in rows.items()
            if pattern.search(check + variant.replace(" ", ""))
        }
        assert matched, f"the selector {selector!r} matches no check"
        chosen |= matched
    return chosen


def _as_expected(expected, check, variant, result):
    """The result as `expected` names it: EITHER for a pass or an expected failure of an
    EITHER row (its variant's parameters among the found variant's)."""
    words = variant.split()
    either = any(c == check and r == EITHER and all(p in words for p in v.split()) for (c, v), r in expected.items())
    return EITHER if either and result in ("pass", "xfail") else result


def _found_rows(summary, stack):
    """(check, variant, result) of the run's JSON summary (`./h5stack run --json`) for one environment."""
    return [(c["check"], c["variant"], c["result"]) for c in summary["cases"] if c["stack"] == stack]


def _run(tmp_path, *args, timeout=3600, env=None):
    """`./h5stack run --json ...`: (the process, its summary)."""
    path = tmp_path / "summary.json"
    proc = h5stack("run", "--json", str(path), *args, timeout=timeout, env=env)
    assert path.exists(), (proc.stdout + proc.stderr)[-5000:]
    return proc, json.load(open(path))


#: slurm-local runs one test at a time (about 2 minutes a stack): its own parts (sbatch, srun
#: with MPICH's pmi2, srun --multi-prog) on MPICH's 2.x twin; Open MPI under srun (pmix)
#: and the containers started by srun run on slurm-cluster. The images of both MPIs run:
#: MPICH's on generic (conftest.SELECTED_STACKS), Open MPI's on slurm-cluster; --full:
#: every stack
SLURM_STACKS = ["mpich-hdf5-2-multifile"]
#: ... and there the checks whose start Slurm changes (sbatch, srun with pmi2 for one
#: tutorial program through MPI-IO and multifile, its transfer in turn by the day; the
#: twin's original API, multifile's workload, parallel h5py, the DSM's srun --multi-prog
#: with one distribution in turn); every other kind and variant runs on generic and across
#: the nodes of slurm-cluster (--full: every check)
SLURM_CHECKS = [
    *(f"hdf5_tutorial_hyperslab%pattern=by_chunk%transfer={t}" for t in in_turn(["collective", "independent"])),
    "multifile_mpiposix_original",
    "multifile_workload",
    "h5py_workload",
    *(f"dsm_roundtrip%distribution={d}" for d in in_turn(DSM_DISTRIBUTIONS)),
    "dsm_h5pwrite3dc",
]
#: HDF5's fault probes in two halves: on `generic` each of SELECTED_STACKS runs one, the
#: other stack the other, swapped by the day; across the nodes of slurm-cluster one half a
#: run, in turn (--full: every probe everywhere)
HDF5_FAULT_HALVES = (
    ["coll-md-cache", "scaleoffset-int", "close-order", "shrink-filtered"],
    ["contig-fill", "nbit-after-deflate", "filtered-empty-read"],
)


#: the checks that run another project's test suite (HDF5's testpar, netCDF-C's parallel
#: tests): through one driver on `generic` (MPICH's 1.14 stack), the other across the nodes
#: of slurm-cluster (Open MPI's), swapped every day; half of each suite's programs, the
#: other half every other day, so that within four days each MPI runs every program
#: through each driver (--full: both drivers on every stack, every program of the default
#: lists)
SUITE_CHECKS = ["hdf5_testpar", "netcdf_partests"]
SUITE_DRIVERS = ["mpio", "multifile"]
SUITE_SHARE = "1/1" if FULL else f"{turn(4) // 2 + 1}/2"
SUITE_SHARES = [a for c in SUITE_CHECKS for a in ("-S", f"{c}.share={SUITE_SHARE}")]


def suite_selectors(driver):
    """The selectors of the suite checks' variants through `driver`."""
    return [f"{c}%driver={driver}" for c in SUITE_CHECKS]


def hdf5_fault_selectors(probes):
    """The selectors of the hdf5_faults variants of probes on the local scratch (posix)."""
    return [f"hdf5_faults%fs_kind=posix%probe={p}" for p in probes]


#: slurm-cluster (every job on 2 of 4 emulated nodes): every check kind across nodes, on the
#: MPI it runs there (its site config leaves Debian's MPICH out, and says why)
CLUSTER_STACKS = ["openmpi-hdf5-1.14"]
#: ... on the local scratch, whatever this shell's H5STACK_CLUSTER_FS says
CLUSTER_ENV = dict(os.environ, H5STACK_CLUSTER_FS="local")
#: ... on the local scratch the kinds that its CephFS does not run in the default selection;
#: the tutorial's programs, h5pwrite3dc and h5py run across nodes on the CephFS
#: (tests/integration/test_cluster.py, CEPHFS_CHECKS; --full: every check here too)
CLUSTER_CHECKS = [
    "container_tutorial",
    # the application image of one HDF5 series a run, in turn (generic runs both)
    *(
        f"container_h5pwrite3dc%model={m}%image_stack={s}"
        for m in ("inside", "hybrid")
        for s in in_turn(["hdf5-1.14", "hdf5-2"])
    ),
    "mpiio_faults",
    *hdf5_fault_selectors(HDF5_FAULT_HALVES[turn(2)]),
    "filesystem_locking",
    *suite_selectors(SUITE_DRIVERS[(turn(2) + 1) % 2]),
    "multifile_workload",
    "multifile_bench",
    "multifile_scale",
    "h5perf_check",
    *(f"dsm_roundtrip%distribution={d}" for d in in_turn(DSM_DISTRIBUTIONS)),  # one a run, in turn
    "dsm_bench",
    "dsm_h5pwrite3dc",
]


#: the benchmarks on `generic`: each on one of SELECTED_STACKS, in turn over them (sorted by
#: name), as the packages' ctests (--full: each on every stack)
BENCHMARKS = ["dsm_bench", "h5pwrite3dc_bench", "multifile_bench", "multifile_scale"]


def others_benchmarks(stack):
    """The benchmarks whose turn on `generic` is another stack's than this one of
    SELECTED_STACKS: its run leaves them out (ReFrame's -x), and runs every other check."""
    return [b for i, b in enumerate(sorted(BENCHMARKS)) if SELECTED_STACKS[i % len(SELECTED_STACKS)] != stack]


#: ... and across the nodes of slurm-cluster (Open MPI's, CLUSTER_CHECKS): one of them a
#: run, in turn by the day (--full: all)
CLUSTER_BENCHMARKS = ["dsm_bench", "multifile_bench", "multifile_scale"]


#: the variants of a check that SELECTED_STACKS share on `generic`: each stack one half, the
#: other stack the other, swapped by the day (selectors: name%param=value..., in the order
#: of the listed name; a value selects every value it begins: "mpio", "mpio-independent")
GENERIC_HALVES = [
    (["hdf5_tutorial_hyperslab%pattern=by_row", "hdf5_tutorial_hyperslab%pattern=by_col"],
     ["hdf5_tutorial_hyperslab%pattern=by_pattern", "hdf5_tutorial_hyperslab%pattern=by_chunk"]),
    (["h5pwrite3dc_verify%fs_kind=posix%driver=mpio", "h5pwrite3dc_verify%fs_kind=posix%driver=mpio-independent"],
     ["h5pwrite3dc_verify%fs_kind=posix%driver=multifile", "h5pwrite3dc_verify%fs_kind=posix%driver=subfiling"]),
    (["dsm_roundtrip%distribution=linear", "dsm_roundtrip%distribution=mask:1m"],
     ["dsm_roundtrip%distribution=block-cyclic:4k", "dsm_roundtrip%distribution=random-block:1k:7"]),
    tuple(hdf5_fault_selectors(half) for half in HDF5_FAULT_HALVES),
]  # fmt: skip


def left_out_of(system, stack, desc=None):
    """What a run of the system (of one stack, or all; desc: that stack's description)
    leaves out, as names or selectors: the benchmarks whose turn it is not; on `generic`
    the other stack's halves and the suite checks' driver of the cluster (--full: none)."""
    # testpar on 4 ranks of slurm-cluster: its emulated nodes share this machine's cores, and
    # oversubscribed ranks busy-wait (a site's real nodes run it; --full too leaves it out)
    testpar4 = [r"hdf5_testpar%driver=\w+%ranks=4"] if system == "slurm-cluster" else []
    if FULL:
        return testpar4
    if system == "slurm-cluster":
        return [b for b in CLUSTER_BENCHMARKS if b not in in_turn(CLUSTER_BENCHMARKS)] + testpar4
    if not stack:
        return []
    other = (SELECTED_STACKS.index(stack) + turn(2)) % 2  # the half this stack leaves
    checks = {check for check, _ in expected_rows(desc)} if desc else set()
    # the suite checks the stack has, through the driver the cluster runs them with today
    suites = [s for s in suite_selectors(SUITE_DRIVERS[(turn(2) + 1) % 2]) if s.split("%")[0] in checks]
    return others_benchmarks(stack) + [s for halves in GENERIC_HALVES for s in halves[other]] + suites


def excluded_args(left_out):
    """ReFrame's -x for each name (the check and every variant) or selector left out."""
    return [a for s in left_out for a in ("-x", s if "%" in s else f"^{s}(%|$)")]


def _expected(desc, checks, left_out, job_cpus=None):
    """The rows a run expects of a stack: the checks it names (all without names), less
    those it leaves out."""
    rows = selected_rows(expected_rows(desc, job_cpus), checks)
    names = [s for s in left_out if "%" not in s]
    selectors = [s for s in left_out if "%" in s]
    gone = selected_rows(rows, selectors) if selectors else {}
    return {k: v for k, v in rows.items() if k[0] not in names and k not in gone}


#: the CPUs a job has where not a node's: slurm-cluster's jobs ask for 2 of its nodes
JOB_CPUS = {"slurm-cluster": 2 * os.cpu_count()}
#: (system, the stack of a run of its own or None): generic one stack at a time by default
REGRESSION_RUNS = [("generic", None)] if FULL else [("generic", s) for s in SELECTED_STACKS]
REGRESSION_RUNS += [("slurm-local", None), ("slurm-cluster", None)]


@pytest.mark.parametrize("system, stack", REGRESSION_RUNS, ids=[s + (f"-{n}" if n else "") for s, n in REGRESSION_RUNS])
def test_run_passes_every_check_on_every_stack(stack_descriptions, system, stack, tmp_path):
    """The regression as users run it, on this machine with and without Slurm, and across
    the nodes of the emulated cluster."""
    names = {"slurm-local": [] if FULL else SLURM_STACKS, "slurm-cluster": CLUSTER_STACKS}.get(
        system, [stack] if stack else []
    )
    if system in SCHEDULERS:  # the command of each is named like its module (./h5stack slurm, cluster)
        h5stack(SCHEDULERS[system], "stop", check=True)  # the run must start (and then stop) it
    checks = {"slurm-local": SLURM_CHECKS, "slurm-cluster": CLUSTER_CHECKS}.get(system, []) if not FULL else []
    left_out = left_out_of(system, stack, stack_descriptions.get(stack))
    excluded = excluded_args(left_out)
    stacks = [a for n in names for a in ("--stack", n)]
    proc, summary = _run(tmp_path, "--system", system, "--no-setup", *stacks, *checks, "--", *excluded, *SUITE_SHARES,
                         env=CLUSTER_ENV)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    descriptions = {n: d for n, d in stack_descriptions.items() if not names or n in names}
    expectations = {n: _expected(d, checks, left_out, JOB_CPUS.get(system)) for n, d in descriptions.items()}
    total, skipped, xfailed = (0 if names else 1), 0, 0  # filesystem_preflight (builtin) when every stack runs
    for name, expected in expectations.items():  # the table names each stack and its checks
        found = [r for r in _found_rows(summary, name) if not r[0].startswith("ior_")]
        want = {}
        for (check, variant), result in expected.items():
            key = (check, result)
            want.setdefault(key, []).append(variant)
        got = {}
        for check, variant, result in found:
            got.setdefault((check, _as_expected(expected, check, variant, result)), []).append(variant)
        assert {k: len(v) for k, v in got.items()} == {k: len(v) for k, v in want.items()}, (name, found)
        ior = [r for r in _found_rows(summary, name) if r[0].startswith("ior_")]
        total += sum(r[2] == "pass" for r in found + ior)
        skipped += sum(r[2] == "skip" for r in found + ior)
        xfailed += sum(r[2] == "xfail" for r in found + ior)
    assert summary["totals"] == {"passed": total, "skipped": skipped, "xfailed": xfailed, "failed": 0}, summary[
        "totals"
    ]
    assert summary["status"] == 0 and summary["system"] == system
    if not names:
        assert ("filesystem_preflight", "%fs_kind=posix", "pass") in _found_rows(summary, "builtin")
    # what is broken where: a row per fault check's case, its verdict the case's result
    fault_cases = sorted(
        (c["stack"], c["check"], c["variant"], c["result"]) for c in summary["cases"] if c["check"] in FAULT_CHECKS
    )
    rows = sorted(
        (r["stack"], r["check"], f"%fs_kind={r['fs_kind']} %probe={r['probe']}", r["verdict"])
        for r in summary["faults"]
    )
    assert rows == fault_cases, (rows, fault_cases)
    report = summary["reframe_report"]
    cases = [c for c in json.load(open(report))["runs"][-1]["testcases"] if not c["fixture"]]
    assert len(cases) == total + skipped + xfailed
    # the right variants passed or were skipped (the report, since the table wraps long names)
    for name, expected in expectations.items():
        mine = [(c["display_name"].split(), c["result"]) for c in cases if c["environ"] == name.replace(".", "_")]
        for (check, variant), result in expected.items():
            if variant.startswith("%"):
                parts = variant.split()
                assert any(
                    words[0] == check and all(p in words for p in parts) and r in result.split("|") for words, r in mine
                ), (
                    name,
                    check,
                    variant,
                    result,
                    sorted(" ".join(w) for w, _ in mine),
                )
    assert sorted(c["result"] for c in cases) == sorted(["pass"] * total + ["skip"] * skipped + ["xfail"] * xfailed)
    assert {c["system"] for c in cases} == {system}
    if system in SCHEDULERS:  # stopped before the run, so the run started it; and stopped it after
        status = h5stack(SCHEDULERS[system], "status")
        assert status.returncode == 3, (status.returncode, status.stdout + status.stderr)


@pytest.mark.skipif(FULL, reason="the full run on generic covers it (every stack and the builtin environment)")
def test_filesystem_preflight_on_generic(tmp_path):
    """The file systems' pre-flight (the builtin environment), which a run restricted to
    some stacks leaves out."""
    proc, summary = _run(tmp_path, "--no-setup", "filesystem_preflight", timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    assert ("filesystem_preflight", "%fs_kind=posix", "pass") in _found_rows(summary, "builtin"), summary


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


def _failing_check_cases(tmp_path, check_file, environ, settings, where="True"):
    """The test cases (no fixtures) of reframe-tests/CHECK_FILE's checks (those for which the
    expression WHERE holds, `-E`) on `generic` in one environment with `-S` settings, run by
    ReFrame itself, which must exit non-zero."""
    name = os.path.basename(check_file)[:-3]
    cmd = [
        "reframe", "-C", ":" + os.path.join(ROOT, "site-configs", "config.py"), "--system", "generic", "-r",
        "-c", os.path.join(ROOT, "reframe-tests", check_file), "-n", f"^{name}", "-E", where, "-p", f"^{environ}$",
        *(a for setting in settings for a in ("-S", setting)),
        "--prefix", str(tmp_path), "--perflogdir", str(tmp_path / "perflogs"),
        "--report-file", str(tmp_path / "report.json"),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode != 0, proc.stdout[-3000:]
    return [c for c in json.load(open(tmp_path / "report.json"))["runs"][-1]["testcases"] if not c["fixture"]]


def test_mpiio_faults_fail_when_the_fault_shows(stack_descriptions, tmp_path):
    """The MPI-IO fault checks fail in sanity when their fault shows (the program shows
    each on purpose: MPIIO_FAULTS_TEST_INJECT), each naming what it saw."""
    settings = ["mpiio_faults.inject=lost-writes,never-written,unread-tail", "mpiio_faults.runs=2"]
    cases = _failing_check_cases(tmp_path, "mpiio-faults/mpiio_faults.py", "mpich-hdf5-1_14", settings)
    results = {re.search(r"%probe=(\S+)", c["display_name"]).group(1): c for c in cases}
    assert {p: (c["result"], c["fail_phase"]) for p, c in results.items()} == {
        "lost-writes": ("fail", "sanity"),
        "never-written": ("fail", "sanity"),
        "unread-tail": ("fail", "sanity"),
    }, [(c["display_name"], c["fail_reason"]) for c in cases]
    tail = results["unread-tail"]["fail_reason"]
    assert "not the file's in 1 of 2 runs (mpiio" in tail and "in 1 of 2 runs (hdf5" in tail, tail
    lost, memory = results["lost-writes"]["fail_reason"], results["never-written"]["fail_reason"]
    assert "this MPI-IO shows the fault (lost-writes)" in lost and "bytes lost in 1 of 2 runs (mpiio" in lost, lost
    assert "bytes lost in 1 of 2 runs (hdf5" in lost, lost
    assert "process memory in never-written bytes in 1 of 2 runs (collective" in memory, memory


def test_hdf5_faults_fail_where_the_fault_shows_unless_known(tmp_path):
    """The HDF5 fault check judged without its known-fault entry (accept_known=no) fails in
    sanity naming the fault; its control run passed (the sanity's other assertions hold).
    The probes that show their fault in every run on HDF5 1.14.6 (contig-fill shows on Open
    MPI by chance)."""
    cases = _failing_check_cases(
        tmp_path, "hdf5-faults/hdf5_faults.py", "openmpi-hdf5-1_14", ["hdf5_faults.accept_known=no"],
        where="probe in ('coll-md-cache', 'scaleoffset-int')",
    )  # fmt: skip
    results = {re.search(r"%probe=(\S+)", c["display_name"]).group(1): c for c in cases}
    assert {p: (c["result"], c["fail_phase"]) for p, c in results.items()} == {
        "coll-md-cache": ("fail", "sanity"),
        "scaleoffset-int": ("fail", "sanity"),
    }, cases
    reason = results["coll-md-cache"]["fail_reason"]
    assert "this HDF5 shows the fault (coll-md-cache)" in reason and "failed on 2 of 3 ranks" in reason, reason
    reason = results["scaleoffset-int"]["fail_reason"]
    assert "this HDF5 shows the fault (scaleoffset-int)" in reason and "failed on 3 of 3 ranks" in reason, reason


def test_the_hdf5_fault_halves_name_every_probe():
    """Each probe of hdf5_faults is in one half of HDF5_FAULT_HALVES: none left out of
    the default selection, none run twice."""
    text = open(os.path.join(ROOT, "reframe-tests", "hdf5-faults", "hdf5_faults.py")).read()
    probes = re.search(r"^PROBES = \[(.*?)\]$", text, re.M | re.S).group(1)
    probes = re.findall(r'"([^"]+)"', probes)
    halves = [p for half in HDF5_FAULT_HALVES for p in half]
    assert sorted(halves) == sorted(probes), (halves, probes)


def test_a_hdf5_probe_that_hangs_ends_with_a_fault_verdict(tmp_path):
    """hdf5_faults never hangs: a step that does not return within --timeout (rank 0
    stalled on purpose before the delete) is the verdict FAULT naming the step, and the
    job ends non-zero well before the launcher's own timeout."""
    program = os.path.join(ROOT, "reframe-tests", "hdf5-faults", "src", "hdf5_faults.c")
    script = (
        f"h5pcc -O1 -o hdf5_faults {program}\n"
        "HDF5_FAULTS_TEST_STALL=30 timeout 25 mpiexec -n 3 ./hdf5_faults coll-md-cache f.h5 --control --timeout 2"
    )
    proc = in_stack("openmpi-hdf5-1.14", script, cwd=tmp_path)
    assert proc.returncode not in (0, 124), (proc.returncode, proc.stdout[-2000:] + proc.stderr[-2000:])
    verdict = "coll-md-cache: verdict: FAULT: the collective H5Ldelete did not return within the timeout on rank 0"
    assert verdict in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_a_run_in_which_no_check_ran_fails():
    """A check name that matches nothing (a typo) is no pass."""
    proc = h5stack("run", "--no-setup", "--stack", "mpich-hdf5-1.14", "no_such_check")
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "error: no check ran (no_such_check)" in proc.stderr, proc.stderr[-2000:]


def test_the_locking_finding_names_each_lock_and_the_advice(tmp_path):
    """filesystem_locking reports every finding as 0 or 1 and an advice; on this machine's
    local file system locks work and HDF5 opens files with them."""
    path = tmp_path / "summary.json"
    proc = h5stack("run", "--no-setup", "--stack", "openmpi-hdf5-2", "--json", str(path), "filesystem_locking")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (case,) = json.load(open(path))["cases"]
    report = json.load(open(json.load(open(path))["reframe_report"]))["runs"][-1]["testcases"]
    values = {k.rsplit(":", 1)[-1]: v[0] for c in report if not c["fixture"] for k, v in c["perfvalues"].items()}
    assert values == dict.fromkeys(
        ["flock", "flock_excludes", "fcntl", "fcntl_excludes", "hdf5_as_set", "hdf5_off", "hdf5_best_effort"], 1
    ), values
    assert case["result"] == "pass", case


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
