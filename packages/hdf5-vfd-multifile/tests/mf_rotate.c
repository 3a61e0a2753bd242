/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_rotate - collective writes that HDF5 carries out independently underneath, whose
 * writers rotate: in round w rank r writes block (r + w) % P of a contiguous dataset of
 * doubles from ints with selection I/O off (HDF5 breaks collective I/O for the type
 * conversion), so each block is rewritten in every round by another rank, ordered only
 * by the collective calls. A collective read after the last round must give the last
 * round's values. Run with clocks that differ between ranks (tests/rotate.sh), since
 * the driver's order must follow the program, not the clocks.
 * Usage: mpiexec -n N mf_rotate DIR [WAIT_S]  (WAIT_S: seconds before the first write,
 * for the clocks to drift apart; default 1)
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define B      512
#define ROUNDS 6

static int rank, size;

static void
check(herr_t rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "rotate: rank %d: %s failed\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[4096];
    snprintf(path, sizeof path, "%s/rotate.h5", argc > 1 ? argv[1] : ".");
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    check(H5Pset_mpi_params(fapl, MPI_COMM_WORLD, MPI_INFO_NULL), "H5Pset_mpi_params");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl); /* HDF5_DRIVER selects the driver */
    check(f, "H5Fcreate");
    hsize_t n = (hsize_t)B * size, b = B;
    hid_t   fs = H5Screate_simple(1, &n, NULL), ms = H5Screate_simple(1, &b, NULL);
    hid_t   d = H5Dcreate2(f, "x", H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d, "H5Dcreate2");
    hid_t wx = H5Pcreate(H5P_DATASET_XFER), rx = H5Pcreate(H5P_DATASET_XFER);
    check(H5Pset_dxpl_mpio(wx, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    check(H5Pset_selection_io(wx, H5D_SELECTION_IO_MODE_OFF), "H5Pset_selection_io");
    check(H5Pset_dxpl_mpio(rx, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    usleep((useconds_t)((argc > 2 ? atof(argv[2]) : 1.0) * 1e6));
    int    vals[B];
    double all[B * 64];
    for (int w = 0; w < ROUNDS; w++) {
        hsize_t start = (hsize_t)((rank + w) % size) * B;
        for (int i = 0; i < B; i++)
            vals[i] = w * 100000 + (int)start + i;
        check(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &b, NULL), "H5Sselect_hyperslab");
        check(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, wx, vals), "H5Dwrite");
    }
    uint32_t local = 0, global = 0;
    check(H5Pget_mpio_no_collective_cause(wx, &local, &global), "H5Pget_mpio_no_collective_cause");
    if (size > 64 || !(global & H5D_MPIO_DATATYPE_CONVERSION)) {
        fprintf(stderr, "rotate: the writes were not made independent by HDF5 (cause %#x)\n",
                (unsigned)global);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    check(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, rx, all), "H5Dread");
    long bad = 0, total = 0;
    for (hsize_t i = 0; i < n; i++)
        if (all[i] != (double)((ROUNDS - 1) * 100000 + (int)i) && bad++ == 0)
            fprintf(stderr, "rotate: rank %d: element %llu is %g, the last round wrote %d\n", rank,
                    (unsigned long long)i, all[i], (ROUNDS - 1) * 100000 + (int)i);
    MPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    H5Dclose(d);
    H5Fclose(f);
    if (rank == 0 && total)
        printf("rotate: %ld stale values\n", total);
    else if (rank == 0)
        printf("rotate: ok (%d ranks, %d rounds)\n", size, ROUNDS);
    MPI_Finalize();
    return total != 0;
}
