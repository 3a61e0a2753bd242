# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The generic Spack scope's prefix of MPICH 5 (`./h5stack spack-config`) with the real
wheels, no Spack needed: what Spack's builds compile with it links MPICH 5's library even
where the caller's flags name Debian's library directory, where `libmpi.so` is Open MPI's
(Debian's Python adds that directory to every extension it builds: mpi4py's)."""

import os
import subprocess

from conftest import ROOT, h5stack

PROGRAM = os.path.join(ROOT, "tests", "integration", "programs", "mpi_library.c")


def test_mpich5s_prefix_compiles_against_its_own_library_whatever_the_callers_flags(tmp_path):
    proc = h5stack("spack-config", "--output", str(tmp_path / "generic"), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    prefix = tmp_path / "generic" / "mpi" / "mpich5"
    assert os.path.realpath(prefix / "lib" / "libmpich.so") == os.path.realpath(prefix / "lib" / "libmpi.so.12")
    debian_libdir = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    for wrapper in ("mpicc", "mpicxx"):
        program = tmp_path / f"by-{wrapper}"
        compile_ = [prefix / "bin" / wrapper, PROGRAM, f"-L/usr/lib/{debian_libdir}", "-o", program]
        built = subprocess.run(compile_, capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
        ran = subprocess.run([prefix / "bin" / "mpiexec", "-n", "1", program], capture_output=True, text=True,
                             timeout=120, env=dict(os.environ, MPIR_CVAR_CH4_NETMOD="ofi"))  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "MPICH Version:      5." in ran.stdout, ran.stdout
