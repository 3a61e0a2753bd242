# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5stack's Spack side with a real Spack: recipes, environments, generic site config.

Runs when Spack is found (SPACK_ROOT, else `spack` on PATH); otherwise every test is
reported as skipped ("no Spack found"), never as passed. Nothing is written to the
checkout or to Spack's own configuration: the repository, this machine's generic
scope (`./h5stack spack-config`) and copies of the environments go to a temporary
directory and are passed with `-C` / `-e`.

Offline machines need a source mirror (docs/developing.md); where it holds Debian's repack
of an HDF5 release instead of the release tarball, set H5STACK_SPACK_NO_CHECKSUM=1
(the installs then run with --no-checksum; see spack-repo/README.md).
"""

import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, Stacks, h5stack
from h5stack.spack import environments as spackenvs
from h5stack.stacks.plan import load_config, spack_mpis

SPACK = (
    os.path.join(os.environ["SPACK_ROOT"], "bin", "spack") if os.environ.get("SPACK_ROOT") else shutil.which("spack")
)
pytestmark = pytest.mark.skipif(not SPACK, reason="no Spack found (set SPACK_ROOT or put spack on PATH)")

ENVIRONMENTS = sorted(os.listdir(os.path.join(ROOT, "environments")))
#: every environment of one stack installs and is tested (the matrix holds the same roots)
INSTALLED = [e for e in ENVIRONMENTS if e != "matrix"]
#: {Spack spec of an MPI of stacks.yaml: its package}
MPI_PACKAGES = {s: re.match(r"[a-z0-9-]+", s).group(0) for s in spack_mpis(load_config()).values()}


#: the packages h5stack's recipes fetch from its repository (not hdf5: builtin's sources)
OWN = [*spackenvs.packages(), spackenvs.OWN_PYTHON]
with open(os.path.join(ROOT, "site-configs", "generic", "spack", "debian-externals.yaml")) as f:
    TARGET = yaml.safe_load(f)["target"]  # the generic scope's pin


@pytest.fixture(scope="module")
def scope(tmp_path_factory):
    """Spack scopes: this machine's generic config (at its usual, stable place: the MPI
    prefixes in it are part of every hash) and one that adds a copy of spack-repo/ taken
    alone (nothing of the checkout around it) whose packages fetch from this checkout, as
    a fork or a site mirror would point them (spack-repo/README.md)."""
    generic = h5stack("spack-config", check=True).stdout.strip().splitlines()[-1]
    d = tmp_path_factory.mktemp("spack-repo-scope")
    shutil.copytree(os.path.join(ROOT, "spack-repo"), d / "spack-repo")
    with open(d / "repos.yaml", "w") as f:
        f.write(f"repos:\n  h5stack: {d / 'spack-repo' / 'spack_repo' / 'h5stack'}\n")
    with open(d / "packages.yaml", "w") as f:
        f.write("packages:\n" + "".join(f"  {p}: {{package_attributes: {{git: 'file://{ROOT}'}}}}\n" for p in OWN))
    scopes = [generic, str(d)]
    # the patch index is Spack's cache: rebuilt, as after a changed patch (spack-repo/README.md)
    assert spack(scopes, "clean", "-m").returncode == 0
    return scopes


@functools.cache
def _mpi_run_env():
    """This machine's MPI run settings (stacks.yaml: e.g. Open MPI as root, oversubscription)."""
    env = dict(os.environ)
    for mpi in Stacks().mpis.values():
        env.update(mpi.run_env())
    return env


def spack(scope, *args, timeout=3600, cwd=None):
    proc = subprocess.run(
        [SPACK, "-C", scope[0], "-C", scope[1], *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
        env=_mpi_run_env(),
    )  # fmt: skip
    return proc


def test_repository_is_listed(scope):
    proc = spack(scope, "repo", "list")
    assert proc.returncode == 0, proc.stderr
    assert os.path.join(scope[1], "spack-repo") in proc.stdout, proc.stdout


@pytest.mark.parametrize("what", ["packages", "configs"])
def test_audit(scope, what):
    packages = ["hdf5", "hdf5-vfd-multifile", "hdf5-vfd-dsm", "h5pwrite3dc"]
    args = ["audit", what] + (packages if what == "packages" else [])
    proc = spack(scope, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_multifile_variant_exists_only_where_a_patch_was_tried(scope):
    proc = spack(scope, "info", "h5stack.hdf5")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"multifile \[false\].*\n\s+when @1\.14\.6,2\.1\.0:2\.2\.0\+mpi", proc.stdout), proc.stdout
    for spec in ("hdf5@1.14.5 +mpi +multifile", "hdf5@1.14.6 ~mpi +multifile", "hdf5@develop-2.0 +mpi +multifile"):
        proc = spack(scope, "spec", spec, "^mpich")
        assert proc.returncode != 0, f"{spec} was accepted:\n{proc.stdout}"
        assert "multifile" in proc.stderr, proc.stderr


CLASSES = """
import spack.repo
import spack.spec
for repo in ("h5stack", "builtin"):
    cls = spack.repo.PATH.get_repo(repo).get_pkg_class("hdf5")
    mpich = sorted(str(w) for w, c in cls.conflicts.items() if "mpich" in str(w) and any(s == spack.spec.Spec("+mpi") for s, _ in c))
    print(repo, "conflicts", mpich)
    print(repo, "maintainers", sorted(cls.maintainers))
"""


def test_hdf5_narrows_builtins_mpich_conflict_and_names_its_own_maintainers(scope, tmp_path):
    (tmp_path / "classes.py").write_text(CLASSES)
    proc = spack(scope, "python", str(tmp_path / "classes.py"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "h5stack conflicts ['^mpich@4.0:4.0.3 netmod=ofi']" in lines, proc.stdout
    assert "builtin conflicts ['^mpich@4.0:4.0.3']" in lines, proc.stdout  # builtin's class untouched
    assert "h5stack maintainers ['h5stack']" in lines, proc.stdout


def _builtin_pyproject(scope):
    """spack-packages' pyproject.toml (its ruff settings): above the builtin repository."""
    proc = spack(scope, "location", "--repo", "builtin")
    assert proc.returncode == 0, proc.stderr
    d = proc.stdout.strip()
    while d != os.path.dirname(d):
        if os.path.isfile(os.path.join(d, "pyproject.toml")):
            return os.path.join(d, "pyproject.toml")
        d = os.path.dirname(d)
    pytest.fail(f"no pyproject.toml above the builtin repository {proc.stdout.strip()}")


@pytest.mark.parametrize("check", [["format", "--check", "--diff"], ["check", "--no-fix"]])
def test_recipes_pass_spack_packages_ruff(scope, check):
    """What spack-packages' CI runs on builtin recipes, with its configuration."""
    config = _builtin_pyproject(scope)
    proc = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ruff"),
            *check,
            "--no-cache",  # nothing left in the checkout
            "--config",
            config,
            os.path.join(ROOT, "spack-repo"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _concretized(scope, env, tmp_path, version=None):
    """The environment concretized afresh in a copy; `version`: h5stack's own packages
    required at that version (e.g. `main`, this checkout's branch) instead of the release."""
    copy = tmp_path / env
    shutil.copytree(os.path.join(ROOT, "environments", env), copy)
    if version:
        with open(copy / "spack.yaml") as f:
            manifest = yaml.safe_load(f)
        manifest["spack"]["packages"] = {p: {"require": [f"@{version}"]} for p in OWN}
        with open(copy / "spack.yaml", "w") as f:
            yaml.safe_dump(manifest, f)
    # --fresh: a changed patch or a new commit of main is built, not an installed spec reused
    proc = spack(scope, "-e", str(copy), "concretize", "--force", "--fresh")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(copy / "spack.lock") as f:
        return copy, json.load(f)


def _mpi_of_roots(lock):
    """{root spec text: name of the node that provides mpi to its hdf5}"""
    nodes = lock["concrete_specs"]

    def mpi_below(h):
        for dep in nodes[h].get("dependencies", []):
            if "mpi" in dep.get("parameters", {}).get("virtuals", []):
                return nodes[dep["hash"]]["name"]
        for dep in nodes[h].get("dependencies", []):
            found = mpi_below(dep["hash"])
            if found:
                return found
        return None

    return {root["spec"]: mpi_below(root["hash"]) for root in lock["roots"]}


def _targets(lock):
    """{target of every node that Spack builds}"""
    nodes = lock["concrete_specs"].values()
    return {n["arch"]["target"] if isinstance(n["arch"]["target"], str) else n["arch"]["target"]["name"]
            for n in nodes if not n.get("external") and "arch" in n}  # fmt: skip


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_environment_concretizes(scope, env, tmp_path):
    _, lock = _concretized(scope, env, tmp_path)
    assert _targets(lock) == {TARGET}, _targets(lock)  # the scope's pin, not this machine's
    mpis = _mpi_of_roots(lock)
    assert mpis and all(mpis.values()), mpis
    for spec, mpi in mpis.items():  # each root really has the MPI it names
        named = [package for mpi_spec, package in MPI_PACKAGES.items() if f"^{mpi_spec}" in spec]
        assert named == [mpi], f"{spec} concretized with {mpi}"
    if env == "matrix":
        assert set(mpis.values()) == set(MPI_PACKAGES.values()), mpis


@pytest.mark.parametrize("env", INSTALLED)
@pytest.mark.timeout(3 * 3600)  # from an empty install tree: numpy, mpi4py, h5py and two HDF5s on few cores
def test_environment_installs_and_passes_spack_test_and_checks(scope, env, tmp_path):
    copy, _ = _concretized(scope, env, tmp_path, version="main")
    extra = ["--no-checksum"] if os.environ.get("H5STACK_SPACK_NO_CHECKSUM") == "1" else []
    proc = spack(scope, "-e", str(copy), "install", *extra, timeout=7200)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-4000:]
    mpi_libraries = _mpi_libraries(copy / "view")
    assert len(mpi_libraries) == 1, mpi_libraries  # one MPI in every binary
    for package in ("hdf5-vfd-multifile", "hdf5-vfd-dsm", "h5pwrite3dc", spackenvs.OWN_PYTHON):
        proc = spack(scope, "-e", str(copy), "test", "run", package, timeout=3600, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-4000:]
        assert "1 passed" in proc.stdout, proc.stdout
    # the harness's checks on the environment's views (plain + plugin, patched HDF5),
    # parallel h5py with h5vfd as users run it from the default view, and netCDF-C
    # through multifile where the environment has it (the 1.14 ones)
    netcdf = bool(spackenvs.clients(load_config(), env.rsplit("-hdf5-", 1)[1]))
    checks = ["hdf5_tutorial_hyperslab", "h5py_workload"] + (["netcdf_reopen"] if netcdf else [])
    proc = h5stack("run", "--no-setup", "--spack-env", str(copy), *checks)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    assert f"{33 + netcdf} passed, 0 skipped, 0 failed" in proc.stdout, proc.stdout[-3000:]
    environ = "spack-" + env.replace(".", "_")
    for check, name, jobs in (
        ("hdf5_tutorial_hyperslab", environ, 16),
        ("hdf5_tutorial_hyperslab", environ + "-multifile", 16),
        ("h5py_workload", environ, 1),
        ("netcdf_reopen", environ, int(netcdf)),
    ):
        rows = re.findall(rf"^│ {check} .*│ {re.escape(name)} +│ pass +│", proc.stdout, re.M)
        assert len(rows) == jobs, (check, name, proc.stdout[-6000:])


def _mpi_libraries(view):
    """{libmpi path} that the view's libraries, programs and Python extensions load (ldd):
    one MPI's, unless a build linked another MPI's libmpi.so found on a system path (an
    MPI's compiler wrapper that puts -lmpi after a caller's -L/usr/lib/...)."""
    files = [p for pattern in ("bin/*", "lib/*.so*", "lib/plugin/*.so", "lib/python3*/site-packages/*/*.so")
             for p in glob.glob(os.path.join(view, pattern)) if os.path.isfile(p)]  # fmt: skip
    found = set()
    for path in files:
        ldd = subprocess.run(["ldd", path], capture_output=True, text=True)
        found |= set(re.findall(r"^\s*libmpi\.so\.\d+ => (\S+)", ldd.stdout, re.M))
    return found


SITE_SCOPES = sorted(
    s
    for s in os.listdir(os.path.join(ROOT, "site-configs"))
    if os.path.isdir(os.path.join(ROOT, "site-configs", s, "spack"))
)


@pytest.mark.parametrize("system", SITE_SCOPES)
@pytest.mark.parametrize("section", ["config", "packages"])
def test_site_scope_is_valid_as_it_is(system, section):
    """Every system's Spack directory is a scope Spack reads as it is, as the docs'
    `spack -C site-configs/<system>/spack` passes it (the generic one included, which
    `./h5stack spack-config` completes)."""
    proc = subprocess.run(
        [SPACK, "-C", os.path.join(ROOT, "site-configs", system, "spack"), "config", "get", section],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


CLUSTER_SCOPES = {
    # system: (environment, its MPI in this system's spelling, the MPI prefix of the scope)
    "gpfs-cluster": ("openmpi-hdf5-1.14", "openmpi", "/sw/openmpi/4.1.6-gcc-12"),
    "lustre-cluster": ("mpich-hdf5-1.14", "cray-mpich", "/opt/cray/pe/mpich/8.1.29/ofi/gnu/12.3"),
}


@pytest.mark.parametrize("system", sorted(CLUSTER_SCOPES))
def test_cluster_template_scope_concretizes_with_its_externals(scope, system, tmp_path):
    """The Spack scope of a cluster template (site-configs/<system>/spack): an h5stack
    environment concretizes against the site's MPI and compiler as externals (paper
    only here: nothing is installed, the prefixes exist on the cluster)."""
    env, mpi, prefix = CLUSTER_SCOPES[system]
    with open(os.path.join(ROOT, "environments", env, "spack.yaml")) as f:
        manifest = f.read()
    for mpi_spec in MPI_PACKAGES:  # the environment's MPI spec, in the site's spelling
        manifest = manifest.replace(f"^{mpi_spec}'", f"^{mpi}'")
    (tmp_path / "spack.yaml").write_text(manifest)
    cluster = [os.path.join(ROOT, "site-configs", system, "spack"), scope[1]]
    proc = spack(cluster, "-e", str(tmp_path), "concretize", "--fresh")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(tmp_path / "spack.lock") as f:
        lock = json.load(f)
    externals = {n["name"]: n["external"]["path"] for n in lock["concrete_specs"].values() if n.get("external")}
    assert externals.get(mpi) == prefix, externals
    assert "gcc" in externals, externals
    mpis = _mpi_of_roots(lock)
    assert mpis and set(mpis.values()) == {mpi}, mpis
