# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Spack's side: this machine's Spack scope (config), environments/ generated from
stacks.yaml (environments), the HDF5 patches of the hdf5 recipe generated from packages/ (patches).

Imports base/, stacks/ and machine/; not reframe/ or verify/.
"""
