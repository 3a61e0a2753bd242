/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_driver.c - file access property lists per driver (see fz_driver.h).
 */
#include "fz_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* a library on HDF5's plugin search path, loaded; NULL with err */
static void *
plugin_library(const char *file, char *err, size_t errlen)
{
    unsigned n = 0;
    if (H5PLsize(&n) < 0)
        n = 0;
    for (unsigned i = 0; i < n; i++) {
        char dir[4096], path[4200];
        if (H5PLget(i, dir, sizeof dir) <= 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, file);
        if (access(path, R_OK) != 0)
            continue;
        void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (!lib)
            snprintf(err, errlen, "%s: %s", path, dlerror());
        return lib;
    }
    snprintf(err, errlen, "%s is not on HDF5's plugin path (HDF5_PLUGIN_PATH)", file);
    return NULL;
}

/* a symbol of libhdf5 (patched twins) or else of a driver library on the plugin path */
static void *
lookup(const char *symbol, const char *library, char *err, size_t errlen)
{
    void *sym = dlsym(RTLD_DEFAULT, symbol);
    if (sym || !library)
        return sym;
    void *lib = plugin_library(library, err, errlen);
    return lib ? dlsym(lib, symbol) : NULL;
}

int
fz_driver_comm(const char *driver, MPI_Comm *comm, char *err, size_t errlen)
{
    *comm = MPI_COMM_WORLD;
    if (strcmp(driver, "dsm") != 0)
        return 0;
    int (*clients)(MPI_Comm *) = NULL;
    *(void **)&clients         = lookup("H5FD_dsm_mpmd_clients", "libh5fd_dsm.so", err, errlen);
    if (!clients) {
        if (!*err)
            snprintf(err, errlen, "--driver dsm: libh5fd_dsm.so has no H5FD_dsm_mpmd_clients");
        return -1;
    }
    if (clients(comm) < 0) {
        snprintf(err, errlen, "--driver dsm: no DSM servers to couple with (reason above)");
        return -1;
    }
    return 0;
}

hid_t
fz_driver_fapl(const char *driver, const char *config, MPI_Comm comm, char *err, size_t errlen)
{
    hid_t  fapl = H5Pcreate(H5P_FILE_ACCESS);
    herr_t rc   = -1;
    if (!strcmp(driver, "mpio"))
        rc = H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
    else if (!strcmp(driver, "default"))
        rc = H5Pset_mpi_params(fapl, comm, MPI_INFO_NULL);
    else if (!strcmp(driver, "sec2"))
        rc = H5Pset_fapl_sec2(fapl);
    else if (!strcmp(driver, "dsm")) {
        rc = H5Pset_mpi_params(fapl, comm, MPI_INFO_NULL);
        if (rc >= 0)
            rc = H5Pset_driver_by_name(fapl, "dsm", config);
    }
    else if (!strcmp(driver, "multifile") || !strcmp(driver, "mpiposix")) {
        int mpiposix                                = !strcmp(driver, "mpiposix");
        herr_t (*set_mf)(hid_t, MPI_Comm, MPI_Info) = NULL;
        herr_t (*set_mp)(hid_t, MPI_Comm, int)      = NULL;
        herr_t (*set_options)(hid_t, const char *)  = NULL;
        const char *lib                             = mpiposix ? NULL : "libh5fd_multifile.so";
        *(void **)(mpiposix ? (void *)&set_mp : (void *)&set_mf) =
            lookup(mpiposix ? "H5Pset_fapl_mpiposix" : "H5Pset_fapl_multifile", lib, err, errlen);
        *(void **)&set_options = lookup("H5Pset_multifile_options", lib, err, errlen);
        if (!(mpiposix ? (void *)set_mp : (void *)set_mf) || (config && !set_options)) {
            if (!*err)
                snprintf(err, errlen, "--driver %s: %s", driver,
                         mpiposix ? "this libhdf5 has no H5Pset_fapl_mpiposix (not a multifile-patched HDF5)"
                                  : "no H5Pset_fapl_multifile found");
            H5Pclose(fapl);
            return -1;
        }
        rc = mpiposix ? set_mp(fapl, comm, 0) : set_mf(fapl, comm, MPI_INFO_NULL);
        if (rc >= 0 && config)
            rc = set_options(fapl, config);
    }
    else {
        snprintf(err, errlen, "unknown --driver '%s' (mpio, default, multifile, mpiposix, dsm, sec2)",
                 driver);
        H5Pclose(fapl);
        return -1;
    }
    if (rc < 0) {
        snprintf(err, errlen, "--driver %s: setting up the file access list failed (HDF5's message above)",
                 driver);
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}
