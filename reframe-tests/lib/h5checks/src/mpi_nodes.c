/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* mpi_nodes: where the ranks of a job run, and whether they can talk across nodes.
 *
 * Rank 0 prints (h5checks/nodes.py reads these lines):
 *   mpi-nodes: N NAME,NAME...          distinct hostnames among the ranks (gethostname)
 *   mpi-rank-hosts: NAME,NAME...       the hostname of each rank, in rank order
 *   mpi-shared-comms: K SIZE,SIZE...   communicators of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
 *   mpi-p2p: ok R ranks, C crossings   a ring of 1 MiB messages (each rank to the next), every
 *                                      byte checked; C of the R hops go from one node to another
 * and exits non-zero (MPI_Abort) when a message arrives wrong. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_LEN 64
#define MESSAGE (1 << 20)

static void fill(unsigned char *buf, int from)
{
    for (int i = 0; i < MESSAGE; i++)
        buf[i] = (unsigned char)(from * 31 + i * 7);
}

/* send 1 MiB to the next rank, receive from the previous one; 0 if it arrived intact */
static int ring(int rank, int size)
{
    unsigned char *out = malloc(MESSAGE), *in = malloc(MESSAGE), *want = malloc(MESSAGE);
    int            from = (rank + size - 1) % size, bad = 0;
    fill(out, rank);
    fill(want, from);
    MPI_Sendrecv(out, MESSAGE, MPI_BYTE, (rank + 1) % size, 7, in, MESSAGE, MPI_BYTE, from, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    bad = memcmp(in, want, MESSAGE) != 0;
    free(out);
    free(in);
    free(want);
    return bad;
}

/* "a,b,c" of the distinct names among n, in order of first appearance; their count */
static int distinct(const char *names, int n, char *list, size_t len)
{
    int count = 0;
    list[0]   = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = names + (size_t)i * NAME_LEN;
        int         seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(name, names + (size_t)j * NAME_LEN) == 0;
        if (!seen) {
            snprintf(list + strlen(list), len - strlen(list), "%s%s", count ? "," : "", name);
            count++;
        }
    }
    return count;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char host[NAME_LEN] = "";
    gethostname(host, sizeof host - 1);
    char *names = rank == 0 ? calloc((size_t)size, NAME_LEN) : NULL;
    MPI_Gather(host, NAME_LEN, MPI_CHAR, names, NAME_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);

    MPI_Comm shared;
    int      local_rank, local_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    MPI_Comm_rank(shared, &local_rank);
    MPI_Comm_size(shared, &local_size);
    int  leader_size = local_rank == 0 ? local_size : 0;
    int *sizes       = rank == 0 ? calloc((size_t)size, sizeof *sizes) : NULL;
    MPI_Gather(&leader_size, 1, MPI_INT, sizes, 1, MPI_INT, 0, MPI_COMM_WORLD);

    int bad = ring(rank, size), any_bad = 0;
    MPI_Reduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char list[4096];
        int  nodes = distinct(names, size, list, sizeof list);
        printf("mpi-nodes: %d %s\n", nodes, list);
        printf("mpi-rank-hosts: ");
        for (int r = 0; r < size; r++)
            printf("%s%s", r ? "," : "", names + (size_t)r * NAME_LEN);
        printf("\n");
        int  comms = 0;
        char sizes_list[4096] = "";
        for (int i = 0; i < size; i++)
            if (sizes[i] > 0)
                snprintf(sizes_list + strlen(sizes_list), sizeof sizes_list - strlen(sizes_list), "%s%d",
                         comms++ ? "," : "", sizes[i]);
        printf("mpi-shared-comms: %d %s\n", comms, sizes_list);
        int crossings = 0;
        for (int r = 0; r < size; r++)
            crossings += strcmp(names + (size_t)r * NAME_LEN, names + (size_t)((r + 1) % size) * NAME_LEN) != 0;
        if (any_bad) {
            printf("mpi-p2p: FAILED: a 1 MiB message of the ring arrived with wrong bytes\n");
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("mpi-p2p: ok %d ranks, %d crossings\n", size, crossings);
    }
    free(names);
    free(sizes);
    MPI_Comm_free(&shared);
    MPI_Finalize();
    return 0;
}
