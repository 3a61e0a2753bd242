/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_options.c - the drivers' configuration strings (see vfd_options.h).
 */
#include "vfd_options.h"

#include <stdio.h>
#include <string.h>

#define SEPARATORS ";, \t\n\r"

int
vfd_options_each(const char *text, const char *keys, vfd_option_fn fn, void *ctx, char *err, size_t len)
{
    char copy[VFD_OPTIONS_MAX];
    if (!text)
        return 0;
    if (strlen(text) >= sizeof copy) {
        snprintf(err, len, "the configuration is longer than %zu characters", sizeof copy - 1);
        return -1;
    }
    strcpy(copy, text);
    for (char *save = NULL, *item = strtok_r(copy, SEPARATORS, &save); item;
         item = strtok_r(NULL, SEPARATORS, &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item) {
            snprintf(err, len, "'%s' is not key=value (keys: %s)", item, keys);
            return -1;
        }
        *eq = '\0';
        if (fn(ctx, item, eq + 1, err, len) < 0)
            return -1;
    }
    return 0;
}
