/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_api_errors - the driver's public functions report a failure as HDF5's own API does:
 * through the application's automatic error handler (H5Eset_auto2), the error stack kept
 * until the next HDF5 call, the driver's reason on it.
 *
 *   mf_api_errors
 *
 * Prints "mf_api_errors: ok" when every function did.
 */
#include "H5FDmultifile.h"

#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int calls;

static herr_t
handler(hid_t stack, void *data)
{
    (void)stack;
    (void)data;
    calls++;
    return 0;
}

/* the innermost message of the current error stack */
static herr_t
first_message(unsigned n, const H5E_error2_t *e, void *out)
{
    if (n == 0)
        snprintf(out, 512, "%s", e->desc ? e->desc : "");
    return 0;
}

static int
reported(const char *what, herr_t rc, int before, const char *reason)
{
    char desc[512] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_message, desc);
    if (rc >= 0 || calls != before + 1 || !strstr(desc, reason)) {
        fprintf(stderr, "mf_api_errors: %s: rc %d, handler called %d time(s), first message '%s'\n", what,
                (int)rc, calls - before, desc);
        return 0;
    }
    return 1;
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Eset_auto2(H5E_DEFAULT, handler, NULL);
    H5FD_multifile_read_t mode;
    int                   ok = 1, before = calls;
    ok &= reported("H5Pset_multifile_options", H5Pset_multifile_options(fapl, "bogus=1"), before, "bogus");
    before = calls;
    ok &= reported("H5Pset_fapl_multifile", H5Pset_fapl_multifile(fapl, MPI_COMM_NULL, MPI_INFO_NULL), before,
                   "MPI_COMM_NULL");
    before = calls;
    ok &= reported("H5Pget_multifile_read_mode", H5Pget_multifile_read_mode(fapl, &mode), before,
                   "does not use the multifile driver");
    H5Pclose(fapl);
    if (ok)
        printf("mf_api_errors: ok\n");
    MPI_Finalize();
    return ok ? 0 : 1;
}
