/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_datatype - vfd_typed_transfer against MPI's own datatype engine: for each type T
 * of the kinds HDF5 builds (nested, negative memory displacements, resized, struct),
 * the bytes it hands over as memory pieces must be MPI_Pack's stream, and the places it
 * writes as file pieces must be those MPI_Unpack fills. Run on 1 rank.
 */
#include "vfd_datatype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPAN 4096
static unsigned char image[SPAN];
static int           failures;

static int
to_stream(void *ctx, uint64_t at, void *mem, size_t len)
{
    memcpy((unsigned char *)ctx + at, mem, len);
    return 0;
}

static int
to_image(void *ctx, uint64_t at, void *mem, size_t len)
{
    (void)ctx;
    if (at + len > SPAN)
        return -1;
    memcpy(image + at, mem, len);
    return 0;
}

/* memory side: T x count at base (SPAN/2 into src, so negative displacements stay inside) */
static void
check_memory(const char *name, MPI_Datatype t, int count)
{
    static unsigned char src[2 * SPAN], packed[SPAN], got[SPAN];
    char                 err[VFD_ERR_SIZE];
    int                  pos = 0, size;
    for (int i = 0; i < 2 * SPAN; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    MPI_Type_size(t, &size);
    MPI_Pack(src + SPAN, count, t, packed, SPAN, &pos, MPI_COMM_SELF);
    memset(got, 0, sizeof got);
    if (vfd_typed_transfer(t, (size_t)count, src + SPAN, MPI_BYTE, 0, to_stream, got, err) < 0 ||
        memcmp(got, packed, (size_t)pos) != 0) {
        printf("FAIL memory %s: %s\n", name, err);
        failures++;
    }
}

/* file side: count x size(T) bytes through the file view T */
static void
check_file(const char *name, MPI_Datatype t, int count)
{
    static unsigned char ramp[SPAN], expect[SPAN];
    char                 err[VFD_ERR_SIZE];
    int                  size, pos = 0;
    MPI_Type_size(t, &size);
    for (int i = 0; i < SPAN; i++)
        ramp[i] = (unsigned char)(i * 13 + 1);
    memset(expect, 0, sizeof expect);
    memset(image, 0, sizeof image);
    MPI_Unpack(ramp, SPAN, &pos, expect, count, t, MPI_COMM_SELF);
    if (vfd_typed_transfer(MPI_BYTE, (size_t)size * count, ramp, t, 0, to_image, NULL, err) < 0 ||
        memcmp(image, expect, SPAN) != 0) {
        printf("FAIL file %s: %s\n", name, err);
        failures++;
    }
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Datatype vec, hvec, hidx, blk, st, res, nest, pts, contig;
    int          lens[3] = {2, 1, 3}, idx[3] = {0, 5, 9};
    MPI_Aint     disp[3] = {0, 40, 100}, sdisp[3] = {-64, 8, 200};
    MPI_Datatype stypes[3];
    MPI_Type_vector(4, 3, 7, MPI_INT, &vec);
    MPI_Type_create_hvector(3, 2, 50, MPI_SHORT, &hvec);
    MPI_Type_create_hindexed(3, lens, disp, MPI_DOUBLE, &hidx);
    MPI_Type_create_indexed_block(3, 2, idx, MPI_FLOAT, &blk);
    stypes[0] = vec, stypes[1] = MPI_BYTE, stypes[2] = hvec;
    MPI_Type_create_struct(3, lens, sdisp, stypes, &st); /* a negative displacement */
    MPI_Type_create_resized(vec, 0, 200, &res);          /* tiles with a gap */
    MPI_Type_create_hvector(2, 1, 300, res, &nest);      /* nested */
    MPI_Aint pdisp[4] = {90, 30, 10, 0};                 /* points, last first */
    MPI_Type_create_hindexed_block(4, 1, pdisp, MPI_INT, &pts);
    MPI_Type_contiguous(100, MPI_BYTE, &contig);
    MPI_Datatype all[]   = {vec, hvec, hidx, blk, st, res, nest, pts, contig};
    const char  *names[] = {"vector",  "hvector", "hindexed", "indexed_block", "struct",
                            "resized", "nested",  "points",   "contiguous"};
    for (int i = 0; i < 9; i++) {
        MPI_Type_commit(&all[i]);
        check_memory(names[i], all[i], 2);
        if (i != 4 && i != 7) /* a file view needs displacements that never go down */
            check_file(names[i], all[i], 2);
    }
    /* a file type of no bytes for a transfer with bytes: refused with the reason */
    char         err[VFD_ERR_SIZE] = "";
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_BYTE, &empty);
    MPI_Type_commit(&empty);
    if (vfd_typed_transfer(MPI_BYTE, 8, image, empty, 0, to_image, NULL, err) == 0 ||
        !strstr(err, "no bytes")) {
        printf("FAIL empty file type accepted\n");
        failures++;
    }
    for (int i = 0; i < 9; i++)
        MPI_Type_free(&all[i]);
    MPI_Type_free(&empty);
    printf(failures ? "test_datatype: %d failure(s)\n" : "test_datatype: ok\n", failures);
    MPI_Finalize();
    return failures != 0;
}
