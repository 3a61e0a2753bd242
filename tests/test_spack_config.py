# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The Spack scope of the `generic` system (`./h5stack spack-config`), without Spack:
everything it names lies under $H5STACK_HOME, in prefixes that do not move when
h5stack's Python environment is rebuilt, and every package is built for the pinned
target, not for the build machine's own."""

import os

import pytest
import yaml

from h5stack import spackconfig


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
