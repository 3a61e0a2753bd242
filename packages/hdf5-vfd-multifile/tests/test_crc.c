/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_crc - mf_crc32c (the CRC-32C of builds without ISA-L) equals the byte-wise
 * reference, and ISA-L's crc32_iscsi where the build has it: every length from 0 to
 * past three interleaved blocks, unaligned starts, continued CRCs, random data.
 */
#include "mf_crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#ifdef MF_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#define N (3 * 4096 * 3 + 77)

static int
check(const unsigned char *p, size_t len, uint32_t seed)
{
    uint32_t want = mf_crc32c_bytewise(seed, p, len), got = mf_crc32c(seed, p, len);
    if (got != want) {
        fprintf(stderr, "crc: length %zu, offset %zu, seed %08x: %08x, expected %08x\n", len,
                (size_t)((uintptr_t)p % 64), seed, got, want);
        return 1;
    }
#ifdef MF_HAVE_ISAL
    if (crc32_iscsi((unsigned char *)p, (int)len, seed) != want) {
        fprintf(stderr, "crc: length %zu: ISA-L differs from the reference\n", len);
        return 1;
    }
#endif
    return 0;
}

int
main(void)
{
    static unsigned char buf[N + 64];
    srand(7);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)rand();
    int bad = 0;
    for (size_t len = 0; len <= N && bad < 5; len += len < 64 ? 1 : 997)
        for (size_t off = 0; off < 9; off++)
            bad += check(buf + off, len, off ? (uint32_t)rand() : 0);
    /* known value: CRC-32C of "123456789" with the usual inversions is e3069283 */
    uint32_t v = ~mf_crc32c(~0u, "123456789", 9);
    if (v != 0xe3069283u) {
        fprintf(stderr, "crc: check value %08x, expected e3069283\n", v);
        bad++;
    }
    /* a CRC continued over two pieces equals the CRC of the whole */
    if (mf_crc32c(mf_crc32c(0, buf, 5000), buf + 5000, N - 5000) != mf_crc32c(0, buf, N)) {
        fprintf(stderr, "crc: continued CRC differs\n");
        bad++;
    }
    if (bad)
        return 1;
    printf("crc: ok\n");
    return 0;
}
