/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* test_stall - a DSM server that hosts but never answers: the clients must give up
 * after their timeout with an error, never hang (tests/faults.sh). */
#include "H5FDdsm.h"

#include <stdio.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    char          err[1024];
    h5dsm_host_t *host = NULL;
    if (h5dsm_host_start(&host, "linear", 1 << 20, NULL, err, sizeof err) < 0) {
        fprintf(stderr, "test_stall: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sleep(120); /* the clients' MPI_Abort ends the job long before */
    fprintf(stderr, "test_stall: the clients never gave up\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}
