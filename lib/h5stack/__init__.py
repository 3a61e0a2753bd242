# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5stack, the code of the `./h5stack` command, in rooms by concern (docs/architecture.md).

A room imports only rooms of a lower rank (tests/unit/test_house.py checks it):

- base: progress and errors, paths, generated files (rank 0)
- stacks: the local stacks, their sources and keyed builds (rank 1)
- machine: this machine: Debian packages, the Python environment, Apptainer and its
  images, Slurm, the emulated cluster, how ranks start (rank 2)
- spack, reframe, verify: Spack's side, ReFrame's side, the drivers' correctness tools
  (rank 3; none imports another)
- testsuite: `./h5stack test` (rank 4)
- commands: one module per command, from its arguments to typed options (rank 5)
- cli: the parser and the entry point (rank 6)
"""
