# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The local stacks: stacks.yaml and the plan of a stack (plan), HDF5's sources
(sources, debarchive), keyed CMake builds and their cache (build), a stack's directory
(stackdir), the Python packages built against a stack (pybuild), an MPI and its probe
(mpi), h5vfd's C constants generated from the drivers' headers (pyconstants).

Imports base/ only.
"""
