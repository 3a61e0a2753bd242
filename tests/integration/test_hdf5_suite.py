# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""HDF5's own tests with the multifile driver loaded as a plugin, and HDF5's parallel
tests through the DSM.

`./h5stack setup` builds HDF5's test programs beside each plain stack whose source
ships them (stacks.yaml `hdf5_test_builds`: the 1.14 stacks; the 2.x source has no
test/). Their patch (packages/hdf5-vfd-multifile/tests/hdf5-suite/) lets the test
helper h5_fileaccess() load an unknown HDF5_DRIVER name as a plugin, adds plugin
drivers to HDF5's own per-driver ctest entries (VFD-<driver>-<test>), and gives
testpar/t_vfd.c a multifile branch. Exclusions are data, each with its reason, in
exclusions.yaml there; the package README lists them.
"""

import os
import re

import pytest
import yaml

from conftest import FULL, ROOT, Stacks, in_stack, preload_library, stacks_set_up

SUITE = os.path.join(ROOT, "packages", "hdf5-vfd-multifile", "tests", "hdf5-suite")
with open(os.path.join(SUITE, "exclusions.yaml")) as _f:
    EXCLUSIONS = yaml.safe_load(_f)
DSM_TESTS = os.path.join(ROOT, "packages", "hdf5-vfd-dsm", "tests")
with open(os.path.join(DSM_TESTS, "testpar_exclusions.yaml")) as _f:
    DSM_EXCLUSIONS = yaml.safe_load(_f)


def _cases():
    stacks = Stacks()
    cases = []
    for stack in stacks_set_up():
        comp = stacks.hdf5_tests_component(stack)
        if comp:
            cases.append(pytest.param(stack.name, comp.build_dir, id=stack.name))
    return cases


CASES = _cases()


def test_some_stack_has_hdf5_test_programs():
    assert CASES, "no stack has HDF5's test programs (stacks.yaml hdf5_test_builds)"


def _listed(stack, build_dir, tmp_path):
    proc = in_stack(stack, f"ctest --test-dir {build_dir} -N -R '^VFD-multifile-'", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return re.findall(r"Test +#\d+: VFD-multifile-(\S+)", proc.stdout)


#: the serial programs (about half a minute a stack) on MPICH's stack by default (in a serial
#: program the driver initialises MPI itself); --full: on every stack that has them
SERIAL_CASES = [case for case in CASES if FULL or case.values[0].startswith("mpich")]


@pytest.mark.parametrize("stack, build_dir", SERIAL_CASES)
def test_serial_tests_with_multifile(stack, build_dir, tmp_path):
    """HDF5's serial test programs run with HDF5_DRIVER=multifile (HDF5's own
    per-driver ctest entries), all but the listed exclusions; every one passes."""
    listed = _listed(stack, build_dir, tmp_path)
    excluded = EXCLUSIONS["serial"]
    assert len(listed) > 40, f"HDF5's ctest has too few VFD-multifile tests: {listed}"
    stale = sorted(set(excluded) - set(listed))
    assert not stale, f"exclusions.yaml names tests HDF5 does not have: {stale}"
    expected = sorted(set(listed) - set(excluded))
    skip = "^VFD-multifile-(" + "|".join(re.escape(t) for t in excluded) + ")$"
    proc = in_stack(
        stack,
        f"ctest --test-dir {build_dir} -R '^VFD-multifile-' -E '{skip}' -j 2 --timeout 900 --output-on-failure",
        tmp_path,
        timeout=3600,
    )
    tail = proc.stdout[-8000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    ran = re.search(r"tests passed, (\d+) tests failed out of (\d+)", proc.stdout)
    assert ran and int(ran.group(1)) == 0 and int(ran.group(2)) == len(expected), tail


@pytest.mark.parametrize("stack, build_dir", CASES)
def test_serial_tests_really_use_the_plugin(stack, build_dir, tmp_path):
    """The driver of the VFD-multifile entries is the plugin: a test program's file
    (mtime writes it, then reads it back read-only) is still a multifile file (a head and its
    directory) when
    HDF5 keeps its files (HDF5_NOCLEANUP), since a read changes nothing by default; with
    HDF5_DRIVER_CONFIG=read=merge the read reconstructs it into an ordinary file (the
    options reach the plugin)."""
    run = f"HDF5_DRIVER=multifile HDF5_NOCLEANUP=1 srcdir={build_dir}/test/multifile {build_dir}/bin/mtime"
    proc = in_stack(stack, f"mkdir default merge\n(cd default && {run})\n(cd merge && HDF5_DRIVER_CONFIG=read=merge {run})",
                    tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "default" / "mtime.h5.h5mf" / "metafile").is_file(), sorted(os.listdir(tmp_path / "default"))
    assert (tmp_path / "merge" / "mtime.h5").is_file(), sorted(os.listdir(tmp_path / "merge"))
    assert not (tmp_path / "merge" / "mtime.h5.h5mf").exists(), sorted(os.listdir(tmp_path / "merge"))


#: 2 ranks on every stack, 4 (oversubscribing 2 cores) on Open MPI's by default: MPICH's
#: busy-polling ranks take minutes there; --full runs both counts everywhere
VFD_RUNS = [
    pytest.param(*case.values, ranks, id=f"{case.values[0]}-{ranks}")
    for case in CASES
    for ranks in (2, 4)
    if FULL or ranks == 2 or case.values[0].startswith("openmpi")
]


@pytest.mark.parametrize("stack, build_dir, ranks", VFD_RUNS)
def test_parallel_vfd_tests_with_multifile(stack, build_dir, ranks, tmp_path):
    """testpar/t_vfd.c: HDF5's vector I/O tests of the mpio driver, run again with
    the multifile driver (its multifile branch, switched on by HDF5_TEST_MULTIFILE=1)."""
    proc = in_stack(stack, f"HDF5_TEST_MULTIFILE=1 mpiexec -n {ranks} {build_dir}/bin/t_vfd", tmp_path, timeout=1800)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    assert "TESTING MULTIFILE VFD: vector I/O" in out, out[-4000:]
    section = out.split("TESTING MULTIFILE VFD: vector I/O", 1)[1]
    assert section.count("PASSED") >= 30 and "FAILED" not in section, section[-4000:]
    assert "Parallel vfd tests finished with no errors" in out


def test_readme_lists_every_exclusion():
    with open(os.path.join(ROOT, "packages", "hdf5-vfd-multifile", "README.md")) as f:
        readme = f.read()
    parallel = EXCLUSIONS["parallel"]
    names = [*EXCLUSIONS["serial"], *parallel["programs"], *(f"testphdf5 -o {t}" for t in parallel["testphdf5"])]
    for name in names:
        assert f"`{name}`" in readme, f"the package README does not list the excluded test {name}"
    for entry in [*parallel["programs"].values(), *parallel["testphdf5"].values()]:
        assert entry["class"] in parallel["classes"] and entry["reason"], entry


#: HDF5's parallel test programs through multifile, with the preload library that turns
#: their H5Pset_fapl_mpio into the driver: the plugin on a plain stack, the driver built
#: into the twin's libhdf5 (the same test programs, run on the twin's library). By
#: default the twin on Open MPI, 2 ranks: the plugin runs them in the site check
#: hdf5_testpar (reframe-tests/hdf5-testpar: MPICH's on generic, Open MPI's across the
#: nodes of slurm-cluster, a share a day; tests/integration/test_regression.py); --full:
#: both variants on both, 2 and 4 ranks.
TESTPAR_RUNS = [
    pytest.param(stack, build_dir, variant, ranks, id=f"{stack}-{variant}-{ranks}")
    for stack, build_dir in (case.values for case in CASES)
    for variant in ("plugin", "twin")
    for ranks in (2, 4)
    if FULL or (ranks == 2 and variant == "twin" and stack.startswith("openmpi"))
]


def _testpar_programs(stack, build_dir, tmp_path):
    """testpar's programs in the order of HDF5's ctest entries (MPI_TEST_<program>):
    t_pshutdown before t_prestart, t_pflush1 before t_pflush2 (each reads what the one
    before left)."""
    proc = in_stack(stack, f"ctest --test-dir {build_dir} -N -R '^MPI_TEST_'", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = re.findall(r"Test +#\d+: MPI_TEST_(t_\w+|testphdf5)$", proc.stdout, re.M)
    return list(dict.fromkeys(found))


def _run_testpar(stack, program, args, ranks, preload, work):
    """One program through multifile with the driver's default options (the head
    layout: the programs stat, open and delete the path) in the shared directory;
    (passed, output)."""
    env = f"env LD_PRELOAD={preload} HDF5_DRIVER=multifile HDF5_ALARM_SECONDS=900"
    script = f"timeout 900 mpiexec -n {ranks} {env} {program} {args} < /dev/null"
    proc = in_stack(stack, script, work, timeout=1000)
    out = proc.stdout + proc.stderr
    if os.path.basename(program) == "t_pflush1":
        # it always exits 1 (_exit, its files left unclosed); rank 0's "PASSED" can be lost
        # when the launcher ends it on the other rank's exit first. Its files are judged by
        # t_pflush2, which runs next and reads them back.
        return proc.returncode == 1 and "FAILED" not in out and "HDF5-DIAG" not in out, out
    return proc.returncode == 0, out


@pytest.mark.parametrize("stack, build_dir, variant, ranks", TESTPAR_RUNS)
def test_parallel_programs_through_multifile(stack, build_dir, variant, ranks, stacks, stack_descriptions,
                                             tmp_path):  # fmt: skip
    """HDF5's testpar programs (testphdf5 and every t_* program) through multifile, all
    but the exclusions of exclusions.yaml (`parallel`, each with its reason and class;
    those of `full_only` run with --full): every one that runs must pass, none may hang
    (a program gets 900 s)."""
    parallel = EXCLUSIONS["parallel"]
    programs = _testpar_programs(stack, build_dir, tmp_path)
    assert "testphdf5" in programs and len(programs) > 10, programs
    stale = sorted(set(parallel["programs"]) - set(programs) | set(parallel["full_only"]) - set(programs))
    assert not stale, f"exclusions.yaml names testpar programs HDF5 does not have: {stale}"
    run_in = f"{stack}-multifile" if variant == "twin" else stack
    preload = preload_library(stacks, stack_descriptions, stack)
    skip = " ".join(f"-x {t}" for t in parallel["testphdf5"])
    left_out = {**parallel["programs"], **({} if FULL else parallel["full_only"])}
    failed = []
    for name in (p for p in programs if p not in left_out):
        args = skip if name == "testphdf5" else ""
        ok, out = _run_testpar(run_in, os.path.join(build_dir, "bin", name), args, ranks, preload, tmp_path)
        if not ok:
            failed.append(f"{name} {args}:\n{out[-3000:]}")
    assert not failed, "\n\n".join(failed)


#: HDF5's testpar programs through the DSM, each the client job of a fresh server job
#: (client_job.sh: separate jobs, which Debian's Open MPI 4 joins through an ompi-server;
#: MPICH 4.0.2 cannot open ports), the plugin through the preload library: the Open MPI
#: stacks with HDF5's test programs, 2 ranks; --full: 2 and 4
DSM_RUNS = [
    pytest.param(stack, build_dir, ranks, id=f"{stack}-{ranks}")
    for stack, build_dir in (case.values for case in CASES)
    for ranks in (2, 4)
    if stack.startswith("openmpi") and (FULL or ranks == 2)
]


def test_some_stack_runs_testpar_through_the_dsm():
    assert DSM_RUNS, "no Open MPI stack has HDF5's test programs (stacks.yaml hdf5_test_builds)"


@pytest.mark.parametrize("stack, build_dir, ranks", DSM_RUNS)
def test_parallel_programs_through_the_dsm(stack, build_dir, ranks, stacks, stack_descriptions, tmp_path):
    """HDF5's testpar programs through the DSM (a 2 GiB server job each), all but the
    exclusions of the DSM's testpar_exclusions.yaml (each with its class and reason):
    every one that runs must pass and leave its server job well; testphdf5 must really
    have used the DSM (its server job served its files)."""
    programs = _testpar_programs(stack, build_dir, tmp_path)
    excluded = DSM_EXCLUSIONS["programs"]
    stale = sorted(set(excluded) - set(programs))
    assert not stale, f"testpar_exclusions.yaml names testpar programs HDF5 does not have: {stale}"
    preload = preload_library(stacks, stack_descriptions, stack)
    client_job = os.path.join(DSM_TESTS, "client_job.sh")
    skip = " ".join(f"-x {t}" for t in DSM_EXCLUSIONS["testphdf5"])
    failed, served = [], {}
    for name in (p for p in programs if p not in excluded):
        args = skip if name == "testphdf5" else ""
        program = os.path.join(build_dir, "bin", name)
        script = f"{client_job} mpiexec h5dsm-server 2g 900 {ranks} env LD_PRELOAD={preload} {program} {args}"
        proc = in_stack(stack, script, tmp_path, timeout=2000)
        out = proc.stdout + proc.stderr
        if proc.returncode != 0 or ("client_job: ok" not in out and "opened no DSM file" not in out):
            failed.append(f"{name} {args} (exit {proc.returncode}):\n{out[-3000:]}")
        found = re.search(r"client_job: ok \(the server job served (\d+) file", out)
        served[name] = int(found.group(1)) if found else 0
    assert not failed, "\n\n".join(failed)
    assert served["testphdf5"] > 100, f"testphdf5's files did not go through the DSM: {served}"


def test_dsm_readme_lists_every_exclusion():
    with open(os.path.join(ROOT, "packages", "hdf5-vfd-dsm", "README.md")) as f:
        readme = f.read()
    excluded = [*DSM_EXCLUSIONS["programs"], *(f"testphdf5 -o {t}" for t in DSM_EXCLUSIONS["testphdf5"])]
    for name in excluded:
        assert f"`{name}`" in readme, f"the DSM README does not list the excluded test {name}"
    for entry in [*DSM_EXCLUSIONS["programs"].values(), *DSM_EXCLUSIONS["testphdf5"].values()]:
        assert entry["class"] in DSM_EXCLUSIONS["classes"] and entry["reason"], entry


@pytest.mark.parametrize("stack, build_dir", CASES)
def test_testphdf5_with_the_stacks_mpi(stack, build_dir):
    """HDF5's main parallel test (testpar/testphdf5, MPI-IO driver) as HDF5's own ctest
    entries run it, with the stack's MPI. With Debian's MPICH 4.0.2 this is the evidence
    behind dropping the builtin Spack recipe's conflict with MPICH 4.0.0-4.0.3
    (spack-repo/README.md)."""
    proc = in_stack(stack, f"ctest --test-dir {build_dir} -R 'testphdf5' --timeout 1200 --output-on-failure", ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    assert re.search(r"100% tests passed, 0 tests failed out of (\d+)", out), out[-3000:]
    assert int(re.search(r"out of (\d+)", out).group(1)) >= 14, out[-3000:]  # testphdf5 and its split-out cases
