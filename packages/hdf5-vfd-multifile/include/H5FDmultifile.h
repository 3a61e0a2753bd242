/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * H5FDmultifile.h - the multifile virtual file driver for parallel HDF5 (1.14, 2.x).
 *
 * One logical HDF5 file written by P MPI ranks becomes a directory NAME/ with one
 * append-only data file and one index per rank (see src/mf_format.h). Opening it
 * read-only reads it as it is, changing nothing (read=inplace, the default); read=merge
 * reconstructs the ordinary HDF5 file in place of the directory first (the original
 * patch's behaviour, kept by H5Pset_fapl_mpiposix). Three ways to select it:
 *   H5Pset_fapl_multifile(fapl, comm, info);                  linked
 *   H5Pset_driver_by_name(fapl, "multifile", "checksums=off"); by name
 *   HDF5_DRIVER=multifile HDF5_PLUGIN_PATH=<dir> ./app          plugin, no recompilation
 * Options (config string or H5Pset_multifile_options): see README.md.
 */
#ifndef H5FDmultifile_H
#define H5FDmultifile_H

#include <hdf5.h>

#ifdef H5_HAVE_PARALLEL /* always true for the plugin; the patched libhdf5 may be serial */
#include <mpi.h>

#define H5FD_MULTIFILE_NAME "multifile"
/* a value of the range HDF5 leaves for testing/unregistered drivers (256-511) */
#define H5FD_MULTIFILE_VALUE ((H5FD_class_value_t)361)
#define H5FD_MULTIFILE       (H5FD_multifile_init())

typedef enum {
    H5FD_MULTIFILE_READ_MERGE          = 0, /* rank 0 reconstructs the file, which replaces the directory */
    H5FD_MULTIFILE_READ_INPLACE        = 1, /* read the rank files directly, change nothing (the default) */
    H5FD_MULTIFILE_READ_PARALLEL_MERGE = 2  /* all ranks reconstruct together, then replace */
} H5FD_multifile_read_t;

#ifdef __cplusplus
extern "C" {
#endif

/* the driver's ID, registering it on first use */
hid_t H5FD_multifile_init(void);

/* select the driver with this communicator and info (both duplicated) */
herr_t H5Pset_fapl_multifile(hid_t fapl_id, MPI_Comm comm, MPI_Info info);
/* the communicator and info of a fapl set by H5Pset_fapl_multifile (duplicates: free them) */
herr_t H5Pget_fapl_multifile(hid_t fapl_id, MPI_Comm *comm, MPI_Info *info);
/* options in the syntax of HDF5_DRIVER_CONFIG, e.g. "read=merge;checksums=off" */
herr_t H5Pset_multifile_options(hid_t fapl_id, const char *options);
/* read mode of a fapl using the driver */
herr_t H5Pget_multifile_read_mode(hid_t fapl_id, H5FD_multifile_read_t *mode);

/*
 * Compatibility with the original Multifile HDF5 patch (HDF5 1.8.11's mpiposix driver):
 * code written for it builds and runs unchanged: as there, a read-only open reconstructs
 * a multifile directory into the ordinary file that replaces it (read=merge; every other
 * way of selecting the driver reads in place). use_gpfs_hints is accepted and ignored
 * (GPFS tuning is the site configuration's: MPI-IO hints and alignment).
 */
herr_t H5Pset_fapl_mpiposix(hid_t fapl_id, MPI_Comm comm, hbool_t use_gpfs_hints);

#ifdef __cplusplus
}
#endif

#endif /* H5_HAVE_PARALLEL */
#endif
