/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * nc_reopen FILE - a netCDF-4 file written in parallel, closed, reopened and appended to,
 * as a restarted model run does (netCDF-C's own API only; the driver comes from the
 * environment: HDF5_DRIVER with the preload library, or MPI-IO).
 *   1. nc_create_par: dimensions time (unlimited) x y (ROWS per rank) x x; a variable
 *      "t" (double) and a global attribute; each rank writes its rows of step 0
 *      (collective access), closes;
 *   2. nc_open_par read-write: steps 1 and 2 appended along time (collective access,
 *      as netCDF requires to extend a dimension), step 1 written again independently,
 *      an attribute added, closed;
 *   3. nc_open_par read-only: every value of steps 0..2 against the model, on every
 *      rank (each rank reads the whole variable: other ranks' rows too), the time
 *      dimension's length 3, the attributes.
 * Prints (rank 0) mpi-ranks, mpi-library, netcdf-library, then "nc_reopen: ok (N ranks,
 * 3 steps)"; any difference: the first one, exit 1.
 */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS  4
#define NX    6
#define STEPS 3

static int rank_g, size_g;

static void
check(int status, const char *what)
{
    if (status != NC_NOERR) {
        fprintf(stderr, "nc_reopen: rank %d: %s: %s\n", rank_g, what, nc_strerror(status));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static double
model(int step, size_t y, size_t x)
{
    return step * 1e6 + (double)y * 1000 + (double)x;
}

static void
write_step(int nc, int var, int step, int collective)
{
    double v[ROWS][NX];
    size_t start[3] = {(size_t)step, (size_t)rank_g * ROWS, 0}, count[3] = {1, ROWS, NX};
    for (size_t y = 0; y < ROWS; y++)
        for (size_t x = 0; x < NX; x++)
            v[y][x] = model(step, start[1] + y, x);
    check(nc_var_par_access(nc, var, collective ? NC_COLLECTIVE : NC_INDEPENDENT), "nc_var_par_access");
    check(nc_put_vara_double(nc, var, start, count, &v[0][0]), "nc_put_vara_double");
}

static void
create(const char *path)
{
    int nc, dims[3], var;
    check(nc_create_par(path, NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &nc), "nc_create_par");
    check(nc_def_dim(nc, "time", NC_UNLIMITED, &dims[0]), "nc_def_dim time");
    check(nc_def_dim(nc, "y", (size_t)size_g * ROWS, &dims[1]), "nc_def_dim y");
    check(nc_def_dim(nc, "x", NX, &dims[2]), "nc_def_dim x");
    check(nc_def_var(nc, "t", NC_DOUBLE, 3, dims, &var), "nc_def_var");
    check(nc_put_att_text(nc, NC_GLOBAL, "title", 9, "nc_reopen"), "nc_put_att_text");
    check(nc_enddef(nc), "nc_enddef");
    write_step(nc, var, 0, 1);
    check(nc_close(nc), "nc_close after create");
}

static void
append(const char *path)
{
    int nc, var;
    check(nc_open_par(path, NC_WRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &nc), "nc_open_par read-write");
    check(nc_inq_varid(nc, "t", &var), "nc_inq_varid");
    write_step(nc, var, 1, 1); /* extending the unlimited dimension is collective */
    write_step(nc, var, 2, 1);
    write_step(nc, var, 1, 0); /* and an independent write over records already there */
    check(nc_redef(nc), "nc_redef");
    check(nc_put_att_int(nc, NC_GLOBAL, "steps", NC_INT, 1, (int[]){STEPS}), "nc_put_att_int");
    check(nc_enddef(nc), "nc_enddef");
    check(nc_close(nc), "nc_close after append");
}

static long
verify(const char *path)
{
    int    nc, var, dim, steps = 0;
    size_t len, ny = (size_t)size_g * ROWS;
    long   wrong = 0;
    check(nc_open_par(path, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &nc), "nc_open_par read-only");
    check(nc_inq_dimid(nc, "time", &dim) || nc_inq_dimlen(nc, dim, &len), "time");
    check(nc_get_att_int(nc, NC_GLOBAL, "steps", &steps), "the attribute added on reopen");
    if (len != STEPS || steps != STEPS) {
        fprintf(stderr, "nc_reopen: rank %d: %zu steps, attribute %d; expected %d\n", rank_g, len, steps,
                STEPS);
        wrong++;
    }
    double *v = malloc(STEPS * ny * NX * sizeof *v);
    check(nc_inq_varid(nc, "t", &var), "nc_inq_varid");
    check(nc_var_par_access(nc, var, NC_COLLECTIVE), "nc_var_par_access");
    check(nc_get_var_double(nc, var, v), "nc_get_var_double");
    for (int s = 0; s < STEPS; s++)
        for (size_t y = 0; y < ny; y++)
            for (size_t x = 0; x < NX; x++) {
                double got = v[((size_t)s * ny + y) * NX + x];
                if (got != model(s, y, x) && wrong++ == 0)
                    fprintf(stderr, "nc_reopen: rank %d: t[%d][%zu][%zu] = %g, expected %g\n", rank_g, s, y,
                            x, got, model(s, y, x));
            }
    free(v);
    check(nc_close(nc), "nc_close after reading");
    return wrong;
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    if (argc != 2) {
        fprintf(stderr, "usage: nc_reopen FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank_g == 0) { /* what ran: the ranks, the MPI library, netCDF's version */
        char library[MPI_MAX_LIBRARY_VERSION_STRING];
        int  len;
        MPI_Get_library_version(library, &len);
        library[strcspn(library, "\r\n")] = '\0';
        printf("mpi-ranks: %d\nmpi-library: %s\nnetcdf-library: %s\n", size_g, library, nc_inq_libvers());
    }
    create(argv[1]);
    append(argv[1]);
    long wrong = verify(argv[1]);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank_g == 0 && wrong == 0)
        printf("nc_reopen: ok (%d ranks, %d steps)\n", size_g, STEPS);
    MPI_Finalize();
    return wrong ? 1 : 0;
}
