# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The ReFrame environments of Spack views (lib/h5stack/reframe/spackviews.py), without
Spack: a view's MPI is this machine's MPI whose Spack spec (stacks.yaml) its version
satisfies, a dependency Spack built is found in its install tree, and a view with
parallel h5py and h5vfd gets their Python."""

import json
import os
import re

import pytest

from h5stack.base.ui import StepError
from h5stack.reframe import spackviews
from h5stack.stacks.plan import load_config, spack_package_and_range, version_in_range


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("mpich@:4.1", ("mpich", None, (4, 1))),
        ("mpich@4.2:", ("mpich", (4, 2), None)),
        ("openmpi@5", ("openmpi", (5,), (5,))),
        ("openmpi@4.1:5.0", ("openmpi", (4, 1), (5, 0))),
        ("intel-oneapi-mpi", ("intel-oneapi-mpi", None, None)),
    ],
)
def test_a_spack_spec_of_stacks_yaml_is_a_package_and_a_range(spec, expected):
    assert spack_package_and_range(spec) == expected


@pytest.mark.parametrize("spec", ["mpich@", "mpich@:", "mpich@=5.0", "mpich@4.2:,5", "mpich +hydra", "MPICH"])
def test_other_forms_of_spack_specs_are_refused_not_read_loosely(spec):
    with pytest.raises(StepError, match=re.escape(f"Spack spec {spec!r}: expected")):
        spack_package_and_range(spec)


@pytest.mark.parametrize(
    "version, spec, inside",
    [
        ("4.0.2", "mpich@:4.1", True),
        ("4.1.3", "mpich@:4.1", True),  # an upper bound takes its sub-versions
        ("4.2.0", "mpich@:4.1", False),
        ("4.0.2", "mpich@4.2:", False),
        ("5.0.2", "mpich@4.2:", True),
        ("5.0.11", "openmpi@5", True),
        ("4.1.4", "openmpi@5", False),
        ("50.0", "openmpi@5", False),
        ("2021.19.0", "intel-oneapi-mpi", True),
    ],
)
def test_a_version_is_in_a_range_as_spack_reads_it(version, spec, inside):
    _, low, high = spack_package_and_range(spec)
    assert version_in_range(version, low, high) is inside


SETTINGS = {name: {"spack": spec.get("spack"), "signature": name} for name, spec in load_config()["mpis"].items()}


@pytest.mark.parametrize(
    "package, version, machine",
    [
        ("mpich", "4.0.2", "mpich"),
        ("mpich", "5.0.2", "mpich5"),
        ("openmpi", "4.1.4", "openmpi"),
        ("openmpi", "5.0.11", "openmpi5"),
        ("intel-oneapi-mpi", "2021.19.0", "impi"),
    ],
)
def test_a_views_mpi_is_the_machines_mpi_its_version_satisfies(package, version, machine):
    name, settings = spackviews._machine_mpi({"name": package, "version": version}, SETTINGS)
    assert (name, settings) == (machine, SETTINGS[machine])


def test_an_mpi_the_machine_does_not_describe_keeps_its_package_name_and_no_settings():
    assert spackviews._machine_mpi({"name": "cray-mpich", "version": "8.1.29"}, SETTINGS) == ("cray-mpich", {})


def _node(name, version, deps=(), **extra):
    return {
        "name": name,
        "version": version,
        "hash": f"{name.replace('-', '')}hash",
        "dependencies": [{"name": d["name"], "hash": d["hash"], "parameters": {"virtuals": v}} for d, v in deps],
        **extra,
    }


@pytest.fixture
def installed(tmp_path):
    """An installed environment: its default view holds HDF5 built with an MPICH 5 that
    Spack built (in the install tree, beside HDF5 in another directory), h5py +mpi for
    Debian's Python (an external) and h5vfd."""
    tree = tmp_path / "opt"
    mpich = _node("mpich", "5.0.2")
    python = _node("python", "3.11.2", external={"path": "/usr", "module": None})
    hdf5 = _node("hdf5", "1.14.6", [(mpich, ["mpi"])], parameters={"multifile": False})
    h5py = _node("py-h5py", "3.14.0", [(hdf5, []), (python, ["python"])], parameters={"mpi": True})
    h5vfd = _node("py-h5vfd", "0.9", [(python, ["python"])])
    prefixes = {"mpich": tree / "gcc-12" / "mpich-5.0.2-mpichhash", "hdf5": tree / "linux" / "hdf5-1.14.6-hdf5hash"}
    for prefix in prefixes.values():
        (prefix / "bin").mkdir(parents=True)
    (prefixes["hdf5"] / "bin" / "h5pcc").write_text("")
    installs = {n["hash"]: {"path": str(p)} for n, p in ((mpich, prefixes["mpich"]), (hdf5, prefixes["hdf5"]))}
    (tree / ".spack-db").mkdir()
    (tree / ".spack-db" / "index.json").write_text(json.dumps({"database": {"installs": installs}}))
    env = tmp_path / "mpich5-hdf5-1.14"
    view = env / "view"
    (view / "bin").mkdir(parents=True)
    (view / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    os.symlink(prefixes["hdf5"] / "bin" / "h5pcc", view / "bin" / "h5pcc")
    nodes = {"hdf5": [hdf5, mpich], "py-h5py": [h5py, hdf5, mpich, python], "py-h5vfd": [h5vfd, python]}
    for name, spec_nodes in nodes.items():
        (view / ".spack" / name).mkdir(parents=True)
        (view / ".spack" / name / "spec.json").write_text(json.dumps({"spec": {"nodes": spec_nodes}}))
    (env / "spack.yaml").write_text("spack:\n  view:\n    default:\n      root: view\n")
    return env, prefixes


def test_a_view_gets_its_machine_mpi_a_spack_built_prefix_and_its_python(installed):
    env, prefixes = installed
    (found,) = spackviews.spack_view_environments(["generic"], [str(env)], SETTINGS, {"mpich5": {"X": "1"}})
    assert found["name"] == "spack-mpich5-hdf5-1_14"
    assert found["prepare_cmds"][0].startswith(f'export PATH="{prefixes["mpich"]}/bin:{env}/view/bin$')
    assert (
        f'export PYTHONPATH="{env}/view/lib/python3.11/site-packages${{PYTHONPATH:+:$PYTHONPATH}}"'
        in found["prepare_cmds"]
    )
    assert {"mpich5", "h5py", "hdf5-1_14", "spack-view"} <= set(found["features"]), found["features"]
    assert "mpich" not in found["features"] and "netcdf" not in found["features"]
    extras = found["extras"]
    assert (extras["mpi"], extras["python"], extras["mpi_library_signature"]) == (
        "mpich5",
        "/usr/bin/python3",
        "mpich5",
    )
    assert found["env_vars"] == [["X", "1"]]
    # HDF5's known faults of the view's series, as the local stacks of that series have them
    assert set(extras["hdf5_known_faults"]) == set(load_config()["hdf5"]["1.14"]["known_faults"]), extras


@pytest.mark.parametrize("mpi", [True, False])
def test_a_view_with_parallel_netcdf_has_the_feature(installed, mpi):
    env, _ = installed
    spec = env / "view" / ".spack" / "netcdf-c" / "spec.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps({"spec": {"nodes": [_node("netcdf-c", "4.10.1", parameters={"mpi": mpi})]}}))
    (found,) = spackviews.spack_view_environments(["generic"], [str(env)], SETTINGS)
    assert ("netcdf" in found["features"]) is mpi, found["features"]


def test_a_view_without_h5vfd_gets_no_python(installed):
    env, _ = installed
    os.remove(env / "view" / ".spack" / "py-h5vfd" / "spec.json")
    (found,) = spackviews.spack_view_environments(["generic"], [str(env)], SETTINGS)
    assert "h5py" not in found["features"] and "python" not in found["extras"]
    assert not any("PYTHONPATH" in c for c in found["prepare_cmds"])


def test_a_oneapi_mpis_launchers_come_first_from_its_component_directory(tmp_path):
    """Intel MPI's external prefix holds mpi/<major.minor>/bin (a oneAPI install's
    layout), not bin/: its mpirun must still come first, not whatever PATH holds."""
    prefix = tmp_path / "impi"
    (prefix / "mpi" / "2021.19" / "bin").mkdir(parents=True)
    (prefix / "mpi" / "2021.19" / "bin" / "mpiexec").write_text("")
    node = _node("intel-oneapi-mpi", "2021.19.0")
    assert spackviews._mpi_bin(str(prefix), node) == str(prefix / "mpi" / "2021.19" / "bin")
    assert spackviews._mpi_bin(str(tmp_path / "nothing"), node) == str(tmp_path / "nothing" / "bin")


def test_an_mpi_prefix_that_is_nowhere_is_named(installed):
    env, prefixes = installed
    os.remove(prefixes["hdf5"].parent.parent / ".spack-db" / "index.json")
    with pytest.raises(spackviews.SpackViewError, match="cannot find the prefix of mpich/mpichha"):
        spackviews.spack_view_environments(["generic"], [str(env)], SETTINGS)
