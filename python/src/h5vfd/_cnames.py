# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The drivers' C constants (generated from their headers by `./h5stack patches`:
edit the headers, never this file)."""

#: the multifile driver's name (H5Pset_driver_by_name, HDF5_DRIVER)
#: (H5FD_MULTIFILE_NAME, packages/hdf5-vfd-multifile/include/H5FDmultifile.h)
MULTIFILE = "multifile"
#: the DSM driver's name
#: (H5FD_DSM_NAME, packages/hdf5-vfd-dsm/include/H5FDdsm.h)
DSM = "dsm"
#: the file that makes a directory a multifile directory
#: (MF_METAFILE_NAME, packages/hdf5-vfd-multifile/src/mf_format.h)
METAFILE = "metafile"
#: the first bytes of a head's slot (a multifile file's head, layout=head)
#: (MF_HEAD_MAGIC, packages/hdf5-vfd-multifile/src/mf_head.h)
HEAD_MAGIC = "H5MFHEAD"
#: where a head's slot begins
#: (MF_HEAD_SLOT, packages/hdf5-vfd-multifile/src/mf_head.h)
HEAD_SLOT = 2048
