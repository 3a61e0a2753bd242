# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The base every room builds on: progress, logs and errors (ui), the paths of the
checkout and of $H5STACK_HOME (paths), the table of H5STACK_* variables (settings),
writing or checking generated files (generated), a command's JSON results (results).

Standard library only: imports nothing of h5stack outside base/.
"""
