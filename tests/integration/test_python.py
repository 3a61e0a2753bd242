# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Python in every stack: parallel h5py and mpi4py built against the stack, the drivers
selected by name from h5py (package h5vfd, python/), h5mf's operations as functions.

The workload (python/examples/workload.py) is written through MPI-IO and through each
driver on 4 ranks; the results must equal MPI-IO's (h5diff silent, and byte for byte
once merged), read back in place by another number of ranks and serially."""

import os
import re
import sys

import pytest
import yaml

from conftest import CORES, FULL, ROOT, TESTED, in_stack, in_turn, stacks_under_test, turn

WORKLOAD = os.path.join(ROOT, "python", "examples", "workload.py")
STACK_NAMES = TESTED
H5PY_FAILURES = os.path.join(ROOT, "tests", "data", "h5py_multifile_failures.yaml")


def run(stack, script, tmp_path, timeout=600):
    proc = in_stack(stack, script, cwd=tmp_path, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_parallel_h5py_and_mpi4py_are_the_stacks_own(stack, stack_descriptions, tmp_path):
    desc = stack_descriptions[stack]
    out = run(
        stack,
        "mpiexec -n 2 python3 -c 'from mpi4py import MPI; import h5py, h5vfd\n"
        'me = ["py", MPI.COMM_WORLD.size, MPI.Get_library_version().split()[0], h5py.version.hdf5_version,'
        " h5py.get_config().mpi, h5vfd._libhdf5.path()]\n"
        "for line in MPI.COMM_WORLD.gather(me) or []: print(*line)'",
        tmp_path,
    )
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("py ")]
    assert len(lines) == 2, out
    for _, size, mpi, hdf5, parallel, lib in lines:
        assert size == "2" and parallel == "True", out
        assert mpi.lower().startswith({"mpich": "mpich", "openmpi": "open"}[desc["mpi"]]), out
        assert hdf5 == desc["hdf5_version"], out
        assert os.path.realpath(lib).startswith(desc["hdf5_prefix"] + "/"), f"{lib} is not the stack's libhdf5"


#: every MPI and HDF5 series: of the day's stacks (conftest.STACK_TURNS, every other day)
#: the plain ones or the twins, so that four days run every stack (--full: all)
EACH_DRIVER_STACKS = [s.name for s in stacks_under_test() if FULL or bool(s.variant) == (turn(4) // 2 == 1)]


@pytest.mark.parametrize("stack", EACH_DRIVER_STACKS)
def test_the_workload_through_each_driver_equals_mpi_io(stack, tmp_path):
    """MPI-IO reference; multifile: merged equal to it (h5diff, bytes), read in place by 3
    ranks and serially; the DSM (2 servers, 4 clients of an MPMD job): its dump equal."""
    script = f"""
        W={WORKLOAD}
        mpiexec -n 4 python3 $W ref.h5 --driver mpio
        mpiexec -n 4 python3 $W mf.h5 --driver multifile --config checksums=on
        python3 -c "import h5vfd; print(h5vfd.verify('mf.h5')); print(h5vfd.merge('mf.h5', 'merged.h5'))"
        h5diff ref.h5 merged.h5 > diff.txt; test ! -s diff.txt
        cmp ref.h5 merged.h5 && echo "bytes: equal"
        mpiexec -n 3 python3 $W mf.h5 --verify --writer-ranks 4 --driver multifile
        python3 $W merged.h5 --verify --writer-ranks 4
        mpiexec -n 2 h5dsm-server --size 16m --action 'dump:dsm_{{step}}.h5' : -n 4 python3 $W mem.h5 --driver dsm
        h5diff ref.h5 dsm_0.h5 > diff.txt; test ! -s diff.txt
        python3 $W dsm_0.h5 --verify --writer-ranks 4
        test ! -e mem.h5 && echo "dsm: nothing on disk"
    """
    out = run(stack, script, tmp_path)
    assert "mf.h5: ok: 4 ranks" in out and "checksums verified" in out, out
    assert "bytes: equal" in out and "dsm: nothing on disk" in out, out
    assert out.count("every value of mf.h5 checked") == 3, out
    assert "every value of merged.h5 checked" in out and "every value of dsm_0.h5 checked" in out, out


def test_h5vfd_functions_and_their_errors(tmp_path):
    """info as a dataclass, merge with a progress callback, in place; errors carry h5mf's
    message; a directory h5py cannot open gets a reason from h5vfd.open, and h5py's own
    IsADirectoryError on a multifile directory (layout=dir) points to h5vfd.open and
    is_multifile. A head (the default layout) is a multifile file to is_multifile, open
    and info; h5py with another driver opens the small HDF5 file it is, with a
    MultifileHeadWarning naming the directory."""
    stack = "mpich-hdf5-1.14"
    script = f"""
        mpiexec -n 2 python3 {WORKLOAD} mf.h5 --driver multifile --config layout=dir
        mpiexec -n 2 python3 {WORKLOAD} hd.h5 --driver multifile
        mkdir plain
        python3 - <<'EOF'
import h5py, h5vfd, warnings
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    with h5vfd.open("hd.h5") as f:
        print("in place warned", len(seen))
        with h5py.File("hd.h5", "r", driver="sec2") as alone:
            print("head", h5vfd.is_multifile("hd.h5"), f.attrs["writer_ranks"], h5vfd.info("hd.h5").ranks,
                  list(alone.attrs), len(alone), h5vfd.is_multifile("hd.h5.h5mf"))
print("sec2 warned", [w.category.__name__ for w in seen], "hd.h5.h5mf" in str(seen[-1].message))
i = h5vfd.info("mf.h5")
print("info", i.ranks, i.state, i.complete, i.committed_epochs > 0, len(i.per_rank), i.per_rank[1].rank)
with h5vfd.open("mf.h5") as f:
    print("open", f.attrs["writer_ranks"], h5vfd.is_multifile("mf.h5"))
try:
    h5vfd.open("plain")
except h5vfd.DriverError as e:
    print("dir", e)
for call in (lambda: h5vfd.info("nothing"), lambda: h5vfd.merge("mf.h5", "mf.h5/inside.h5")):
    try:
        call()
    except h5vfd.H5mfError as e:
        print("error", e.returncode, e.message)
try:
    h5py.File("mf.h5", "r")  # h5py's default driver: a directory
except IsADirectoryError as e:
    print("hint", "h5vfd.open('mf.h5')" in str(e), "h5vfd.is_multifile(path)" in str(e))
seen = []
print("merged", h5vfd.merge("mf.h5", progress=lambda *a: seen.append(a)))
print("progress", seen[-1][0], seen[-1][1] == seen[-1][2] > 0)
print("is_hdf5", h5py.is_hdf5("mf.h5"), h5vfd.is_multifile("mf.h5"))
EOF
    """
    out = run(stack, script, tmp_path)
    assert "head True 2 2 ['multifile'] 0 True" in out, out
    assert "in place warned 0" in out and "sec2 warned ['MultifileHeadWarning'] True" in out, out
    assert "info 2 complete True True 2 1" in out, out
    assert "open 2 True" in out, out  # read in place: still a directory
    assert "hint True True" in out, out
    assert "dir plain: a directory, but not a multifile directory (no metafile)" in out, out
    assert "error 1 h5mf: nothing/metafile: No such file or directory" in out, out
    assert "inside the directory mf.h5 being merged" in out, out
    assert "merged mf.h5: reconstructed mf.h5" in out and "progress merging True" in out, out
    assert "is_hdf5 True False" in out, out  # merged in place: an ordinary file now


def test_a_switch_takes_only_true_or_false(tmp_path):
    """force="no" is not False: every switch of h5vfd's functions refuses anything but a
    bool with a TypeError naming it, as do processes (an int) and progress (a function)
    and the drivers' config (a string), before h5mf runs: nothing is overwritten."""
    script = f"""
        mpiexec -n 2 python3 {WORKLOAD} mf.h5 --driver multifile
        echo precious > merged.h5
        python3 - <<'EOF'
import h5py, h5vfd
from mpi4py import MPI
calls = {{
    "verify partial": lambda: h5vfd.verify("mf.h5", partial="no"),
    "verify processes": lambda: h5vfd.verify("mf.h5", processes=True),
    "merge partial": lambda: h5vfd.merge("mf.h5", "merged.h5", partial="no"),
    "merge force": lambda: h5vfd.merge("mf.h5", "merged.h5", force="no"),
    "merge verify": lambda: h5vfd.merge("mf.h5", "merged.h5", force=True, verify=0),
    "merge processes": lambda: h5vfd.merge("mf.h5", "merged.h5", force=True, processes="2"),
    "merge progress": lambda: h5vfd.merge("mf.h5", "merged.h5", force=True, progress="yes"),
    "driver config": lambda: h5py.File("x.h5", "w", driver="multifile", comm=MPI.COMM_WORLD, config=True),
}}
for name, call in calls.items():
    try:
        call()
        print(name, "accepted")
    except Exception as e:
        print(name, type(e).__name__, e)
EOF
        python3 -c "print('merged.h5:', open('merged.h5', 'rb').read(8))"
    """
    out = run("mpich-hdf5-1.14", script, tmp_path)
    for name, expected in (
        ("verify partial", "partial must be True or False, not 'no'"),
        ("verify processes", "processes must be an int, not True"),
        ("merge partial", "partial must be True or False, not 'no'"),
        ("merge force", "force must be True or False, not 'no'"),
        ("merge verify", "verify must be True or False, not 0"),
        ("merge processes", "processes must be an int, not '2'"),
        ("merge progress", "progress must be a function or None, not 'yes'"),
        ("driver config", "config must be a string or None, not True"),
    ):
        assert f"{name} TypeError {expected}\n" in out, out
    assert "merged.h5: b'precious'" in out and not (tmp_path / "x.h5").exists(), out


def test_appending_continues_with_any_number_of_ranks_and_gives_the_reason(tmp_path):
    """Mode 'a' on a multifile directory written by 2 ranks continues it from 1 rank and
    from 3 (another number of ranks, as with MPI-IO), and a new name is still created. On
    a directory whose writer did not close it, h5py tries to open it read-write, then to
    create it; the error is the driver's reason for the first, not its refusal of the
    second (it exists)."""
    script = f"""
        mpiexec -n 2 python3 {WORKLOAD} mf.h5 --driver multifile --config layout=dir
        python3 -c 'import h5vfd; f = h5vfd.open("mf.h5", "a"); f.attrs["one"] = 1; f.close()'
        mpiexec -n 3 python3 -c '
import h5py, h5vfd
from mpi4py import MPI
with h5py.File("mf.h5", "a", driver="multifile", comm=MPI.COMM_WORLD) as f:
    f.attrs["three"] = 3
with h5py.File("new.h5", "a", driver="multifile", comm=MPI.COMM_WORLD) as f:
    f.attrs["created"] = 1
if MPI.COMM_WORLD.rank == 0:
    with h5vfd.open("mf.h5", comm=MPI.COMM_SELF) as f:
        print("appended", f.attrs["one"], f.attrs["three"], h5vfd.is_multifile("new.h5"))
'
        grep "^ranks" mf.h5/metafile
        cp -r mf.h5 open.h5
        python3 - <<'EOF'
import zlib
text = open("open.h5/metafile").read().replace("state complete", "state writing")
body = text[: text.index("crc32 ")]
open("open.h5/metafile", "w").write(body + "crc32 %08x\\n" % zlib.crc32(body.encode()))
import h5py, h5vfd
from mpi4py import MPI
for name, call in (
    ("open", lambda: h5vfd.open("open.h5", "a")),
    ("h5py", lambda: h5py.File("open.h5", "a", driver="multifile", comm=MPI.COMM_WORLD)),
):
    try:
        call()
    except OSError as e:
        print(name, type(e).__name__, e)
EOF
    """
    out = run("mpich-hdf5-1.14", script, tmp_path)
    assert "appended 1 3 True" in out and "ranks 3\n" in out, out
    reason = "multifile: open.h5: incomplete: its writer did not close it"
    assert f"open OSError Unable to synchronously open file ({reason}" in out, out
    assert f"h5py OSError Unable to synchronously open file ({reason}" in out, out
    assert "H5F_ACC_EXCL" not in out, out


@pytest.mark.parametrize("bad", ["-", "nothing"])
def test_a_driver_that_cannot_load_says_where_it_looked(tmp_path, bad):
    """driver='multifile' with the plugin path wrong: DriverError naming HDF5_PLUGIN_PATH."""
    script = f"""
        export HDF5_PLUGIN_PATH={tmp_path}/{bad}
        python3 - <<'EOF'
import h5py, h5vfd
from mpi4py import MPI
try:
    h5py.File("x.h5", "w", driver="multifile", comm=MPI.COMM_WORLD)
except h5vfd.DriverError as e:
    print("refused:", e)
EOF
    """
    out = run("mpich-hdf5-1.14", script, tmp_path)
    assert "refused: HDF5 cannot load the driver 'multifile'" in out and f"{tmp_path}/{bad}" in out, out


def test_an_unmodified_h5py_program_joins_the_dsm_of_its_job(tmp_path):
    """HDF5_DRIVER=dsm, no h5vfd, no communicator: the clients of an MPMD job find the
    servers themselves at the first open (before, they hung in a dup of MPI_COMM_WORLD)."""
    script = """
        HDF5_DRIVER=dsm timeout 120 mpiexec -n 1 h5dsm-server --size 4m --action 'dump:u_{step}.h5' : \\
            -n 2 python3 -c 'import h5py; f = h5py.File("u.h5", "w"); f["x"] = [1, 2, 3]; f.close()'
        h5dump -d x u_0.h5
    """
    out = run("mpich-hdf5-1.14", script, tmp_path)
    assert "(0): 1, 2, 3" in out, out


def readme_example():
    """The Python example of the README's section "From Python" (what users copy)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text.split("## From Python", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("stack", ["mpich-hdf5-1.14", "openmpi-hdf5-2"])
def test_the_readme_example_runs_under_mpiexec(stack, tmp_path):
    """As written, on 4 ranks: h5vfd.info and merge from rank 0 start h5mf inside the job
    (Open MPI's launcher variables must not reach it: it would take itself for a rank)."""
    (tmp_path / "example.py").write_text(readme_example())
    out = run(stack, "mpiexec -n 4 python3 example.py\nh5dump -d x merged.h5", tmp_path)
    assert "MultifileInfo(path='out.h5', format=3, ranks=4, state='complete'" in out, out
    assert "(0): 0, 1, 2, 3" in out, out


NAMES_SCRIPT = """
import sys
from mpi4py import MPI
import h5py
if sys.argv[1] != "h5py":
    import h5vfd
comm = h5vfd.dsm_clients() if sys.argv[1] == "dsm" else MPI.COMM_WORLD


def show(what, f):
    names = comm.gather(f.driver)
    if comm.rank == 0:
        print(what, *names)


if sys.argv[1] == "dsm":
    with h5py.File("mem.h5", "w", driver="dsm", comm=comm) as f:
        show("driver dsm:", f)
    raise SystemExit
if sys.argv[1] == "h5vfd":
    with h5py.File("named.h5", "w", driver="multifile", comm=comm) as f:
        show("driver by name:", f)
with h5py.File(f"{sys.argv[1]}-{comm.rank}.h5", "w") as f:  # a default access list: each rank's own file
    show(f"driver {sys.argv[1]} HDF5_DRIVER:", f)
with h5py.File(sys.argv[1] + "-mpio.h5", "w", driver="mpio", comm=comm) as f:
    show("driver mpio:", f)
"""


@pytest.mark.parametrize("stack", ["mpich-hdf5-1.14", "openmpi-hdf5-2-multifile"])
def test_h5py_names_the_drivers_once_h5vfd_is_imported(stack, tmp_path):
    """File.driver says "multifile" (selected by name, or by HDF5_DRIVER for a default
    access list) and "dsm" once h5vfd is imported, and h5py's own names as before;
    h5py alone says "unknown". Every rank's answer, gathered on rank 0."""
    (tmp_path / "names.py").write_text(NAMES_SCRIPT)
    script = """
        HDF5_DRIVER=multifile mpiexec -n 2 python3 names.py h5py
        HDF5_DRIVER=multifile mpiexec -n 2 python3 names.py h5vfd
        mpiexec -n 1 h5dsm-server --size 4m : -n 2 python3 names.py dsm
    """
    lines = run(stack, script, tmp_path).splitlines()
    assert "driver h5py HDF5_DRIVER: unknown unknown" in lines, lines  # h5py's own table has no such driver
    for line in ("driver by name: multifile multifile", "driver h5vfd HDF5_DRIVER: multifile multifile",
                 "driver dsm: dsm dsm"):  # fmt: skip
        assert line in lines, f"{line!r}: {lines}"
    assert lines.count("driver mpio: mpio mpio") == 2, lines


def h5py_suite_failures(stack, driver, tmp_path, config=""):
    """The node IDs of h5py's own tests that fail with HDF5_DRIVER=driver (and
    HDF5_DRIVER_CONFIG=config), and pytest's summary line (pytest: the project's own, whose
    Python the stacks build h5py for; in as many worker processes as cores, pytest-xdist:
    the same failures as in one, in 21 s instead of 35 s on the 2-core machine)."""
    work = tmp_path / driver
    work.mkdir()
    proc = in_stack(
        stack,
        f"export HDF5_DRIVER={driver} HDF5_DRIVER_CONFIG='{config}' TMPDIR={work} PYTHONDONTWRITEBYTECODE=1\n"
        f"{sys.executable} -m pytest --pyargs h5py -q -p no:cacheprovider -rfE --numprocesses {CORES}",
        cwd=work,
        timeout=900,
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode in (0, 1) and " passed" in summary, proc.stdout[-4000:] + proc.stderr[-2000:]
    return {m.group(1) for m in re.finditer(r"^(?:FAILED|ERROR) (\S+)", proc.stdout, re.M)}, summary


@pytest.fixture(scope="module")
def h5py_mpio_failures(tmp_path_factory):
    """h5py's suite with HDF5_DRIVER=mpio on the twin, run once for both layouts."""
    return h5py_suite_failures("mpich-hdf5-1.14-multifile", "mpio", tmp_path_factory.mktemp("mpio"))


#: the layouts h5py's suite runs through: one a run, in turn by the day (--full: both)
@pytest.mark.parametrize("layout", in_turn(["dir", "head"]))
def test_h5py_suite_with_multifile_fails_only_where_the_path_is_read_without_it(layout, h5py_mpio_failures, tmp_path):
    """h5py's suite with HDF5_DRIVER=multifile (each layout) against the same with
    HDF5_DRIVER=mpio: the tests that fail only with multifile are exactly those of
    tests/data for the layout (each with its reason), on a twin (where the driver is built
    in and cannot be lost; see the data)."""
    with open(H5PY_FAILURES) as f:
        known = yaml.safe_load(f)["failures"][layout]
    assert all(isinstance(why, str) and why for why in known.values()), known
    multifile, mf_summary = h5py_suite_failures(
        "mpich-hdf5-1.14-multifile", "multifile", tmp_path, config=f"layout={layout}"
    )
    mpio, mpio_summary = h5py_mpio_failures
    assert int(re.search(r"(\d+) passed", mf_summary).group(1)) > 700, mf_summary
    only = multifile - mpio
    new, fixed = sorted(only - set(known)), sorted(set(known) - only)
    assert not new and not fixed, f"new failures: {new}; passing now: {fixed}\n{mf_summary}\n{mpio_summary}"
