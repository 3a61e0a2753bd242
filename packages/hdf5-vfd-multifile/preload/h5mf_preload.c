/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5mf_preload: multifile for applications that choose HDF5's MPI-IO driver themselves.
 *
 * HDF5_DRIVER=multifile selects the driver for files opened with a default file access
 * property list. Applications that call H5Pset_fapl_mpio() explicitly (IOR's HDF5
 * backend, the original hdf_pwrite3dc, most MPI codes) override that. Preloaded, this
 * library interposes H5Pset_fapl_mpio and H5Pget_fapl_mpio: while H5MF_MPIO_DRIVER or
 * HDF5_DRIVER is "multifile" (or "dsm", the other MPI driver of h5stack: the library
 * calls only HDF5's public API), a call for MPI-IO sets that driver instead, with the
 * same communicator and info (H5Pset_mpi_params) and HDF5_DRIVER_CONFIG as its options;
 * otherwise it passes through to libhdf5. H5MF_MPIO_DRIVER changes only those calls:
 * files the program opens serially (a default access list) stay HDF5's serial driver's,
 * as they are with MPI-IO; HDF5_DRIVER makes them the driver's too (HDF5 applies it). H5Pget_fapl_mpio on a
 * list of any other MPI driver (one that reports H5FD_FEAT_HAS_MPI: multifile, the DSM) answers as MPI-IO
 * would, with the list's communicator and info (copies, which the caller frees), where
 * libhdf5 says "VFL driver is not MPI-I/O". Preload it per rank, not into the launcher:
 *
 *   mpiexec -n 4 env LD_PRELOAD=<prefix>/lib/libh5mf_preload.so HDF5_DRIVER=multifile \
 *           HDF5_PLUGIN_PATH=<prefix>/lib/plugin ior -a HDF5 ...
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef herr_t (*set_fapl_mpio_fn)(hid_t, MPI_Comm, MPI_Info);
typedef herr_t (*get_fapl_mpio_fn)(hid_t, MPI_Comm *, MPI_Info *);

static int
mpi_driver(const char *name)
{
    return name && (!strcmp(name, "multifile") || !strcmp(name, "dsm"));
}

/* the MPI driver to take MPI-IO's place, or NULL: H5MF_MPIO_DRIVER (only the program's
 * MPI-IO lists change; default lists stay HDF5's serial driver, as with MPI-IO), else
 * HDF5_DRIVER (which HDF5 applies to default lists too) */
static const char *
driver_requested(void)
{
    const char *mpio = getenv("H5MF_MPIO_DRIVER"), *driver = getenv("HDF5_DRIVER");
    return mpi_driver(mpio) ? mpio : mpi_driver(driver) ? driver : NULL;
}

static void *
next_symbol(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (!fn)
        fprintf(stderr, "h5mf_preload: %s not found after the preloaded library: %s\n", name, dlerror());
    return fn;
}

herr_t
H5Pset_fapl_mpio(hid_t fapl, MPI_Comm comm, MPI_Info info)
{
    const char *driver = driver_requested();
    if (driver) {
        if (H5Pset_mpi_params(fapl, comm, info) < 0)
            return -1;
        return H5Pset_driver_by_name(fapl, driver, getenv("HDF5_DRIVER_CONFIG"));
    }
    static set_fapl_mpio_fn real;
    if (!real && !(real = (set_fapl_mpio_fn)next_symbol("H5Pset_fapl_mpio")))
        return -1;
    return real(fapl, comm, info);
}

/* a list of an MPI driver that is not MPI-IO's (the substitution above, or the DSM) */
static int
other_mpi_driver(hid_t fapl)
{
    hid_t         driver = H5Pget_driver(fapl);
    unsigned long flags  = 0;
    return driver >= 0 && driver != H5FD_MPIO && H5FDdriver_query(driver, &flags) >= 0 &&
           (flags & H5FD_FEAT_HAS_MPI);
}

/* applications read back what they set: for another MPI driver's list, answer with its
 * communicator and info as MPI-IO would */
herr_t
H5Pget_fapl_mpio(hid_t fapl, MPI_Comm *comm, MPI_Info *info)
{
    if (other_mpi_driver(fapl)) { /* either may be NULL, as for MPI-IO */
        MPI_Comm c = MPI_COMM_NULL;
        MPI_Info i = MPI_INFO_NULL;
        if (H5Pget_mpi_params(fapl, &c, &i) < 0)
            return -1;
        if (comm)
            *comm = c;
        else if (c != MPI_COMM_NULL)
            MPI_Comm_free(&c);
        if (info)
            *info = i;
        else if (i != MPI_INFO_NULL)
            MPI_Info_free(&i);
        return 0;
    }
    static get_fapl_mpio_fn real;
    if (!real && !(real = (get_fapl_mpio_fn)next_symbol("H5Pget_fapl_mpio")))
        return -1;
    return real(fapl, comm, info);
}
