/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_options.c - parsing the driver's options (see mf_options.h).
 */
#include "mf_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
mf_options_default(mf_options_t *o)
{
    o->magic      = MF_OPTIONS_MAGIC;
    o->read_mode  = MF_READ_INPLACE;
    o->checksums  = 1;
    o->sync       = 0;
    o->comm_world = 0;
    o->open_wait  = 600;
    o->head       = 0;
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

int
mf_options_parse(mf_options_t *o, const char *text, mf_err_t err)
{
    char buf[1024];
    if (!text)
        return 0;
    if (strlen(text) >= sizeof buf) {
        snprintf(err, MF_ERRMSG_SIZE, "options too long");
        return -1;
    }
    strcpy(buf, text);
    for (char *save = NULL, *tok = strtok_r(buf, ";, \t\n", &save); tok;
         tok = strtok_r(NULL, ";, \t\n", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, MF_ERRMSG_SIZE, "option '%s': expected key=value", tok);
            return -1;
        }
        *eq             = '\0';
        const char *val = eq + 1;
        int         bad = 0;
        if (!strcmp(tok, "read")) {
            if (!strcmp(val, "merge"))
                o->read_mode = MF_READ_MERGE;
            else if (!strcmp(val, "inplace"))
                o->read_mode = MF_READ_INPLACE;
            else if (!strcmp(val, "parallel"))
                o->read_mode = MF_READ_PARALLEL;
            else
                bad = 1;
        }
        else if (!strcmp(tok, "checksums"))
            bad = on_off(val, &o->checksums);
        else if (!strcmp(tok, "sync"))
            bad = on_off(val, &o->sync);
        else if (!strcmp(tok, "comm") && (!strcmp(val, "self") || !strcmp(val, "world")))
            o->comm_world = !strcmp(val, "world");
        else if (!strcmp(tok, "comm"))
            bad = 1;
        else if (!strcmp(tok, "open_wait"))
            bad = seconds(val, &o->open_wait);
        else if (!strcmp(tok, "layout") && (!strcmp(val, "dir") || !strcmp(val, "head")))
            o->head = !strcmp(val, "head");
        else if (!strcmp(tok, "layout"))
            bad = 1;
        else {
            snprintf(err, MF_ERRMSG_SIZE,
                     "unknown option '%s' (known: read, checksums, sync, comm, open_wait, layout)", tok);
            return -1;
        }
        if (bad) {
            snprintf(err, MF_ERRMSG_SIZE, "option %s: invalid value '%s'", tok, val);
            return -1;
        }
    }
    return 0;
}
