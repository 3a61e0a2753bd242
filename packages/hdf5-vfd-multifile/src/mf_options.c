/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_options.c - parsing the driver's options (see mf_options.h).
 */
#include "mf_options.h"

#include "vfd_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
mf_options_default(void *opt)
{
    mf_options_t *o = opt;
    o->magic        = MF_OPTIONS_MAGIC;
    o->read_mode    = MF_READ_INPLACE;
    o->checksums    = 1;
    o->sync         = 0;
    o->comm_world   = 0;
    o->open_wait    = 600;
    o->head         = 1;
}

/* whole seconds, 0 to a day */
static int
seconds(const char *v, int32_t *out)
{
    char *end;
    long  n = strtol(v, &end, 10);
    if (!*v || *end || n < 0 || n > 86400)
        return -1;
    *out = (int32_t)n;
    return 0;
}

static int
on_off(const char *v, int32_t *out)
{
    if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"))
        *out = 1;
    else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no"))
        *out = 0;
    else
        return -1;
    return 0;
}

/* read=inplace|merge|parallel */
static int
read_mode(const char *v, int32_t *out)
{
    if (!strcmp(v, "merge"))
        *out = MF_READ_MERGE;
    else if (!strcmp(v, "inplace"))
        *out = MF_READ_INPLACE;
    else if (!strcmp(v, "parallel"))
        *out = MF_READ_PARALLEL;
    else
        return -1;
    return 0;
}

/* one of two words: 0 for the first, 1 for the second */
static int
either(const char *v, const char *zero, const char *one, int32_t *out)
{
    if (strcmp(v, zero) && strcmp(v, one))
        return -1;
    *out = !strcmp(v, one);
    return 0;
}

int
mf_option_item(void *opt, const char *key, const char *val, char *err, size_t len)
{
    mf_options_t *o = opt;
    int           bad;
    if (!strcmp(key, "read"))
        bad = read_mode(val, &o->read_mode);
    else if (!strcmp(key, "checksums"))
        bad = on_off(val, &o->checksums);
    else if (!strcmp(key, "sync"))
        bad = on_off(val, &o->sync);
    else if (!strcmp(key, "comm"))
        bad = either(val, "self", "world", &o->comm_world);
    else if (!strcmp(key, "open_wait"))
        bad = seconds(val, &o->open_wait);
    else if (!strcmp(key, "layout"))
        bad = either(val, "dir", "head", &o->head);
    else {
        snprintf(err, len, "unknown option '%s' (known: " MF_OPTIONS_KEYS ")", key);
        return -1;
    }
    if (bad)
        snprintf(err, len, "option %s: invalid value '%s'", key, val);
    return bad ? -1 : 0;
}

int
mf_options_parse(mf_options_t *o, const char *text, mf_err_t err)
{
    return vfd_options_each(text, MF_OPTIONS_KEYS, mf_option_item, o, err, MF_ERRMSG_SIZE);
}
