/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_fapl.c - a driver's options, communicator and info from an access list (see
 * vfd_fapl.h).
 */
#include "vfd_fapl.h"

#include <stdio.h>
#include <string.h>

void
vfd_fapl_info(hid_t fapl, uint32_t magic, void *opt, size_t size, vfd_defaults_fn defaults)
{
    const void *cur = NULL;
    H5E_BEGIN_TRY
    {
        cur = H5Pget_driver_info(fapl);
    }
    H5E_END_TRY
    if (cur && !memcmp(cur, &magic, sizeof magic))
        memcpy(opt, cur, size);
    else
        defaults(opt);
}

int
vfd_fapl_options(hid_t fapl, uint32_t magic, void *opt, size_t size, vfd_defaults_fn defaults,
                 const char *keys, vfd_option_fn fn, char *err, size_t len)
{
    char    config[VFD_OPTIONS_MAX], why[512];
    ssize_t config_len = -1;
    vfd_fapl_info(fapl, magic, opt, size, defaults);
    H5E_BEGIN_TRY
    {
        config_len = H5Pget_driver_config_str(fapl, config, sizeof config);
    }
    H5E_END_TRY
    if (config_len <= 0)
        return 0;
    if (config_len >= (ssize_t)sizeof config) /* cut by HDF5: never parsed */
        snprintf(why, sizeof why, "longer than %zu characters", sizeof config - 1);
    else if (vfd_options_each(config, keys, fn, opt, why, sizeof why) == 0)
        return 0;
    snprintf(err, len, "driver configuration '%s': %s", config, why);
    return -1;
}

int
vfd_fapl_mpi(hid_t fapl, MPI_Comm *comm, MPI_Info *info)
{
    herr_t got = -1;
    *comm      = MPI_COMM_NULL;
    *info      = MPI_INFO_NULL;
    H5E_BEGIN_TRY
    {
        got = H5Pget_mpi_params(fapl, comm, info);
    }
    H5E_END_TRY
    return got >= 0 && *comm != MPI_COMM_NULL;
}
