# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The Spack scope of the `generic` system (`./h5stack spack-config`), without Spack:
everything it names lies under $H5STACK_HOME, in prefixes that do not move when
h5stack's Python environment is rebuilt, and every package is built for the pinned
target, not for the build machine's own. It writes through no link planted in its
output directory, and a path it cannot use ends in one line naming it."""

import os
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from h5stack.base.ui import StepError
from h5stack.spack import config as spackconfig


@pytest.fixture(scope="module")
def scope(tmp_path_factory):
    home = tmp_path_factory.mktemp("h5stack-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("H5STACK_HOME", str(home))
        out = home / "spack" / "generic"
        out.mkdir(parents=True)
        spackconfig.generate(str(out))
    with open(out / "config.yaml") as f:
        config = yaml.safe_load(f)["config"]
    with open(out / "packages.yaml") as f:
        packages = yaml.safe_load(f)["packages"]
    return home, config, packages


def test_the_install_tree_follows_h5stack_home(scope):
    home, config, _ = scope
    assert config["install_tree"]["root"] == str(home / "spack" / "opt")


def test_every_external_prefix_is_a_system_one_or_under_h5stack_home(scope):
    home, _, packages = scope
    for name, entry in packages.items():
        for external in entry.get("externals", []):
            prefix = external["prefix"]
            assert prefix == "/usr" or prefix.startswith(str(home) + os.sep), (name, prefix)


def test_cmake_has_a_prefix_of_its_own_keyed_by_its_version(scope):
    home, _, packages = scope
    (external,) = packages["cmake"]["externals"]
    version = external["spec"].split("@", 1)[1]
    assert external["prefix"] == str(home / "spack" / f"cmake-{version}")
    assert os.access(os.path.join(external["prefix"], "bin", "cmake"), os.X_OK)
    assert "venv" not in os.path.realpath(os.path.join(external["prefix"], "bin", "cmake"))


def test_meson_names_its_python_as_spack_asks_of_externals(scope):
    """Spack warns on every concretization when it attaches a Python to an external
    Python tool by itself ("deprecated, and will be removed in v1.2")."""
    _, _, packages = scope
    (external,) = packages["meson"]["externals"]
    assert external["dependencies"] == [{"spec": "python", "deptypes": ["build", "run"]}]
    assert "dependencies" not in packages["ninja"]["externals"][0]


def test_every_package_is_built_for_the_pinned_target(scope):
    _, _, packages = scope
    with open(os.path.join(spackconfig.SITE_SCOPE, "debian-externals.yaml")) as f:
        target = yaml.safe_load(f)["target"]
    assert packages["all"]["require"] == [f"target={target}"]


@pytest.mark.parametrize("machine, expected", [("x86_64", None), ("aarch64", "aarch64"), ("ppc64le", "ppc64le")])
def test_the_target_is_the_templates_on_x86_64_and_the_family_elsewhere(monkeypatch, machine, expected):
    with open(os.path.join(spackconfig.SITE_SCOPE, "debian-externals.yaml")) as f:
        template = yaml.safe_load(f)["target"]
    monkeypatch.setattr(spackconfig.platform, "machine", lambda: machine)
    assert spackconfig.default_target(template) == (expected or template)


def test_install_tree_and_target_given_are_what_the_scope_says(tmp_path, monkeypatch):
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    out.mkdir()
    spackconfig.generate(str(out), install_tree=str(tmp_path / "tree"), target="zen2")
    config = yaml.safe_load((out / "config.yaml").read_text())["config"]
    packages = yaml.safe_load((out / "packages.yaml").read_text())["packages"]
    assert config["install_tree"]["root"] == str(tmp_path / "tree")
    assert packages["all"]["require"] == ["target=zen2"]


def test_no_planted_link_at_a_temporary_name_is_written_through(scope, tmp_path, monkeypatch):
    """A link at a scope file's name is replaced by the file, links at <name>.tmp are
    left alone: no link's target is written."""
    home, _, _ = scope
    monkeypatch.setenv("H5STACK_HOME", str(home))
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.write_text("precious")
    for name in ("packages.yaml", "packages.yaml.tmp", "config.yaml.tmp"):
        os.symlink(victim, out / name)
    spackconfig.generate(str(out))
    assert victim.read_text() == "precious"
    for name in ("packages.yaml", "config.yaml"):
        assert not (out / name).is_symlink() and yaml.safe_load((out / name).read_text())
    assert (out / "packages.yaml").stat().st_mode & 0o777 == 0o666 & ~_umask()
    left = ["config.yaml", "config.yaml.tmp", "mpi", "packages.yaml", "packages.yaml.tmp"]
    assert sorted(p.name for p in out.iterdir()) == left  # no temporary file of its own left


@pytest.mark.parametrize("planted", ["mpi", "mpi/mpich", "mpi/openmpi"])
def test_a_link_where_a_directory_is_made_is_refused(scope, tmp_path, monkeypatch, planted):
    """A link at mpi/ or at an MPI's prefix is refused by name, nothing written through it."""
    home, _, _ = scope
    monkeypatch.setenv("H5STACK_HOME", str(home))
    out, victim = tmp_path / "out", tmp_path / "victim"
    (out / "mpi").mkdir(parents=True)
    victim.mkdir()
    (out / planted).rmdir() if planted == "mpi" else None
    os.symlink(victim, out / planted)
    with pytest.raises(StepError, match=f"^{out / planted}: a symbolic link where spack-config makes a directory"):
        spackconfig.generate(str(out))
    assert list(victim.iterdir()) == []
    assert os.readlink(out / planted) == str(victim)


def test_an_existing_prefix_is_replaced_whole(scope, tmp_path, monkeypatch):
    home, _, _ = scope
    monkeypatch.setenv("H5STACK_HOME", str(home))
    out = tmp_path / "out"
    (out / "mpi" / "mpich" / "bin").mkdir(parents=True)
    (out / "mpi" / "mpich" / "stale").write_text("")
    spackconfig.generate(str(out))
    prefix = out / "mpi" / "mpich"
    assert sorted(p.name for p in prefix.iterdir()) == ["bin", "include", "lib"]
    assert os.access(prefix / "bin" / "mpiexec", os.X_OK) and (prefix / "bin" / "mpicc").is_symlink()
    assert prefix.stat().st_mode & 0o777 == 0o777 & ~_umask()
    assert sorted(p.name for p in (out / "mpi").iterdir()) == ["mpich", "openmpi"]


@pytest.mark.parametrize(
    "where, reason", [("file", "not a directory"), ("file/sub", "cannot make the directory: {tmp}/file is not one")]
)
def test_an_output_that_cannot_be_a_directory_is_one_line_naming_it(tmp_path, where, reason):
    (tmp_path / "file").write_text("")
    output = tmp_path / where
    # ./h5stack run by this Python environment (H5STACK_VENV: no bootstrap), its cache aside
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "h5stack"), "spack-config", "--output", str(output)],
        env=dict(os.environ, H5STACK_VENV=sys.prefix, H5STACK_HOME=str(tmp_path / "home")),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert proc.stderr.splitlines() == [f"h5stack: error: {output}: {reason.format(tmp=tmp_path)}"], proc.stderr
    assert (tmp_path / "file").read_text() == ""


FAKE_MPICC = """#!/bin/sh
if [ "$1" = -show ]; then echo "gcc -I$(dirname "$0")/../include -L$(dirname "$0")/../lib -lmpi"; exit 0; fi
echo "CC=$MPICH_CC CXX=$MPICH_CXX args=$*"
"""


@pytest.fixture
def wheel(tmp_path):
    """A stand-in for MPICH's wheels' prefix: compiler wrappers that print what they were
    given, libmpi.so.12, headers, share/."""
    prefix = tmp_path / "opt" / "mpich-key"
    for sub in ("bin", "lib", "include", "share"):
        (prefix / sub).mkdir(parents=True)
    for name in (*spackconfig.MPICH_WRAPPERS, "mpiexec.hydra", "hydra_pmi_proxy"):
        (prefix / "bin" / name).write_text(FAKE_MPICC)
        (prefix / "bin" / name).chmod(0o755)
    os.symlink("mpiexec.hydra", prefix / "bin" / "mpiexec")
    for lib in ("libmpi.so.12.5.0", "libmpi_abi.so.0"):
        (prefix / "lib" / lib).write_text(lib)
    os.symlink("libmpi.so.12.5.0", prefix / "lib" / "libmpi.so.12")
    (prefix / "include" / "mpi.h").write_text("")
    return prefix


def test_mpich_of_wheels_gets_a_prefix_spack_finds_libmpich_in(wheel, tmp_path):
    root = tmp_path / "generic" / "mpi" / "mpich5"
    root.parent.mkdir(parents=True)
    spackconfig.make_wheel_mpich_prefix(str(root), str(wheel))
    assert (root / "lib" / "libmpich.so").read_text() == "libmpi.so.12.5.0"
    assert os.path.realpath(root / "lib" / "libmpi_abi.so.0") == str(wheel / "lib" / "libmpi_abi.so.0")
    assert (root / "include" / "mpi.h").exists() and (root / "share").is_symlink()
    assert os.path.realpath(root / "bin" / "mpiexec") == str(wheel / "bin" / "mpiexec.hydra")
    assert (root / "bin" / "hydra_pmi_proxy").is_symlink()
    assert sorted(p.name for p in root.parent.iterdir()) == ["mpich5"]  # no temporary directory left


@pytest.mark.parametrize("wrapper", sorted(spackconfig.MPICH_WRAPPERS))
@pytest.mark.parametrize("callers", [None, "clang"])
def test_mpich_wrappers_search_the_prefixs_lib_first(wheel, tmp_path, wrapper, callers):
    """Each wrapper runs the wheels' own with -L<prefix>/lib right after the compiler: the
    wheels' compiler by default, the caller's where MPICH_CC/MPICH_CXX names one."""
    root = tmp_path / "mpich5"
    spackconfig.make_wheel_mpich_prefix(str(root), str(wheel))
    variable = spackconfig.MPICH_WRAPPERS[wrapper]
    env = {k: v for k, v in os.environ.items() if k not in ("MPICH_CC", "MPICH_CXX")}
    if callers:
        env[variable] = callers
    proc = subprocess.run([root / "bin" / wrapper, "t.c", "-L/usr/lib/x86_64-linux-gnu"], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    compiler = f"{callers or 'gcc'} -L{root}/lib"
    other = "CXX" if variable == "MPICH_CC" else "CC"
    assert f"{variable[6:]}={compiler} " in proc.stdout and f"{other}= " in proc.stdout, proc.stdout
    assert proc.stdout.endswith("args=t.c -L/usr/lib/x86_64-linux-gnu\n"), proc.stdout


def test_a_compiler_set_when_the_prefix_is_made_is_not_the_wrappers_default(wheel, tmp_path, monkeypatch):
    monkeypatch.setenv("MPICH_CC", "clang")
    spackconfig.make_wheel_mpich_prefix(str(tmp_path / "mpich5"), str(wheel))
    assert '"${MPICH_CC:-gcc} -L' in (tmp_path / "mpich5" / "bin" / "mpicc").read_text()


def test_mpich_of_wheels_at_a_path_sh_cannot_carry_is_refused(wheel, tmp_path):
    root = tmp_path / "a b" / "mpich5"
    with pytest.raises(StepError, match=f"^{root}: a path with a space or quote"):
        spackconfig.make_wheel_mpich_prefix(str(root), str(wheel))
    assert not (tmp_path / "a b").exists()


def test_a_wheel_without_mpichs_library_is_refused(wheel, tmp_path):
    (wheel / "lib" / "libmpi.so.12").unlink()
    with pytest.raises(StepError, match="no libmpi.so.12"):
        spackconfig.make_wheel_mpich_prefix(str(tmp_path / "mpich5"), str(wheel))
    assert list(tmp_path.glob("mpich5*")) == []


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_intel_mpi_of_wheels_is_a_oneapi_component_with_its_vars_sh(wheel, tmp_path):
    """The component directory holds the wheels' directories and the env/vars.sh that
    Spack's oneAPI recipes source for the run environment: sourced, it names the component
    as I_MPI_ROOT and puts its bin/ and lib/ first."""
    component = tmp_path / "generic" / "mpi" / "impi" / "mpi" / "2021.19"
    component.parent.mkdir(parents=True)
    os.symlink(wheel, component)  # what an older spack-config left: replaced, not followed
    spackconfig.make_wheel_oneapi_component(str(component), str(wheel))
    assert not component.is_symlink() and sorted(os.listdir(wheel)) == ["bin", "include", "lib", "share"]
    assert os.path.realpath(component / "include" / "mpi.h") == str(wheel / "include" / "mpi.h")
    # mpicc and mpicxx put the component's lib/ first (Debian's Python's -L would find
    # Open MPI's libmpi.so first); everything else is the wheels' own
    wrapper = (component / "bin" / "mpicc").read_text()
    assert 'I_MPI_CC="${I_MPI_CC:-' in wrapper and f"-L{component}/lib" in wrapper, wrapper
    assert not (component / "bin" / "mpicc").is_symlink() and (component / "bin" / "mpiexec.hydra").is_symlink()
    env = subprocess.run(
        ["sh", "-c", '. "$0"; echo "$I_MPI_ROOT|$PATH|$LD_LIBRARY_PATH"', str(component / "env" / "vars.sh")],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=True,
    ).stdout.strip().split("|")  # fmt: skip
    assert env == [str(component), f"{component}/bin:/usr/bin:/bin", f"{component}/lib"], env
    assert sorted(p.name for p in component.parent.iterdir()) == ["2021.19"]  # no temporary directory left


def test_intel_mpi_of_wheels_at_a_path_sh_cannot_carry_is_refused(wheel, tmp_path):
    with pytest.raises(StepError, match="a path with a space or quote cannot be written into vars.sh"):
        spackconfig.make_wheel_oneapi_component(str(tmp_path / "a b" / "2021.19"), str(wheel))
