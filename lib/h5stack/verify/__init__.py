# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The drivers' correctness tools: differential fuzzing against MPI-IO (fuzz) and the
crash states of multifile writes and merges (crash).

Imports base/, stacks/ and machine/; not spack/ or reframe/.
"""
