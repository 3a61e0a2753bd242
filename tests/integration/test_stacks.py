# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The local stacks as a user meets them: `eval "$(./h5stack env STACK)"`, then
h5pcc and mpiexec just work, with the right MPI, HDF5 version and rank count."""

import os
import re
import subprocess

import pytest

from conftest import FULL, ROOT, TESTED, Stacks, in_stack, in_turn

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
PROGRAM = os.path.join(PROGRAMS, "hello_parallel_hdf5.c")
STACK_NAMES = TESTED


def dumped_values(h5dump_output):
    """The integers of the (one) DATA section of h5dump's output, in order."""
    data = re.search(r"DATA \{(.*?)\}", h5dump_output, re.S).group(1)
    return [int(v) for v in re.sub(r"\([\d,]+\):", "", data).replace(",", " ").split()]


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_h5pcc_and_mpiexec_just_work(stack, stack_descriptions, tmp_path):
    desc = stack_descriptions[stack]
    proc = in_stack(
        stack,
        f"h5pcc {PROGRAM} -o hello\nmpiexec -n 4 ./hello out.h5\nh5dump -d /ranks out.h5",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ranks = sorted(re.findall(r"^rank (\d+) of (\d+)$", proc.stdout, re.M))
    assert ranks == [(str(r), "4") for r in range(4)], proc.stdout
    assert f"hdf5-library: {desc['hdf5_version']}" in proc.stdout
    (mpi_line,) = re.findall(r"^mpi-library: (.*)$", proc.stdout, re.M)
    assert desc["mpi_library_signature"] in mpi_line
    # the file is read back by the stack's h5dump (Debian's 2.x one on a 2.x stack built from the crate)
    assert re.search(r"DATA \{\s*\(0\): 0, 1, 2, 3\s*\}", proc.stdout), proc.stdout


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_stack_has_parallel_hdf5_with_subfiling(stack, stack_descriptions):
    desc = stack_descriptions[stack]
    settings = open(os.path.join(desc["hdf5_prefix"], "lib", "libhdf5.settings")).read()
    assert re.search(r"Parallel HDF5:\s*(ON|yes)", settings), settings
    if desc["mpi_thread_multiple"]:
        assert re.search(r"Subfiling VFD:\s*(ON|yes)", settings), settings
    assert re.search(r"High[- ]level library:\s*(ON|yes)", settings), settings
    assert f"HDF5 Version: {desc['hdf5_version']}" in settings


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_stack_tools(stack, stack_descriptions, tmp_path):
    """h5dump/h5diff exist and are of the stack's own HDF5 version: built with it, or, for a
    2.x stack built from a source without tools/ (the crate), Debian's serial tools of that
    version (stacks.yaml `debian_tools`), which stack.json and `./h5stack list` name."""
    desc = stack_descriptions[stack]
    proc = in_stack(stack, "h5dump --version; h5diff --version; command -v h5dump mpiexec", tmp_path)
    assert proc.returncode == 0, proc.stderr
    *_, h5dump, mpiexec = proc.stdout.splitlines()
    assert mpiexec == os.path.join(desc["stack_dir"], "bin", "mpiexec")
    assert proc.stdout.count(f"Version {desc['hdf5_version']}") == 2, proc.stdout
    listed = subprocess.run([os.path.join(ROOT, "h5stack"), "list"], capture_output=True, text=True).stdout
    (line,) = [ln for ln in listed.splitlines() if ln.split()[0] == stack]
    assert "WARNING" not in line and desc["tools"]["hdf5_version"] == desc["hdf5_version"], line
    if desc["tools"]["origin"] == "build":
        assert desc["tools"]["prefix"] == desc["hdf5_prefix"]
        assert h5dump == os.path.join(desc["hdf5_prefix"], "bin", "h5dump")
        return
    assert desc["hdf5_series"] == "2" and desc["hdf5_source"].startswith("Rust crate"), desc["hdf5_source"]
    pinned, first = Stacks().series["2"]["debian_tools"], desc["tools"]["debian_packages"][0]
    assert (first["package"], first["version"]) == (pinned["package"], pinned["version"])
    assert {"h5dump", "h5diff", "h5ls", "h5stat", "h5repack", "h5copy", "h5jam"} <= set(desc["tools"]["programs"])
    assert h5dump == os.path.join(desc["stack_dir"], "bin", "h5dump")  # a wrapper of the tree's launcher
    assert {w["target"] for w in desc["wrappers"] if w["name"] == "h5dump"} == {
        os.path.join(desc["tools"]["prefix"], "bin", "h5dump")
    }
    assert f"tools: HDF5 {desc['hdf5_version']}'s, Debian's {pinned['package']} {pinned['version']}" in line, line


def write_compound_latest(stack, tmp_path, *names):
    """Files of a compound dataset written through MPI-IO on 4 ranks with
    H5Pset_libver_bounds(LATEST, LATEST) by the stack's HDF5 (programs/compound_latest.c)."""
    program = os.path.join(PROGRAMS, "compound_latest.c")
    runs = "".join(f"mpiexec -n 4 ./compound_latest {name}\n" for name in names)
    proc = in_stack(stack, f"h5pcc {program} -o compound_latest\n{runs}", tmp_path)
    assert proc.returncode == 0 and proc.stdout.count("4 ranks wrote 64 records") == len(names), (
        proc.stdout + proc.stderr
    )


def judged(stack, tmp_path):
    """h5dump -H of a.h5's compound dataset and h5diff a.h5 b.h5 by the stack's tools:
    ({tool: exit status}, what they printed)."""
    script = 'set +e\nh5dump -H -d /d043 a.h5; echo "h5dump-status: $?"\nh5diff a.h5 b.h5; echo "h5diff-status: $?"'
    proc = in_stack(stack, script, tmp_path)
    status = {k: int(v) for k, v in re.findall(r"^(h5dump|h5diff)-status: (\d+)$", proc.stdout, re.M)}
    return status, proc.stdout + proc.stderr


def reads_the_compound(text):
    return (
        re.search(r'DATASET "/d043" \{\s*DATATYPE\s+H5T_COMPOUND \{', text)
        and 'H5T_STD_I32LE "id";' in text
        and "DATASPACE  SIMPLE { ( 64 ) / ( 64 ) }" in text
    )


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_the_stacks_tools_judge_a_latest_format_compound_file(stack, tmp_path):
    """A compound dataset written through MPI-IO with H5Pset_libver_bounds(LATEST, LATEST)
    (tests/integration/programs/compound_latest.c): every stack's tools, of its own HDF5
    version (a 2.x stack built from the crate: Debian's serial 2.x tools), read it
    (h5dump -H) and find two such files equal (h5diff exit 0)."""
    write_compound_latest(stack, tmp_path, "a.h5", "b.h5")
    status, text = judged(stack, tmp_path)
    assert status == {"h5dump": 0, "h5diff": 0}, text
    assert reads_the_compound(text), text


@pytest.mark.parametrize("mpi", sorted({n.split("-hdf5-")[0] for n in STACK_NAMES}))
def test_hdf5_1_14s_tools_cannot_judge_that_2x_file(mpi, stack_descriptions, tmp_path):
    """The same 2.x file (HDF5 2.x's stack of an MPI writes it) is beyond HDF5 1.14's tools
    (those of the 1.14 stack of that MPI): h5dump fails and h5diff exits 2 (its own error,
    never "no differences"), while the 2.x stack's tools read it and find the files equal.
    Why a 2.x stack needs HDF5 2.x's tools."""
    old, new = f"{mpi}-hdf5-1.14", f"{mpi}-hdf5-2"
    if old not in stack_descriptions or new not in stack_descriptions:
        pytest.skip(f"{mpi}: no 1.14 and 2.x stacks among those tested")
    assert stack_descriptions[old]["tools"]["hdf5_version"].startswith("1.14.")
    write_compound_latest(new, tmp_path, "a.h5", "b.h5")
    status, text = judged(old, tmp_path)
    assert status["h5dump"] != 0 and status["h5diff"] == 2, text
    assert not reads_the_compound(text), text
    status, text = judged(new, tmp_path)
    assert status == {"h5dump": 0, "h5diff": 0} and reads_the_compound(text), text


@pytest.mark.parametrize("stack", [n for n in STACK_NAMES if not n.endswith("-multifile")])
def test_tools_load_plugins_of_their_own_library(stack, stack_descriptions, tmp_path):
    """HDF5_DRIVER=multifile h5dump of a multifile file (a head and its directory): a tool of the stack's own
    build loads the stack's plugin, built against the same libhdf5, so one libhdf5 is
    mapped in the process. Debian's serial tools (a 2.x stack built from the crate) load
    no plugin of the stack (built against its parallel libhdf5): they refuse the driver,
    having mapped Debian's libhdf5 only, and read the file once `h5mf merge` has
    made it an ordinary one."""
    proc = in_stack(
        stack,
        "mpiexec -n 2 h5pwrite3dc m.h5 8 2 --size 64 --chunk 32 --quiet --no-limits --driver multifile >/dev/null\n"
        "test -f m.h5 && test -d m.h5.h5mf\n"
        'set +e\nHDF5_DRIVER=multifile LD_DEBUG=files h5dump -H m.h5 2>ld.txt; echo "h5dump-status: $?"\nset -e\n'
        "grep -o 'file=[^ ]*libhdf5\\(_serial\\)\\?\\.so\\.[0-9]*' ld.txt | sed 's|.*/||; s|file=||' | sort -u\n"
        "h5mf merge -q m.h5 && h5dump -H m.h5 | grep -c 'DATASET \"data_' | sed 's/^/merged-datasets: /'",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    libraries = [line for line in proc.stdout.splitlines() if line.startswith("libhdf5")]
    assert len(libraries) == 1, f"libhdf5 libraries mapped in one h5dump: {libraries}"
    assert "merged-datasets: 2" in proc.stdout, proc.stdout[-2000:]
    if stack_descriptions[stack]["tools"]["origin"] == "build":
        assert "h5dump-status: 0" in proc.stdout and 'DATASET "data_0000"' in proc.stdout, proc.stdout[-2000:]
        assert libraries[0].startswith("libhdf5.so."), libraries
    else:
        assert "h5dump-status: 0" not in proc.stdout, proc.stdout[-2000:]
        assert libraries[0].startswith("libhdf5_serial.so."), libraries  # Debian's serial libhdf5


def test_each_stack_uses_its_own_mpi(stack_descriptions):
    signatures = {d["mpi"]: d["mpi_library_signature"] for d in stack_descriptions.values()}
    assert len(set(signatures.values())) == len(signatures), signatures
    for desc in stack_descriptions.values():
        assert desc["mpi_library_signature"] in desc["mpi_library_version"]


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_subfiling_vfd_writes_and_h5fuse_merges(stack, stack_descriptions, tmp_path):
    """The subfiling VFD works on 2 ranks, and h5fuse makes one ordinary HDF5 file of it."""
    if not stack_descriptions[stack]["mpi_thread_multiple"]:
        pytest.skip(f"{stack}: the MPI lacks MPI_THREAD_MULTIPLE, so HDF5 was built without subfiling")
    program = os.path.join(PROGRAMS, "subfiling_write.c")
    proc = in_stack(
        stack,
        f"h5pcc {program} -o subfiling_write\n"
        "mpiexec -n 2 ./subfiling_write sf.h5\n"
        "h5fuse -q -f sf.h5.subfile_*.config\n"
        "h5dump -d /ranks -w 0 sf.h5",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "subfiling: 2048 elements verified" in proc.stdout
    assert dumped_values(proc.stdout) == [i // 1024 for i in range(2048)]


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_unmodified_serial_program_with_hdf5_driver_multifile(stack, tmp_path):
    """HDF5_DRIVER=multifile: the plugin (plain stacks) or the built-in driver (twins)
    in a serial program that never calls MPI; h5mf reconstructs what it wrote."""
    program = os.path.join(PROGRAMS, "serial_default_fapl.c")
    proc = in_stack(
        stack,
        f"h5pcc {program} -o serial\n"
        "HDF5_DRIVER=multifile ./serial grid.h5\n"
        "test -f grid.h5 && test -f grid.h5.h5mf/0.offset\n"
        "h5mf merge -q grid.h5\n"
        "h5dump -d /grid -w 0 grid.h5",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert dumped_values(proc.stdout) == list(range(100))


def fake_source(tmp_path, name, version, tools):
    """A tarball with an HDF5 version and CMakeLists.txt, with or without tools/."""
    top = tmp_path / name
    (top / "src").mkdir(parents=True)
    (top / "CMakeLists.txt").write_text("project(fake C)\n")
    numbers = zip(("MAJOR", "MINOR", "RELEASE"), version.split("."))
    (top / "src" / "H5public.h").write_text("".join(f"#define H5_VERS_{k} {v}\n" for k, v in numbers))
    if tools:
        (top / "tools").mkdir()
        (top / "tools" / "CMakeLists.txt").write_text("")
    subprocess.run(["tar", "czf", f"{top}.tar.gz", "-C", str(tmp_path), name], check=True)
    return f"{top}.tar.gz"


def test_tools_are_built_from_a_full_source_and_taken_from_debian_for_the_crate(tmp_path, monkeypatch, capsys):
    """`tools: build`: a 2.x source with tools/ builds HDF5 2.x's own h5dump/h5diff (in the
    key); one without (the crate) takes Debian's serial 2.x tools of the version stacks.yaml
    pins (`debian_tools`). Neither needs a 1.14 stack."""
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    full = Stacks(tarballs={"2": fake_source(tmp_path, "full", "2.2.0", tools=True)})
    assert full.debian_tools("2") is None
    assert full.needed_hdf5([full.get("mpich-hdf5-2-multifile")]) == [("2", "mpich", None), ("2", "mpich", "multifile")]
    own = full.hdf5_component("2", full.mpis["mpich"])
    assert own.cmake_options["HDF5_BUILD_TOOLS"] == "ON" and {"bin/h5dump", "bin/h5diff"} <= set(own.required)
    assert "Debian's" not in capsys.readouterr().err
    crate = Stacks(tarballs={"2": fake_source(tmp_path, "crate", "2.2.0", tools=False)})
    tools = crate.debian_tools("2")
    pinned = crate.series["2"]["debian_tools"]
    assert (tools.package, tools.version, tools.suite) == (pinned["package"], pinned["version"], pinned["suite"])
    assert crate.needed_hdf5([crate.get("mpich-hdf5-2-multifile")]) == [
        ("2", "mpich", None),
        ("2", "mpich", "multifile"),
    ]
    without = crate.hdf5_component("2", crate.mpis["mpich"])
    assert without.cmake_options["HDF5_BUILD_TOOLS"] == "OFF" and "bin/h5dump" not in without.required
    assert without.key != own.key
    err = capsys.readouterr().err
    assert (
        "HDF5 2: the user tarball" in err
        and f"carries no tools/: the stacks take HDF5's tools from {tools.label}" in err
    )
    assert "WARNING" not in err


TWINS = [n for n in STACK_NAMES if n.endswith("-multifile")]


def test_committed_patches_are_current():
    proc = subprocess.run([os.path.join(ROOT, "h5stack"), "patches", "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_committed_spack_environments_are_current():
    """environments/ is generated from stacks.yaml: committed files match, and a change
    of stacks.yaml shows (the check is not blind)."""
    from h5stack.spack import environments as spackenvs
    from h5stack.stacks.plan import load_config

    proc = subprocess.run([os.path.join(ROOT, "h5stack"), "spack-envs", "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    config = load_config()
    config["mpis"]["othermpi"] = dict(config["mpis"]["mpich"], spack="othermpi")
    changed = spackenvs.render(config)
    assert "othermpi-hdf5-1.14" in changed and "^othermpi" in changed["matrix"] + changed["othermpi-hdf5-1.14"]


@pytest.mark.parametrize("stack", TWINS)
def test_original_mpiposix_program_runs_unchanged(stack, stack_descriptions, tmp_path):
    """Code written for the original patch: H5Pset_fapl_mpiposix, the patched HDF5's
    plain h5pcc, a multifile file on disk, read back through the same fapl (values
    checked by the program), which reconstructs it in place; libhdf5 carries the API but
    no plugin entry points."""
    assert stack_descriptions[stack]["hdf5_patches"] == [
        f"hdf5-{stack_descriptions[stack]['hdf5_series']}-multifile.patch"
    ]
    program = os.path.join(ROOT, "reframe-tests", "multifile", "src", "mpiposix_original.c")
    proc = in_stack(
        stack,
        f"h5pcc {program} -o original\n"
        "mpiexec -n 4 ./original orig.h5\n"
        "test -f orig.h5 && ! test -e orig.h5.h5mf\n"  # the read-only open merged it in place
        "h5dump -H orig.h5 | grep -q DATASET\n"
        "! nm -D $(dirname $(command -v h5pcc))/../lib/libhdf5.so | grep -q H5PLget_plugin_info\n"
        "nm -D $(dirname $(command -v h5pcc))/../lib/libhdf5.so | grep -q ' T H5Pset_fapl_mpiposix'",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mpiposix: 4 ranks wrote and read back orig.h5: ok" in proc.stdout


MULTIFILE_TESTS = os.path.join(ROOT, "packages", "hdf5-vfd-multifile", "tests")


#: every twin of the day once: at 4 ranks Open MPI's (one of its two a day: conftest.STACK_TURNS),
#: at 2 the others (MPICH's busy-polling ranks take minutes when 4 share 2 cores); --full: 2
#: and 4 everywhere
AT_4 = in_turn([s for s in TWINS if s.startswith("openmpi")])
TWIN_RUNS = [
    pytest.param(stack, ranks, id=f"{stack}-{ranks}")
    for stack in TWINS
    for ranks in (2, 4)
    if FULL or (ranks == 4) == (stack in AT_4)
]


@pytest.mark.parametrize("stack, ranks", TWIN_RUNS)
def test_workload_on_patched_twin(stack, ranks, tmp_path):
    """The package's workload comparison on a twin: the driver built into libhdf5
    (linked API and HDF5_DRIVER=multifile) against HDF5's MPI-IO driver, h5diff."""
    proc = in_stack(
        stack,
        f"h5pcc {MULTIFILE_TESTS}/mf_workload.c -o mf_workload\n"
        f"bash {MULTIFILE_TESTS}/compare_workload.sh mpiexec {ranks} $PWD/mf_workload h5mf builtin",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert f"compare_workload: {ranks} ranks: all multifile results equal the MPI-IO reference" in proc.stdout
