/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_driver: what the host side (dsm_host.c) tells the driver (H5FDdsm.c).
 *
 * On a server rank the driver opens files read-only from the DSM this process hosts:
 * the file the clients closed last, while the servers' action runs on it.
 */
#ifndef DSM_DRIVER_H
#define DSM_DRIVER_H

#include "dsm_link.h"

#include <stdint.h>

/* link: the hosted DSM (NULL: none); name and size: the file it holds */
void dsm_driver_set_host(dsm_link_t *link, const char *name, uint64_t size);

#endif
