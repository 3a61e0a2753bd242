/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_options - the drivers' one grammar of configuration strings (vfd_options_each):
 * items key=value separated by ';', ',' or blanks, empty items ignored; an item without
 * '=' or with an empty key, a string too long, and the driver's own refusal each end the
 * parse with the reason.
 */
#include "vfd_options.h"

#include <stdio.h>
#include <string.h>

static int failures;

/* the items seen, "key=value|...", into ctx; the key "bad" is refused */
static int
collect(void *ctx, const char *key, const char *value, char *err, size_t len)
{
    char *seen = ctx;
    if (!strcmp(key, "bad")) {
        snprintf(err, len, "bad: refused '%s'", value);
        return -1;
    }
    snprintf(seen + strlen(seen), 512 - strlen(seen), "%s=%s|", key, value);
    return 0;
}

static void
expect(const char *text, int rc, const char *want)
{
    char        seen[512] = "", err[256] = "";
    int         got = vfd_options_each(text, "a, b", collect, seen, err, sizeof err);
    const char *out = rc == 0 ? seen : err;
    if (got != rc || strcmp(out, want)) {
        printf("FAIL: '%s': %d '%s', expected %d '%s'\n", text ? text : "(null)", got, out, rc, want);
        failures++;
    }
}

int
main(void)
{
    expect(NULL, 0, "");
    expect("", 0, "");
    expect("a=1", 0, "a=1|");
    expect("a=1;b=2,c=3 d=4\te=5\nf=6", 0, "a=1|b=2|c=3|d=4|e=5|f=6|");
    expect(" ;; a=1 ,, ;b= ", 0, "a=1|b=|");
    expect("a=x=y", 0, "a=x=y|");
    expect("a=1;b", -1, "'b' is not key=value (keys: a, b)");
    expect("=1", -1, "'=1' is not key=value (keys: a, b)");
    expect("a=1;bad=2;c=3", -1, "bad: refused '2'");
    char long_text[VFD_OPTIONS_MAX + 1];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    expect(long_text, -1, "the configuration is longer than 1023 characters");
    long_text[VFD_OPTIONS_MAX - 1] = '\0'; /* 1023 characters: taken */
    long_text[0] = 'a', long_text[1] = '=';
    char seen[VFD_OPTIONS_MAX + 8] = "", err[256] = "";
    if (vfd_options_each(long_text, "a", collect, seen, err, sizeof err) != 0) {
        printf("FAIL: a string of %d characters was refused: %s\n", VFD_OPTIONS_MAX - 1, err);
        failures++;
    }
    if (failures)
        return 1;
    printf("test_options: ok\n");
    return 0;
}
