/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_options.h - the drivers' configuration strings (HDF5_DRIVER_CONFIG, the text of
 * H5Pset_driver_by_name and of the drivers' own setters), one grammar for every driver:
 * items key=value separated by ';', ',' or blanks (spaces, tabs, newlines); empty items
 * are ignored. What each key means is the driver's.
 */
#ifndef VFD_OPTIONS_H
#define VFD_OPTIONS_H

#include <stddef.h>

/* the longest configuration string, its NUL included */
#define VFD_OPTIONS_MAX 1024

/* one item: 0, or -1 with the reason in err (len bytes): a bad value, an unknown key */
typedef int (*vfd_option_fn)(void *ctx, const char *key, const char *value, char *err, size_t len);

/* Each item of text to fn, in order, until one fails. keys: the driver's keys, named in
 * the message of an item that is not key=value. 0, or -1 with the reason in err: text
 * too long, an item without '=' or with an empty key, or fn's reason. */
int vfd_options_each(const char *text, const char *keys, vfd_option_fn fn, void *ctx, char *err, size_t len);

#endif
