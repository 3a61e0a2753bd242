# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Optional MPIs (stacks.yaml `optional: true`): listed with the others, set up only when
named, their commands in their own keyed prefix."""

import pytest

from h5stack.base.ui import StepError
from h5stack.stacks.plan import Stacks


@pytest.fixture
def stacks(tmp_path, monkeypatch):
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    return Stacks()


def test_the_default_stacks_are_those_of_the_mpis_that_are_not_optional(stacks):
    optional = {s.name for s in stacks.all() if s.mpi.optional}
    assert optional, "stacks.yaml has no optional MPI"
    assert {s.name for s in stacks.defaults()} == set(stacks.names()) - optional
    assert all(s.mpi.debian_package for s in stacks.defaults())
    assert stacks.in_use() == stacks.defaults()  # none of the optional ones is set up here


def test_an_uninstalled_wheel_mpi_names_the_command_that_installs_it(stacks, tmp_path):
    mpi = next(m for m in stacks.mpis.values() if m.wheel)
    assert mpi.wheel.prefix.startswith(str((tmp_path / "home" / "opt").resolve()))
    with pytest.raises(StepError, match=r"is not installed \(`./h5stack setup` a stack of it\)"):
        mpi.command("mpicc")
    assert mpi.wheel.status() == "not built"


def test_a_prefix_in_a_setting_is_the_mpis_own(stacks):
    intel = stacks.mpis["impi"]
    assert intel.env["I_MPI_ROOT"] == intel.wheel.prefix
    assert "{prefix}" not in "".join(v for m in stacks.mpis.values() for v in m.run_env(as_root=True).values())


def test_a_prefix_in_a_setting_of_a_debian_mpi_is_an_error(tmp_path, monkeypatch):
    from h5stack.stacks.mpi import MPI

    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    spec = {"commands": {}, "library_signature": "x", "env": {"X": "{prefix}/lib"}}
    with pytest.raises(StepError, match=r"names \{prefix\}, but other has no wheels"):
        MPI("other", spec)
    assert MPI("other", dict(spec, env={"X": "{a,b}"})).env == {"X": "{a,b}"}
