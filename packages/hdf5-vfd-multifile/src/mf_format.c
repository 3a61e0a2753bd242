/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_format.c - encoding, decoding and checksums of the multifile on-disk format.
 */
#include "mf_format.h"
#include "mf_crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef MF_HAVE_ISAL
#include <isa-l/crc.h>
#endif
#include <zlib.h>

uint32_t
mf_crc32(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) { /* zlib takes uInt lengths */
        uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc        = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        len -= chunk;
    }
    return crc;
}

#ifdef MF_HAVE_ISAL
uint32_t
mf_data_crc(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) { /* ISA-L takes int lengths */
        int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
        crc       = crc32_iscsi((unsigned char *)p, chunk, crc);
        p += chunk;
        len -= (size_t)chunk;
    }
    return crc;
}
#else
/* without ISA-L (e.g. the driver built into libhdf5 by the patch): the same values */
uint32_t
mf_data_crc(uint32_t crc, const void *buf, size_t len)
{
    return mf_crc32c(crc, buf, len);
}
#endif

static void
put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
void
mf_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
void
mf_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t
get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
uint32_t
mf_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
uint64_t
mf_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* record layout: addr 0, len 8, pos 16, stamp 24, epoch 32, type 36, flags 38, data_crc 40, crc 44 */
void
mf_record_encode(const mf_record_t *rec, unsigned char out[MF_RECORD_SIZE])
{
    mf_put_u64(out + 0, rec->addr);
    mf_put_u64(out + 8, rec->len);
    mf_put_u64(out + 16, rec->pos);
    mf_put_u64(out + 24, (uint64_t)rec->stamp);
    mf_put_u32(out + 32, rec->epoch);
    put_u16(out + 36, rec->type);
    put_u16(out + 38, rec->flags);
    mf_put_u32(out + 40, rec->data_crc);
    mf_put_u32(out + 44, mf_crc32(0, out, 44));
}

int
mf_record_decode(const unsigned char in[MF_RECORD_SIZE], mf_record_t *rec)
{
    if (mf_get_u32(in + 44) != mf_crc32(0, in, 44))
        return -1;
    rec->addr     = mf_get_u64(in + 0);
    rec->len      = mf_get_u64(in + 8);
    rec->pos      = mf_get_u64(in + 16);
    rec->stamp    = (int64_t)mf_get_u64(in + 24);
    rec->epoch    = mf_get_u32(in + 32);
    rec->type     = get_u16(in + 36);
    rec->flags    = get_u16(in + 38);
    rec->data_crc = mf_get_u32(in + 40);
    return 0;
}

/* header layout: magic 0..7, version 8, rank 12, ranks 16, then versions 1-2:
 * record_size 20, checksums 24; version 3: record_size 20 (16 bits), checksums 22
 * (16 bits), run 24; crc 28 */
void
mf_index_header_encode(const mf_index_header_t *h, unsigned char out[MF_INDEX_HEADER_SIZE])
{
    memcpy(out, MF_INDEX_MAGIC, 8);
    mf_put_u32(out + 8, h->version);
    mf_put_u32(out + 12, h->rank);
    mf_put_u32(out + 16, h->ranks);
    if (h->version >= 3) {
        put_u16(out + 20, (uint16_t)h->record_size);
        put_u16(out + 22, (uint16_t)h->checksums);
        mf_put_u32(out + 24, h->run);
    }
    else {
        mf_put_u32(out + 20, h->record_size);
        mf_put_u32(out + 24, h->checksums);
    }
    mf_put_u32(out + 28, mf_crc32(0, out, 28));
}

int
mf_index_header_decode(const unsigned char in[MF_INDEX_HEADER_SIZE], mf_index_header_t *h, const char *path,
                       mf_err_t err)
{
    if (memcmp(in, MF_INDEX_MAGIC, 8) != 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: not a multifile index (bad magic)", path);
        return -1;
    }
    if (mf_get_u32(in + 28) != mf_crc32(0, in, 28)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: index header checksum mismatch (corrupt)", path);
        return -1;
    }
    h->version     = mf_get_u32(in + 8);
    h->rank        = mf_get_u32(in + 12);
    h->ranks       = mf_get_u32(in + 16);
    h->record_size = h->version >= 3 ? get_u16(in + 20) : mf_get_u32(in + 20);
    h->checksums   = h->version >= 3 ? get_u16(in + 22) : mf_get_u32(in + 24);
    h->run         = h->version >= 3 ? mf_get_u32(in + 24) : 0;
    if (h->checksums != 0 && h->checksums != MF_DATA_CRC32C) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: unknown data checksum kind %" PRIu32, path, h->checksums);
        return -1;
    }
    if (h->version < 1 || h->version > MF_FORMAT_VERSION || h->record_size != MF_RECORD_SIZE) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: index format version %" PRIu32 " (record size %" PRIu32
                 ") is not supported (this reads versions 1 to %d)",
                 path, h->version, h->record_size, MF_FORMAT_VERSION);
        return -1;
    }
    return 0;
}

static int
format_meta(char *buf, size_t n, const mf_meta_t *m)
{
    int len = snprintf(buf, n,
                       "%s %d\nranks %" PRIu32 "\nstate %s\ncommitted %" PRIu32 "\neoa %" PRIu64
                       "\nrecords %" PRIu64 "\nrun %016" PRIx64 "\n",
                       MF_METAFILE_MAGIC, m->run ? MF_META_VERSION : 2, m->ranks,
                       m->state == MF_STATE_COMPLETE ? "complete" : "writing", m->committed, m->eoa,
                       m->records, m->run);
    if (!m->run && len > 0) /* a directory of version 2 continued: version 2 still, no run line */
        len = (int)(strstr(buf, "run ") - buf);
    if (len < 0 || (size_t)len >= n)
        return -1;
    int len2 = snprintf(buf + len, n - (size_t)len, "crc32 %08" PRIx32 "\n", mf_crc32(0, buf, (size_t)len));
    return len2 < 0 ? -1 : len + len2;
}

int
mf_meta_write(int dirfd, const char *dir, const mf_meta_t *meta, int do_sync, mf_err_t err)
{
    char tmp[64], text[512];
    int  len = format_meta(text, sizeof text, meta);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", MF_METAFILE_NAME, (long)getpid());
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || len < 0 || mf_pwrite_all(fd, text, (size_t)len, 0) < 0 || (do_sync && fsync(fd) < 0)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s/%s: cannot write: %s", dir, tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlinkat(dirfd, tmp, 0);
        }
        return -1;
    }
    if (close(fd) < 0 || renameat(dirfd, tmp, dirfd, MF_METAFILE_NAME) < 0 || (do_sync && fsync(dirfd) < 0)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s/%s: cannot replace: %s", dir, MF_METAFILE_NAME, strerror(errno));
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    return 0;
}

int
mf_meta_read(const char *dir, mf_meta_t *meta, mf_err_t err)
{
    char        path[PATH_MAX], text[1024], state[32] = "";
    unsigned    crc = 0;
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, MF_METAFILE_NAME);
    int fd = mf_open_regular(AT_FDCWD, path, path, err);
    if (fd < 0) {
        if (errno == ENOENT)
            snprintf(err, MF_ERRMSG_SIZE,
                     "%s: %s (not a multifile directory, or its creation did not finish)", path,
                     strerror(ENOENT));
        return -1;
    }
    long long n = (fstat(fd, &st) == 0 && st.st_size < (off_t)sizeof text)
                      ? mf_pread_all(fd, text, sizeof text - 1, 0)
                      : -2;
    close(fd);
    if (n < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", path,
                 n == -2 ? "too large to be a metafile" : strerror(errno));
        return -1;
    }
    text[n]      = '\0';
    char *crcpos = strstr(text, "crc32 ");
    if (!crcpos || sscanf(crcpos, "crc32 %x", &crc) != 1 ||
        crc != mf_crc32(0, text, (size_t)(crcpos - text))) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: checksum missing or wrong (corrupt metafile)", path);
        return -1;
    }
    char magic[32];
    memset(meta, 0, sizeof *meta);
    int fields = sscanf(text,
                        "%31s %" SCNu32 " ranks %" SCNu32 " state %31s committed %" SCNu32 " eoa %" SCNu64
                        " records %" SCNu64 " run %" SCNx64,
                        magic, &meta->version, &meta->ranks, state, &meta->committed, &meta->eoa,
                        &meta->records, &meta->run);
    if (fields < 6 || strcmp(magic, MF_METAFILE_MAGIC) != 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: not a multifile metafile", path);
        return -1;
    }
    int want = meta->version >= 3 ? 8 : meta->version == 2 ? 7 : fields;
    if (meta->version < 1 || meta->version > MF_META_VERSION || fields != want) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: metafile version %" PRIu32 "%s is not supported (this reads 1 to %d)", path,
                 meta->version, fields != want ? " with other fields than its version has" : "",
                 MF_META_VERSION);
        return -1;
    }
    if (meta->version < 3)
        meta->run = 0;
    else if (meta->run == 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: metafile version 3 without a run identity (corrupt)", path);
        return -1;
    }
    if (meta->eoa > (1ULL << 62)) { /* the drivers' largest address */
        snprintf(err, MF_ERRMSG_SIZE, "%s: end of address space %" PRIu64 " out of range (corrupt)", path,
                 meta->eoa);
        return -1;
    }
    if (meta->ranks == 0 || (strcmp(state, "complete") != 0 && strcmp(state, "writing") != 0)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: invalid ranks or state", path);
        return -1;
    }
    meta->state = strcmp(state, "complete") == 0 ? MF_STATE_COMPLETE : MF_STATE_WRITING;
    return 0;
}

uint64_t
mf_new_run(void)
{
    uint64_t run = 0;
    if (getrandom(&run, sizeof run, 0) != (ssize_t)sizeof run || run == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        run = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16) ^ 1;
    }
    return run;
}

int
mf_open_regular(int dirfd, const char *name, const char *path, mf_err_t err)
{
    struct stat st;
    int         fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", path,
                 e == ELOOP ? "is a symbolic link (not followed)" : strerror(e));
        errno = e;
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        int e = errno;
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: not a regular file (%s)", path,
                 S_ISFIFO(st.st_mode)   ? "a FIFO"
                 : S_ISDIR(st.st_mode)  ? "a directory"
                 : S_ISSOCK(st.st_mode) ? "a socket"
                                        : "a device");
        close(fd);
        errno = EINVAL;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

void
mf_data_name(char *out, size_t n, unsigned rank)
{
    snprintf(out, n, "%u", rank);
}

void
mf_index_name(char *out, size_t n, unsigned rank)
{
    snprintf(out, n, "%u.offset", rank);
}

void
mf_data_path(char *out, size_t n, const char *dir, unsigned rank)
{
    char name[MF_NAME_SIZE];
    mf_data_name(name, sizeof name, rank);
    snprintf(out, n, "%s/%s", dir, name);
}

void
mf_index_path(char *out, size_t n, const char *dir, unsigned rank)
{
    char name[MF_NAME_SIZE];
    mf_index_name(name, sizeof name, rank);
    snprintf(out, n, "%s/%s", dir, name);
}

int
mf_is_multifile(const char *path)
{
    char        meta[PATH_MAX];
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    snprintf(meta, sizeof meta, "%s/%s", path, MF_METAFILE_NAME);
    return access(meta, F_OK) == 0;
}

/* where HDF5's superblock signature is (at 0, 512, 1024, ... as HDF5 looks for it): 1
 * with *at, or 0 */
static int
find_superblock(int fd, uint64_t *at)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char              buf[8];
    for (*at = 0; *at < (1ULL << 40); *at = *at ? 2 * *at : 512) {
        long long got = mf_pread_all(fd, buf, sizeof buf, *at);
        if (got < (long long)sizeof buf)
            return 0;
        if (memcmp(buf, sig, sizeof sig) == 0)
            return 1;
    }
    return 0;
}

int
mf_is_hdf5_fd(int fd)
{
    uint64_t at;
    return find_superblock(fd, &at);
}

/* the end of file address a superblock at sb stores (absolute, as HDF5 compares it with
 * the file's size), or 0 for a superblock version or offset size not known here */
static uint64_t
superblock_eof(int fd, uint64_t sb)
{
    unsigned char b[64];
    if (mf_pread_all(fd, b, sizeof b, sb) < (long long)sizeof b)
        return 0;
    unsigned v = b[8], size = v < 2 ? b[13] : b[9];
    size_t   at = (v == 0 ? 24 : v == 1 ? 28 : 12) + 2 * (size_t)size; /* after base and one address */
    if (v > 3 || (size != 2 && size != 4 && size != 8) || at + size > sizeof b)
        return 0;
    uint64_t eof = 0;
    for (unsigned k = 0; k < size; k++)
        eof |= (uint64_t)b[at + k] << (8 * k);
    return eof;
}

int
mf_check_hdf5(const char *path, mf_err_t err)
{
    struct stat st;
    uint64_t    at;
    int         fd = mf_open_regular(AT_FDCWD, path, path, err);
    if (fd < 0)
        return -1;
    int      found = find_superblock(fd, &at);
    uint64_t eof   = found ? superblock_eof(fd, at) : 0;
    uint64_t size  = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX; /* unknown: not judged */
    close(fd);
    if (!found) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: no HDF5 signature", path);
        return -1;
    }
    if (eof > size) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: %" PRIu64 " bytes, but its HDF5 superblock says the file ends at %" PRIu64
                 ": the metafile's end of address space is wrong (edited or damaged)",
                 path, size, eof);
        return -1;
    }
    return 0;
}

int
mf_is_hdf5(const char *path)
{
    mf_err_t err;
    int      fd = mf_open_regular(AT_FDCWD, path, path, err);
    if (fd < 0)
        return 0;
    int yes = mf_is_hdf5_fd(fd);
    close(fd);
    return yes;
}

int
mf_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

long long
mf_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
    char     *p    = buf;
    long long done = 0;
    while (len > 0) {
        ssize_t n = pread(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
        done += n;
    }
    return done;
}
