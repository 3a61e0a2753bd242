/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_format.h - the on-disk format of a multifile directory (metafile version 2,
 * index version 2; metafiles and indexes of version 1 are read too).
 *
 * A multifile "file" NAME is a directory holding
 *   metafile        text, written atomically (temporary file + rename) by rank 0:
 *                     h5stack-multifile 3
 *                     ranks <P>          rank files 0..P-1 (a session continued by more ranks
 *                                        than wrote the directory adds files)
 *                     state writing|complete
 *                     committed <C>      epochs 0..C-1 are complete (all ranks flushed)
 *                     eoa <bytes>        HDF5's end of address space at the last commit
 *                     records <N>        records of all ranks in epochs 0..C-1 (version 2):
 *                                        a reader that finds fewer or more refuses
 *                     run <16 hex>       the write session's identity, drawn at creation
 *                                        (version 3; 0: a directory created before it);
 *                                        every index header carries its low 32 bits, so
 *                                        files of another directory are refused
 *                     crc32 <8 hex digits of everything above>
 *   <r>             rank r's data: every byte rank r wrote, appended; a record of 64 KiB
 *                   or more starts at a position congruent to its file address modulo
 *                   4096 (index version 2), the bytes skipped are a hole
 *   <r>.offset      rank r's index: a 32-byte header (its `ranks`: the rank files of the
 *                   session that made it, never more than the metafile's; version 3: the run's identity in
 *                   place of the upper halves of record size and checksum kind), then one 48-byte record per
 *                   contiguous run of writes, appended (little-endian, see mf_record_t).
 *                   Index version 2: while its epoch lasts, the last record may be
 *                   rewritten in place, longer (a write continued it in the file and in
 *                   the data file); its checksum then covers all its bytes. A reader of a
 *                   live index reads the last record it delivered again (mf_index.h).
 *
 * The reconstructed file is the replay of all records of committed epochs in the
 * order (epoch, stamp, rank, record number): later records win byte by byte.
 * Every structure carries a checksum; readers reject versions they do not know.
 * This module has no HDF5 or MPI dependency: the h5mf tool uses it too.
 */
#ifndef MF_FORMAT_H
#define MF_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define MF_FORMAT_VERSION    3 /* of the index files written; versions 1 and 2 are read too */
#define MF_META_VERSION      3 /* of the metafile; version 1 has no record count, 2 no run */
#define MF_METAFILE_NAME     "metafile"
#define MF_METAFILE_MAGIC    "h5stack-multifile"
#define MF_INDEX_MAGIC       "H5MFIDX\0"
#define MF_INDEX_HEADER_SIZE 32
#define MF_RECORD_SIZE       48
#define MF_ERRMSG_SIZE       1024
#define MF_DATA_CRC32C       2 /* the only data checksum of format 1 */

/* record flags */
#define MF_REC_TRUNCATE 0x1 /* end of file set to addr: bytes at and above addr vanish */

typedef enum { MF_STATE_WRITING = 0, MF_STATE_COMPLETE = 1 } mf_state_t;

typedef struct {
    uint32_t   version;
    uint32_t   ranks;
    mf_state_t state;
    uint32_t   committed; /* number of complete epochs */
    uint64_t   eoa;       /* end of address space at the last commit */
    uint64_t   records;   /* records of the committed epochs, all ranks (version >= 2) */
    uint64_t   run;       /* the write session's identity (version >= 3; 0: none) */
} mf_meta_t;

/* the part of a run's identity each index header carries */
#define MF_RUN_TAG(run) ((uint32_t)((run)&0xffffffffu))

typedef struct {
    uint64_t addr;     /* logical file address */
    uint64_t len;      /* bytes (0 for a truncate record) */
    uint64_t pos;      /* position of the bytes in the rank's data file */
    int64_t  stamp;    /* ordering within an epoch: ns on a clock common to all ranks */
    uint32_t epoch;    /* collective epoch the write belongs to */
    uint16_t type;     /* H5FD_mem_t of the write (for information) */
    uint16_t flags;    /* MF_REC_* */
    uint32_t data_crc; /* CRC-32C of the bytes, 0 when checksums are off (flag in header) */
} mf_record_t;

typedef struct {
    uint32_t version;
    uint32_t rank;
    uint32_t ranks;
    uint32_t record_size;
    uint32_t checksums; /* 0: none, MF_DATA_CRC32C: records carry a CRC-32C of their bytes */
    uint32_t run;       /* MF_RUN_TAG of the metafile's run (version >= 3; 0 before) */
} mf_index_header_t;

/* errors: functions return 0 on success, -1 with a message "<path>: <reason>" in err */
typedef char mf_err_t[MF_ERRMSG_SIZE];

/* crc32 (zlib) of the small structures: metafile, index header, records */
uint32_t mf_crc32(uint32_t crc, const void *buf, size_t len);
/* little-endian integers of the on-disk structures */
void     mf_put_u32(unsigned char *p, uint32_t v);
void     mf_put_u64(unsigned char *p, uint64_t v);
uint32_t mf_get_u32(const unsigned char *p);
uint64_t mf_get_u64(const unsigned char *p);
/* CRC-32C (Castagnoli, ISA-L, hardware-accelerated) of the data bytes; chainable from 0 */
uint32_t mf_data_crc(uint32_t crc, const void *buf, size_t len);

void mf_record_encode(const mf_record_t *rec, unsigned char out[MF_RECORD_SIZE]);
/* returns 0, or -1 when the record checksum does not match */
int mf_record_decode(const unsigned char in[MF_RECORD_SIZE], mf_record_t *rec);

void mf_index_header_encode(const mf_index_header_t *h, unsigned char out[MF_INDEX_HEADER_SIZE]);
int  mf_index_header_decode(const unsigned char in[MF_INDEX_HEADER_SIZE], mf_index_header_t *h,
                            const char *path, mf_err_t err);

/* metafile: write atomically (metafile.tmp.<pid> + rename) in the directory open as
 * dirfd (named dir in messages), so a directory renamed meanwhile is still the one
 * written; read and validate */
int mf_meta_write(int dirfd, const char *dir, const mf_meta_t *meta, int do_sync, mf_err_t err);
int mf_meta_read(const char *dir, mf_meta_t *meta, mf_err_t err);
/* a new run identity: random, never 0 */
uint64_t mf_new_run(void);
/* open a file of a directory for reading (dirfd, or AT_FDCWD and a path): a regular
 * file only (a FIFO or device in its place would block or mislead the reader), never
 * through a symbolic link; fd, or -1 with "<path>: <reason>" in err */
int mf_open_regular(int dirfd, const char *name, const char *path, mf_err_t err);

/* names of a rank's files in the directory (buffers of MF_NAME_SIZE), and their paths
 * (buffers of PATH_MAX) */
#define MF_NAME_SIZE 32
void mf_data_name(char *out, size_t n, unsigned rank);
void mf_index_name(char *out, size_t n, unsigned rank);
void mf_data_path(char *out, size_t n, const char *dir, unsigned rank);
void mf_index_path(char *out, size_t n, const char *dir, unsigned rank);

/* is path a directory that holds a metafile? 1 yes, 0 no */
int mf_is_multifile(const char *path);
/* does the file begin with HDF5's superblock signature (at 0, 512, 1024, ... as HDF5
 * looks for it)? 1 yes, 0 no */
int mf_is_hdf5_fd(int fd);
int mf_is_hdf5(const char *path);
/* a reconstructed file that HDF5 will open: its signature, and a superblock whose end of
 * file is within the file (HDF5 refuses a "truncated file"); 0, or -1 with the reason */
int mf_check_hdf5(const char *path, mf_err_t err);

/* full pwrite/pread that retry on EINTR and short transfers; 0 or -1 (errno set) */
int mf_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
/* returns bytes read (short only at end of file) or -1 */
long long mf_pread_all(int fd, void *buf, size_t len, uint64_t off);

#endif
