/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* stands for an HDF5 plugin: tests only check that it is linked into plugins/ */
int h5hello_plugin_marker(void) { return 1; }
