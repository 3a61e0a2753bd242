/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_dsm: the DSM driver's MPMD coupling, looked up at run time (see pw_dsm.h). */
#include "pw_dsm.h"

#include <dlfcn.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PW_DSM_LIBRARY "libh5fd_dsm.so"

int
pw_dsm_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--driver=dsm") ||
            (!strcmp(argv[i], "--driver") && i + 1 < argc && !strcmp(argv[i + 1], "dsm")))
            return 1;
    return 0;
}

int
pw_dsm_mpmd(const char *driver, const char *driver_config)
{
    return !strcmp(driver, "dsm") && !(driver_config && strstr(driver_config, "contact="));
}

/* the DSM library on HDF5's plugin search path (HDF5_PLUGIN_PATH, else HDF5's default):
 * its handle, or NULL with err set */
static void *
open_library(char *err, size_t errlen)
{
    char     searched[8192] = "";
    unsigned n              = 0;
    if (H5PLsize(&n) < 0)
        n = 0;
    for (unsigned i = 0; i < n; i++) {
        char dir[4096], path[4200];
        if (H5PLget(i, dir, sizeof dir) <= 0)
            continue;
        size_t used = strlen(searched);
        snprintf(searched + used, sizeof searched - used, "%s%s", used ? ":" : "", dir);
        snprintf(path, sizeof path, "%s/%s", dir, PW_DSM_LIBRARY);
        if (access(path, R_OK) != 0)
            continue;
        void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (!lib)
            snprintf(err, errlen, "--driver dsm: %s: %s", path, dlerror());
        return lib;
    }
    snprintf(
        err, errlen,
        "--driver dsm: the DSM driver's %s is not on HDF5's plugin path (%s): install hdf5-vfd-dsm and put "
        "its lib/plugin on HDF5_PLUGIN_PATH",
        PW_DSM_LIBRARY, *searched ? searched : "empty");
    return NULL;
}

int
pw_dsm_clients(MPI_Comm *clients, char *err, size_t errlen)
{
    void *lib = open_library(err, errlen);
    if (!lib)
        return -1;
    int (*mpmd_clients)(MPI_Comm *) = NULL;
    *(void **)&mpmd_clients         = dlsym(lib, "H5FD_dsm_mpmd_clients");
    if (!mpmd_clients) {
        snprintf(err, errlen, "--driver dsm: %s has no H5FD_dsm_mpmd_clients (not the h5stack DSM driver?)",
                 PW_DSM_LIBRARY);
        return -1;
    }
    if (mpmd_clients(clients) < 0) { /* the library printed the reason */
        snprintf(err, errlen, "--driver dsm: no DSM servers to couple with (reason above)");
        return -1;
    }
    return 0; /* the library stays loaded: HDF5 uses it as the driver */
}
