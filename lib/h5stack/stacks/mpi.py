# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""An MPI of stacks.yaml as the builds meet it: its commands (Debian installs both MPIs
in /usr behind one alternatives link, so each is called by its own name; an MPI from
wheels has them in its keyed prefix's bin/), the settings its runs need, what identifies
it in cache keys, and a one-rank program that proves it is the library it claims to be
(MPI_Get_library_version, MPI_THREAD_MULTIPLE)."""

import functools
import json
import os
import shutil
import subprocess
import tempfile

from h5stack.base import paths
from h5stack.base.ui import StepError
from h5stack.stacks import build, wheels

MPI_CHECK_C = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int provided, len;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Get_library_version(version, &len);
    printf("thread_multiple=%d\n%s\n", provided == MPI_THREAD_MULTIPLE, version);
    MPI_Finalize();
    return 0;
}
"""


class MPI:
    def __init__(self, name, spec):
        self.name = name
        self.description = spec.get("description", name)
        self.commands = spec["commands"]
        self.debian_package = spec.get("debian_package")
        #: the keyed prefix of an MPI from wheels (requirements/mpi-wheels.txt), or None
        self.wheel = wheels.mpi_prefix(name, spec["wheels"]) if spec.get("wheels") else None
        #: set up only when one of its stacks is named (`./h5stack setup STACK`, `--all`)
        self.optional = bool(spec.get("optional"))
        self.signature = spec["library_signature"]
        #: {family, library}: the ABI its library keeps (stacks/abi.py), or None
        self.abi = spec.get("abi")
        self.env = {k: self._setting(k, v) for k, v in (spec.get("env") or {}).items()}
        self.env_as_root = {k: self._setting(k, v) for k, v in (spec.get("env_as_root") or {}).items()}
        #: faults of its MPI-IO the site accepts for now: {probe of reframe-tests/mpiio-faults: reason}
        self.mpiio_known_faults = {k: str(v) for k, v in (spec.get("mpiio_known_faults") or {}).items()}
        #: HDF5 testpar programs that do not end with it here: {program: reason} (reframe-tests/hdf5-testpar)
        self.testpar_known = {k: str(v) for k, v in (spec.get("testpar_known") or {}).items()}

    def _setting(self, name, value):
        """A setting's value, "{prefix}" replaced by the prefix of an MPI from wheels."""
        value = str(value)
        if "{prefix}" in value and not self.wheel:
            raise StepError(f"stacks.yaml: mpis.{self.name}.{name} names {{prefix}}, but {self.name} has no wheels")
        return value.replace("{prefix}", self.wheel.prefix) if self.wheel else value

    def install(self):
        """Install an MPI from wheels into its keyed prefix (cached); nothing for Debian's."""
        if self.wheel:
            self.wheel.ensure()

    def command(self, name):
        if self.wheel:
            path = os.path.join(self.wheel.prefix, "bin", self.commands[name])
            if not os.access(path, os.X_OK):
                raise StepError(f"{self.description}: {path} is not installed (`./h5stack setup` a stack of it)")
            return path
        path = shutil.which(self.commands[name])
        if not path:
            raise StepError(f"{self.description}: `{self.commands[name]}` not found on PATH")
        return path

    def build_env(self):
        """The environment of a build against this MPI: CC is its mpicc, and its settings
        (Intel MPI's compiler wrappers need I_MPI_ROOT)."""
        return {"CC": self.command("mpicc"), **self.env}

    def run_env(self, as_root=None):
        as_root = os.geteuid() == 0 if as_root is None else as_root
        return {**self.env, **(self.env_as_root if as_root else {})}

    def version(self):
        if self.wheel:
            return ", ".join(wheels.version_of(line) for line in self.wheel.lines.values())
        if self.debian_package:
            out = subprocess.run(
                ["dpkg-query", "-W", "-f=${Version}", self.debian_package], capture_output=True, text=True
            ).stdout
            if out:
                return out.strip()
        return build.first_line([self.command("mpicc"), "--version"])

    @functools.cache  # noqa: B019 (one MPI object per run)
    def identity(self):
        """What makes builds with this MPI differ (part of cache keys); computed once."""
        env = dict(os.environ, **self.env)
        show = subprocess.run([self.command("mpicc"), "-show"], capture_output=True, text=True, env=env).stdout.strip()
        return {"mpi": self.name, "mpi_version": self.version(), "mpicc_show": show}

    def check(self):
        """Compile and run a one-rank program: library version and MPI_THREAD_MULTIPLE."""
        cache_file = os.path.join(paths.sub("checks"), f"mpi-{self.name}.json")
        ident = self.identity()
        try:
            with open(cache_file) as f:
                cached = json.load(f)
            if cached.get("identity") == ident:
                return cached
        except (OSError, ValueError):
            pass
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "mpicheck.c")
            with open(src, "w") as f:
                f.write(MPI_CHECK_C)
            exe = os.path.join(tmp, "mpicheck")
            env = dict(os.environ, **self.build_env())
            proc = subprocess.run([self.command("mpicc"), src, "-o", exe], capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise StepError(f"{self.description}: cannot compile an MPI program:\n{proc.stderr}")
            env = dict(os.environ, **self.run_env())
            proc = subprocess.run(
                [self.command("mpiexec"), "-n", "1", exe], capture_output=True, text=True, env=env, timeout=120
            )
            if proc.returncode != 0 or "thread_multiple=" not in proc.stdout:
                raise StepError(f"{self.description}: cannot run an MPI program:\n{proc.stdout}{proc.stderr}")
        lines = proc.stdout.splitlines()
        result = {
            "identity": ident,
            "thread_multiple": lines[0].endswith("=1"),
            "library_version": lines[1].strip() if len(lines) > 1 else "",
        }
        if self.signature not in result["library_version"]:
            raise StepError(
                f"{self.description}: MPI_Get_library_version says {result['library_version']!r}, "
                f"expected {self.signature!r}: the wrong MPI is behind {self.commands['mpicc']}"
            )
        with open(cache_file, "w") as f:
            json.dump(result, f, indent=1)
        return result
