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


def test_every_package_is_built_for_the_pinned_target(scope):
    _, _, packages = scope
    with open(os.path.join(spackconfig.SITE_SCOPE, "debian-externals.yaml")) as f:
        target = yaml.safe_load(f)["target"]
    assert packages["all"]["require"] == [f"target={target}"]


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


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
