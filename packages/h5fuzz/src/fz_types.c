/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_types.c - the HDF5 datatypes of a plan's datasets (see fz_types.h).
 */
#include "fz_types.h"

static const char *const enum_names[4] = {"ZERO", "ONE", "MINUS_SEVEN", "BIG"};

/* the compound: members a (int32), b (double), c (uint16); in memory packed in that
 * order; the converting file type puts them in another order and byte order */
static hid_t
compound(int conv)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, 14);
    if (conv) {
        H5Tinsert(t, "c", 0, H5T_STD_U16BE);
        H5Tinsert(t, "b", 2, H5T_IEEE_F64BE);
        H5Tinsert(t, "a", 10, H5T_STD_I32BE);
    }
    else {
        H5Tinsert(t, "a", 0, H5T_NATIVE_INT32);
        H5Tinsert(t, "b", 4, H5T_NATIVE_DOUBLE);
        H5Tinsert(t, "c", 12, H5T_NATIVE_UINT16);
    }
    return t;
}

/* the string: 8 bytes null-terminated; converted to 12 bytes null-padded */
static hid_t
string(int conv)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, conv ? 12 : 8);
    H5Tset_strpad(t, conv ? H5T_STR_NULLPAD : H5T_STR_NULLTERM);
    return t;
}

/* the enum: a native int in memory; converted to a signed byte whose members have the
 * same names and other values (HDF5 converts enums by name) */
static hid_t
enumeration(int conv)
{
    hid_t t = H5Tenum_create(conv ? H5T_STD_I8LE : H5T_NATIVE_INT);
    for (int k = 0; k < 4; k++) {
        int         mem     = fz_enum_values[k];
        signed char in_file = (signed char)(k == 3 ? 99 : mem);
        H5Tenum_insert(t, enum_names[k], conv ? (const void *)&in_file : (const void *)&mem);
    }
    return t;
}

static hid_t
array(int conv)
{
    hsize_t n = 3;
    return H5Tarray_create2(conv ? H5T_STD_I16BE : H5T_NATIVE_INT16, 1, &n);
}

/* the atomic types: [memory, converting file type] */
static hid_t
atomic(int mtype, int conv)
{
    switch (mtype) {
        case MT_I8:
            return H5Tcopy(conv ? H5T_STD_I16BE : H5T_NATIVE_INT8);
        case MT_U16:
            return H5Tcopy(conv ? H5T_STD_U32BE : H5T_NATIVE_UINT16);
        case MT_I64:
            return H5Tcopy(conv ? H5T_STD_I64BE : H5T_NATIVE_INT64);
        case MT_F32:
            return H5Tcopy(conv ? H5T_IEEE_F64BE : H5T_NATIVE_FLOAT);
        case MT_F64:
            return H5Tcopy(conv ? H5T_IEEE_F64BE : H5T_NATIVE_DOUBLE);
        default:
            return H5Tcopy(H5T_NATIVE_INT32);
    }
}

static hid_t
of_kind(int mtype, int conv)
{
    switch (mtype) {
        case MT_COMPOUND:
            return compound(conv);
        case MT_STRING:
            return string(conv);
        case MT_ENUM:
            return enumeration(conv);
        case MT_ARRAY:
            return array(conv);
        default:
            return atomic(mtype, conv);
    }
}

hid_t
fz_mem_type(const fz_object_t *o)
{
    return of_kind(o->mtype, 0);
}

hid_t
fz_file_type(const fz_object_t *o)
{
    /* int32: grammar 2's file types (enum fz_file_type) */
    const hid_t i32[FT_COUNT] = {H5T_STD_I32LE, H5T_STD_I32BE, H5T_STD_I64LE, H5T_IEEE_F64LE};
    if (o->mtype == MT_I32 || o->mtype < 0 || o->mtype >= MT_COUNT)
        return H5Tcopy(o->ftype > 0 && o->ftype < FT_COUNT ? i32[o->ftype] : H5T_STD_I32LE);
    return of_kind(o->mtype, o->fconv);
}
