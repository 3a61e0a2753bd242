# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Our packages (packages/*) in the stacks: the mechanism, and each package's ctest."""

import json
import os
import shutil

import pytest

from conftest import CORES, FULL, PACKAGE_STACKS, ROOT, Stacks, in_stack, stacks_under_test
from h5stack.base import paths

H5HELLO = os.path.join(ROOT, "tests", "data", "h5hello")


def _package_home(name, names):
    """The stack a package's ctest runs on by default: PACKAGE_STACKS (the day's plain
    stacks) in turn over the packages sorted by name, so that two days run each on both
    HDF5 series."""
    return PACKAGE_STACKS[sorted(names).index(name) % len(PACKAGE_STACKS)]


def _package_cases():
    cases = []
    names = [os.path.basename(d) for d in Stacks().package_dirs()]
    for stack in stacks_under_test():
        for pkg in (stack.description() or {}).get("packages", []):
            if FULL or (pkg["name"] in names and _package_home(pkg["name"], names) == stack.name):
                cases.append(pytest.param(stack.name, pkg, id=f"{pkg['name']}-{stack.name}"))
    if not cases and not Stacks().package_dirs():
        reason = "packages/ holds no project yet, so no stack has a package to test"
        cases.append(pytest.param(None, None, id="no-packages", marks=pytest.mark.skip(reason=reason)))
    return cases


#: ctest entries that run with --full only: the same kind runs at fewer ranks by default
#: (multifile's workload at 1 and 2 ranks here; at 4 ranks as the regression's
#: multifile_workload on every stack and on a twin, tests/integration/test_stacks.py; 8
#: ranks busy-poll 2 cores for a minute)
CTEST_FULL_ONLY = {"hdf5-vfd-multifile": ["workload_4ranks", "workload_8ranks"]}


#: ctest runs as many tests at once as there are cores: many of them wait (a server that
#: lags, a job that is killed, a hang cut short), and their ranks then leave the cores idle
CTEST_PARALLEL = CORES


@pytest.mark.parametrize("stack, package", _package_cases())
def test_package_ctest(stack, package):
    """Each package's own tests (ctest) in each stack's environment (CTEST_FULL_ONLY: --full)."""
    left_out = [] if FULL else CTEST_FULL_ONLY.get(package["name"], [])
    exclude = f" -E '^({'|'.join(left_out)})$'" if left_out else ""
    cmd = f"ctest --test-dir {package['build_dir']} --output-on-failure --timeout 600 -j {CTEST_PARALLEL}{exclude}"
    proc = in_stack(stack, cmd, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


def test_a_package_is_built_into_a_stack(tmp_path, monkeypatch):
    """A CMake project in packages/ is built against the stack's HDF5 and MPI, put on
    its PATH, its plugins linked into plugins/, its ctest runnable; cached after."""
    real_home = paths.home()
    home = tmp_path / "home"
    home.mkdir()
    for shared in ("opt", "sources"):  # reuse the built HDF5; the package's build tree is this test's own
        os.symlink(os.path.join(real_home, shared), home / shared)
    # the stack's parts with kept build trees of their own (HDF5's test programs, netCDF-C)
    # are not this test's concern: they would be built again in its home
    monkeypatch.setattr(Stacks, "hdf5_tests_component", lambda self, stack: None)
    monkeypatch.setattr(Stacks, "netcdf_component", lambda self, stack: None)
    packages = tmp_path / "packages"
    shutil.copytree(H5HELLO, packages / "h5hello")
    monkeypatch.setenv("H5STACK_HOME", str(home))
    monkeypatch.setattr(paths, "PACKAGES_DIR", str(packages))

    stacks = Stacks()
    stack = stacks.get("mpich-hdf5-1.14")
    stacks.setup([stack])
    desc = json.load(open(home / "stacks" / "mpich-hdf5-1.14" / "stack.json"))
    (pkg,) = desc["packages"]
    assert pkg["name"] == "h5hello"
    assert desc["prefixes"][0] == pkg["prefix"]
    assert os.path.islink(home / "stacks" / "mpich-hdf5-1.14" / "plugins" / "libh5hello_plugin.so")

    env = dict(os.environ, H5STACK_HOME=str(home))
    proc = in_stack(
        "mpich-hdf5-1.14", f"mpiexec -n 3 h5hello\nctest --test-dir {pkg['build_dir']} --output-on-failure", env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"ranks=3 hdf5={desc['hdf5_version']}" in proc.stdout
    assert "100% tests passed" in proc.stdout

    # the kept build tree names its own copy of the sources: ctest still runs after
    # the checkout that built it is gone
    shutil.move(packages, tmp_path / "elsewhere")
    proc = in_stack("mpich-hdf5-1.14", f"ctest --test-dir {pkg['build_dir']} --output-on-failure", env=env)
    assert proc.returncode == 0 and "100% tests passed" in proc.stdout, proc.stdout + proc.stderr
    shutil.move(tmp_path / "elsewhere", packages)

    # a second setup reuses the package build; a changed source rebuilds it
    comp = stacks.package_component(str(packages / "h5hello"), stack)
    assert comp.status() is None and comp.prefix == pkg["prefix"]
    (packages / "h5hello" / "plugin.c").write_text("int h5hello_plugin_marker(void) { return 2; }\n")
    fresh = Stacks()  # a Stacks computes each package's key once per run
    assert fresh.package_component(str(packages / "h5hello"), fresh.get("mpich-hdf5-1.14")).key != comp.key


def test_multifile_writes_a_chunk_handed_over_row_by_row_at_once(tmp_path):
    """HDF5 hands each row of a chunk to the driver as its own vector entry: multifile
    joins the entries that continue one another into one write of its data file and one
    of its index (vfd_each_run), so the writes into the directory number about two per
    chunk, not two per row (h5pwrite3dc: 8 chunks of 128 rows per rank)."""
    if shutil.which("strace") is None:
        pytest.skip("strace is missing (requirements/debian.txt)")
    stack = PACKAGE_STACKS[-1]
    script = (
        "strace -f -qq -y -e trace=pwrite64,pwritev,write -o trace.txt "
        "mpiexec -n 2 h5pwrite3dc d.h5 4 2 --size 256 --chunk 128 --driver multifile"
    )
    proc = in_stack(stack, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    inside = f"<{os.path.realpath(tmp_path / 'd.h5.h5mf')}/"  # the head's directory (the default layout)
    writes = [line for line in open(tmp_path / "trace.txt") if inside in line and "write" in line.split("(")[0]]
    chunks = 4 * 2 * 2  # images x chunks per image row x per column: 16 chunks in all
    assert 0 < len(writes) <= 4 * chunks, f"{len(writes)} writes into the directory for {chunks} chunks"


CONSUMER = os.path.join(ROOT, "tests", "data", "driver_consumer")


def test_other_projects_build_against_the_installed_drivers(tmp_path):
    """The drivers as another project uses them: its CMake finds both installed packages
    (find_package CONFIG, the targets h5stack::h5fd_multifile and h5stack::h5fd_dsm), and
    the same program builds with h5pcc and pkg-config. Both builds write through multifile
    a file that h5mf verifies and that holds each rank's number. The project asks for
    the release of VERSION (its MAJOR.MINOR)."""
    shutil.copytree(CONSUMER, tmp_path / "src")
    wanted = ".".join(open(os.path.join(ROOT, "VERSION")).read().split(".")[:2])
    script = (
        f"cmake -S src -B build -DCMAKE_C_COMPILER=mpicc -DWANTED={wanted} > cmake.log 2>&1 || {{ cat cmake.log; exit 1; }}\n"
        "cmake --build build > build.log 2>&1 || { cat build.log; exit 1; }\n"
        "h5pcc -o by-pkg-config src/consumer.c $(pkg-config --cflags --libs h5fd_multifile h5fd_dsm)\n"
        "for prog in build/consumer ./by-pkg-config; do\n"
        "  rm -rf out.h5; mpiexec -n 2 $prog out.h5; h5mf verify out.h5\n"
        "  HDF5_DRIVER=multifile h5dump -d ranks out.h5\n"
        "done\n"
    )
    # a 1.14 stack of the day's: HDF5_DRIVER=multifile h5dump needs the stack's own tools (a
    # 2.x stack's are Debian's serial build, which loads no plugin of the stack)
    stack = next(s for s in PACKAGE_STACKS if Stacks().get(s).series == "1.14")
    proc = in_stack(stack, script, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert out.count("consumer: ok") == 2 and out.count("out.h5: ok: 2 ranks") == 2, out[-4000:]
    assert out.count("(0): 0, 1") == 2, out[-4000:]
