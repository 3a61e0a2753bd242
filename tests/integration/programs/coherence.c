/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* coherence: does a read on one node see what another node wrote before a barrier?
 *
 * Two ranks, one file FILE of 64 KiB. Each round: rank 1 reads the block (its client may
 * cache it), barrier, rank 0 overwrites the block with the round's number, barrier, rank 1
 * reads it again: POSIX (and Lustre, GPFS) give the new bytes. MODE: plain (the same
 * descriptor), reopen (rank 1 opens the file again before its second read), direct
 * (rank 1's second read with O_DIRECT). Rank 1 prints
 *   coherence: MODE: S of N reads after the writer's barrier were stale
 * Used by tests/integration/test_cluster.py with the ranks on different nodes.
 *
 * usage: srun -N2 -n2 coherence FILE ROUNDS MODE
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 65536 };

/* rank 1's second read of a round, as MODE says; -1 on an error */
static int
read_again(const char *path, int *fd, const char *mode, unsigned char *got)
{
    if (!strcmp(mode, "reopen")) {
        close(*fd);
        *fd = open(path, O_RDWR);
    }
    if (strcmp(mode, "direct"))
        return pread(*fd, got, N, 0) == N ? 0 : -1;
    void *aligned = NULL;
    int   d = open(path, O_RDONLY | O_DIRECT), rc = -1;
    if (d >= 0 && !posix_memalign(&aligned, 4096, N) && pread(d, aligned, N, 0) == N) {
        memcpy(got, aligned, N);
        rc = 0;
    }
    free(aligned);
    if (d >= 0)
        close(d);
    return rc;
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: coherence FILE ROUNDS plain|reopen|direct\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char          *path = argv[1], *mode = argv[3];
    const int            rounds = atoi(argv[2]);
    static unsigned char buf[N], got[N];
    if (rank == 0) {
        int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
        if (fd < 0 || pwrite(fd, buf, N, 0) != N) {
            perror(path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = open(path, O_RDWR), stale = 0, failed = fd < 0;
    for (int r = 1; r <= rounds; r++) {             /* every rank every round: no barrier left waiting */
        if (rank == 1 && pread(fd, got, N, 0) != N) /* the reader's client may cache it now */
            failed = 1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            memset(buf, r & 0xff, N);
            failed |= pwrite(fd, buf, N, 0) != N;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            failed |= read_again(path, &fd, mode, got) < 0;
            stale += got[0] != (r & 0xff) || got[N - 1] != (r & 0xff);
        }
    }
    if (failed) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 1)
        printf("coherence: %s: %d of %d reads after the writer's barrier were stale\n", mode, stale, rounds);
    close(fd);
    MPI_Finalize();
    return 0;
}
