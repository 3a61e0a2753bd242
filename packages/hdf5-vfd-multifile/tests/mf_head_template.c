/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_head_template HEAD SCRATCH - is the head's HDF5 part what the HDF5 at hand writes?
 * Writes SCRATCH as src/mf_head.c's template was made (the earliest format, one
 * fixed-length string attribute "multifile" of 1024 bytes, NUL terminated, on the root
 * group) and compares its bytes before the attribute's value with HEAD's, but for the
 * superblock's end of file (bytes 40-47), which the head sets to its own size. Prints
 * "mf_head_template: ok (HDF5 <version>)" or the first byte that differs; exit 0 or 1.
 */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#define TEXT_AT   872
#define TEXT_SIZE 1024

static int
load(const char *path, unsigned char *buf, size_t n)
{
    FILE  *f   = fopen(path, "rb");
    size_t got = f ? fread(buf, 1, n, f) : 0;
    if (f)
        fclose(f);
    return got == n ? 0 : -1;
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mf_head_template HEAD SCRATCH\n");
        return 2;
    }
    unsigned      maj, min, rel;
    unsigned char want[TEXT_AT + 8], got[TEXT_AT + 8];
    char          text[TEXT_SIZE];
    hid_t         fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18);
    hid_t f = H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
    H5Tset_size(t, TEXT_SIZE);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t a = H5Acreate2(f, "multifile", t, s, H5P_DEFAULT, H5P_DEFAULT);
    memset(text, '#', sizeof text);
    if (a < 0 || H5Awrite(a, t, text) < 0 || H5Aclose(a) < 0 || H5Fclose(f) < 0)
        return 1;
    H5get_libversion(&maj, &min, &rel);
    if (load(argv[2], want, sizeof want) < 0 || load(argv[1], got, sizeof got) < 0) {
        fprintf(stderr, "mf_head_template: cannot read %s or %s\n", argv[1], argv[2]);
        return 1;
    }
    if (memcmp(want + TEXT_AT, "########", 8) != 0) {
        printf("mf_head_template: HDF5 %u.%u.%u puts the attribute's value elsewhere\n", maj, min, rel);
        return 1;
    }
    for (int i = 0; i < TEXT_AT; i++)
        if (want[i] != got[i] && (i < 40 || i >= 48)) {
            printf("mf_head_template: byte %d of the head is 0x%02x, HDF5 %u.%u.%u writes 0x%02x\n", i,
                   got[i], maj, min, rel, want[i]);
            return 1;
        }
    printf("mf_head_template: ok (HDF5 %u.%u.%u)\n", maj, min, rel);
    return 0;
}
