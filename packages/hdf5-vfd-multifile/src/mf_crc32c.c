/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_crc32c.c - CRC-32C for builds without ISA-L (the driver built into libhdf5, or a
 * build without the library). Byte-wise tables run at ~0.5 GB/s, far below the rate a
 * rank writes at; so:
 *   - on x86-64 with SSE4.2 (checked at run time), the CRC32 instruction on three
 *     interleaved streams of MF_CRC_BLOCK bytes, joined by multiplying by x^(8 n) mod P;
 *   - elsewhere, slicing-by-8 tables.
 * Every path computes the value of mf_crc32c_bytewise (tests/test_crc.c).
 */
#include "mf_crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MF_CRC_HW 1
#include <nmmintrin.h>
#endif

#define MF_CRC_POLY  0x82F63B78u /* reflected Castagnoli polynomial */
#define MF_CRC_BLOCK 4096

static uint32_t       slice[8][256];
static uint32_t       x2n[32];     /* x^(2^k) mod P */
static uint32_t       block_shift; /* x^(8 MF_CRC_BLOCK) mod P */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

/* a * b mod P, reflected (zlib's multmodp) */
static uint32_t
multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ MF_CRC_POLY : b >> 1;
    }
    return p;
}

/* x^(8 n) mod P: what a CRC is multiplied by to move it past n more bytes */
static uint32_t
shift_bytes(size_t n)
{
    uint32_t p = 1u << 31; /* x^0 */
    for (unsigned k = 3; n; n >>= 1, k++)
        if (n & 1)
            p = multmodp(x2n[k & 31], p);
    return p;
}

static void
make_tables(void)
{
#ifdef MF_CRC_HW
    __builtin_cpu_init();
#endif
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ MF_CRC_POLY : c >> 1;
        slice[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            slice[t][i] = (slice[t - 1][i] >> 8) ^ slice[0][slice[t - 1][i] & 0xff];
    x2n[0] = 1u << 30; /* x^1 */
    for (int k = 1; k < 32; k++)
        x2n[k] = multmodp(x2n[k - 1], x2n[k - 1]);
    block_shift = shift_bytes(MF_CRC_BLOCK);
}

uint32_t
mf_crc32c_bytewise(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&tables_once, make_tables);
    const unsigned char *p = buf;
    while (len--)
        crc = slice[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

static uint32_t
crc_sliced(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo =
            crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = slice[7][lo & 0xff] ^ slice[6][(lo >> 8) & 0xff] ^ slice[5][(lo >> 16) & 0xff] ^
              slice[4][lo >> 24] ^ slice[3][p[4]] ^ slice[2][p[5]] ^ slice[1][p[6]] ^ slice[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = slice[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#ifdef MF_CRC_HW
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t w;
    while (len >= 3 * MF_CRC_BLOCK) { /* three independent streams keep the unit busy */
        uint64_t a = crc, b = 0, c = 0;
        for (size_t i = 0; i < MF_CRC_BLOCK; i += 8) {
            memcpy(&w, p + i, 8);
            a = _mm_crc32_u64(a, w);
            memcpy(&w, p + MF_CRC_BLOCK + i, 8);
            b = _mm_crc32_u64(b, w);
            memcpy(&w, p + 2 * MF_CRC_BLOCK + i, 8);
            c = _mm_crc32_u64(c, w);
        }
        crc = multmodp(block_shift, multmodp(block_shift, (uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
        p += 3 * MF_CRC_BLOCK;
        len -= 3 * MF_CRC_BLOCK;
    }
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
    }
    crc = (uint32_t)c;
    while (len--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#endif

uint32_t
mf_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&tables_once, make_tables);
#ifdef MF_CRC_HW
    if (__builtin_cpu_supports("sse4.2"))
        return crc_hw(crc, buf, len);
#endif
    return crc_sliced(crc, buf, len);
}
