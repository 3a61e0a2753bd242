/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* mpio_probe FILE: which driver an application's H5Pset_fapl_mpio gets. Every rank
 * creates FILE through an access list of H5Pset_fapl_mpio, as an MPI application does,
 * and closes it; rank 0 prints "mpio-probe: multifile" when the driver wrote a multifile
 * file there (FILE beside its directory FILE.h5mf, or FILE a directory), else
 * "mpio-probe: mpio" (what was written stays). Exit 1 when the create fails. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int
is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int
main(int argc, char **argv)
{
    int  rank, ok = argc == 2;
    char dir[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = ok ? H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
    ok      = f >= 0 && H5Fclose(f) >= 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && ok) {
        snprintf(dir, sizeof dir, "%s.h5mf", argv[1]);
        printf("mpio-probe: %s\n", is_dir(dir) || is_dir(argv[1]) ? "multifile" : "mpio");
    }
    else if (rank == 0)
        fprintf(stderr, "mpio_probe: %s: the create failed\n", argc == 2 ? argv[1] : "(no FILE given)");
    H5Pclose(fapl);
    MPI_Finalize();
    return ok ? 0 : 1;
}
