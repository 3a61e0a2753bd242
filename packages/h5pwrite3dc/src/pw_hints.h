/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_hints: MPI-IO hints from a file, one "key value" pair per line.
 *
 * Blank lines and lines starting with '#' are skipped; a value runs to the end of
 * its line (trailing blanks dropped). The same hints go to HDF5's MPI-IO driver and
 * to the raw MPI-IO limit, so both write under the same settings.
 */
#ifndef PW_HINTS_H
#define PW_HINTS_H

#include <mpi.h>
#include <stddef.h>

/* Add the file's hints to info. 0 on success; else err says "<path>:<line>: <reason>". */
int pw_hints_load(const char *path, MPI_Info info, char *err, size_t errlen);

/* Print the hints of info, one "  key = value" line each, to stdout. */
void pw_hints_print(MPI_Info info);

#endif
