/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_hints: reading MPI-IO hints files (see pw_hints.h). */
#include "pw_hints.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pw_files.h"

int
pw_hints_load(const char *path, MPI_Info info, char *err, size_t len)
{
    FILE *f = pw_open_input(path, "hints file", err, len);
    if (!f)
        return 1;
    char line[4096];
    int  lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t l = strlen(line);
        if (l == sizeof line - 1 && line[l - 1] != '\n') {
            snprintf(err, len, "%s:%d: line too long", path, lineno);
            rc = 1;
            break;
        }
        while (l && isspace((unsigned char)line[l - 1]))
            line[--l] = '\0';
        char *key = line;
        while (isspace((unsigned char)*key))
            key++;
        if (!*key || *key == '#')
            continue;
        char *value = key;
        while (*value && !isspace((unsigned char)*value))
            value++;
        if (*value)
            *value++ = '\0';
        while (isspace((unsigned char)*value))
            value++;
        if (!*value) {
            snprintf(err, len, "%s:%d: hint '%s' has no value (expected \"key value\")", path, lineno, key);
            rc = 1;
            break;
        }
        if (strlen(key) >= MPI_MAX_INFO_KEY || strlen(value) >= MPI_MAX_INFO_VAL) {
            snprintf(err, len, "%s:%d: hint '%s' or its value is too long for MPI_Info", path, lineno, key);
            rc = 1;
            break;
        }
        MPI_Info_set(info, key, value);
    }
    if (!rc && ferror(f)) { /* a read error is not the end of the hints */
        snprintf(err, len, "%s: cannot read the hints file: %s", path, strerror(errno));
        rc = 1;
    }
    fclose(f);
    return rc;
}

void
pw_hints_print(MPI_Info info)
{
    int n = 0;
    MPI_Info_get_nkeys(info, &n);
    for (int i = 0; i < n; i++) {
        char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
        int  flag = 0;
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
        if (flag)
            printf("  %s = %s\n", key, value);
    }
}
