# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""This machine and what runs on it: Debian packages (apt), the Python environment
(bootstrap), Apptainer (apptainer) and the images of the stacks (images), the local
Slurm of the system slurm-local (slurm), the emulated cluster of the system
slurm-cluster (cluster), how ranks start (launch).

Imports base/ and stacks/. apt and bootstrap use base/ and the standard library only:
they run before anything is installed.
"""
