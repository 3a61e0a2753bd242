/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_crc32c.h - CRC-32C (Castagnoli, reflected, no pre- or post-inversion: the value of
 * ISA-L's crc32_iscsi) without ISA-L, at close to the processor's speed.
 */
#ifndef MF_CRC32C_H
#define MF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* the CRC of buf[0..len) continued from crc (0 to start) */
uint32_t mf_crc32c(uint32_t crc, const void *buf, size_t len);

/* the same, one byte at a time: the reference the tests compare with */
uint32_t mf_crc32c_bytewise(uint32_t crc, const void *buf, size_t len);

#endif
