/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_driver.h - what an MPI driver of h5stack does toward HDF5 the same way as the
 * others: its registration, its own HDF5 error class, MPI initialised for a serial
 * program, the agreement of all ranks on an outcome, HDF5's record of the current call
 * (collective or not, its MPI datatypes), the ctl operations HDF5 asks of a driver with
 * H5FD_FEAT_HAS_MPI, the features it reports, and the walk over a vector's entries.
 *
 * A driver keeps its state in one vfd_driver_t (VFD_DRIVER_INIT); nothing here holds
 * state of its own, so two drivers (or a driver built into libhdf5 and a plugin) never
 * share any.
 */
#ifndef VFD_DRIVER_H
#define VFD_DRIVER_H

#include "vfd_mpi.h" /* vfd_agree: the agreement of all ranks on an outcome */

#include <H5FDdevelop.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* a driver's message, as pushed onto HDF5's error stack (longer ones are cut) */
#define VFD_MSG_SIZE 1024

typedef struct {
    const H5FD_class_t *cls;
    const char         *name;  /* the error class's name and every message's prefix: "<name>: ..." */
    const char         *title; /* the error class's library name */
    const char         *major; /* the major error message */
    hid_t               id;    /* the registered driver (vfd_register), or H5I_INVALID_HID */
    hid_t               err_class, err_major, err_minor; /* registered at the first error */
    int                 initialized_mpi; /* MPI_Init_thread was the driver's: it finalises MPI */
} vfd_driver_t;

#define VFD_DRIVER_INIT(cls, name, title, major)                                                             \
    {                                                                                                        \
        (cls), (name), (title), (major), H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID, \
            0                                                                                                \
    }

/* The driver's ID, registering it on first use; when HDF5 loaded it as a plugin first
 * (registered by value already), the ID found through a fapl. */
hid_t vfd_register(vfd_driver_t *d);

/* The class's terminate callback: the error class closed, the ID forgotten, MPI
 * finalised when the driver initialised it (and nobody finalised it since). */
herr_t vfd_terminate(vfd_driver_t *d);

/* A serial program gets MPI initialised by the driver, as HDF5's mpio and subfiling
 * drivers do. 0, or -1 with the reason for path pushed: MPI cannot be initialised, or
 * was finalised already (no MPI call is allowed then: the file cannot be opened through
 * an MPI driver, e.g. a default access list with HDF5_DRIVER after MPI_Finalize). */
int vfd_ensure_mpi(vfd_driver_t *d, const char *path);

/* "<name>: <message>" onto HDF5's error stack under the driver's error class */
void vfd_push(vfd_driver_t *d, const char *file, const char *func, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define VFD_ERROR(d, ...) vfd_push((d), __FILE__, __func__, __LINE__, __VA_ARGS__)

/* The start of a public function of the driver (H5Pset_fapl_<name>, ...): the error
 * stack cleared, as HDF5's own API functions clear it when they are entered. */
void vfd_api_enter(void);

/* A public function of the driver (H5Pset_fapl_<name>, ...) failed, its reason pushed
 * with VFD_ERROR: report it as HDF5's own API functions do, through the automatic error
 * handler when one is set (H5Eset_auto2; printing by default), the stack kept until the
 * next HDF5 call. -1, the function's result. */
herr_t vfd_api_fail(void);

/* The start and the end of a collective call, on every rank of comm: no rank goes on
 * before every rank has come, and the ranks agree on the call's outcome (status: this
 * rank's) and, with clock, on the largest of their clocks (this rank's in, the largest
 * out). status, or -1 with the reason for path pushed: the ranks could not exchange, or
 * another one's part failed ("another <who>'s part of this <what> failed"). */
herr_t vfd_sync_collective(vfd_driver_t *d, MPI_Comm comm, const char *path, const char *who,
                           const char *what, herr_t status, int64_t *clock);

/*
 * HDF5's record of the transfer mode of the current call, which its built-in MPI drivers
 * read: HDF5 switches a call to collective there (chunk fills at allocation, collective
 * metadata writes) while the transfer property list a driver receives still says
 * independent. Exported by libhdf5 1.14 and 2.x, declared in its private headers only.
 */
H5_DLL herr_t H5CX_get_io_xfer_mode(H5FD_mpio_xfer_t *io_xfer_mode);
/* and the MPI datatypes of a collective raw-data transfer (see vfd_datatype.h) */
H5_DLL herr_t H5CX_get_mpi_coll_datatypes(MPI_Datatype *btype, MPI_Datatype *ftype);

/* Is the current call collective? Then every rank of the file makes it (HDF5's rule for
 * its MPI-IO driver, which calls MPI_File_set_view / *_all in it). */
bool vfd_collective_call(void);

/*
 * The MPI datatypes of this call, where HDF5's MPI-IO driver takes them: a collective
 * raw-data transfer outside the vector callbacks carries a buffer and a file datatype
 * in HDF5's API context (both MPI_BYTE, `size` then counting bytes, unless HDF5 built
 * derived types for it: selection I/O off, by the application or by HDF5 for the call).
 * 0, or -1 when HDF5 cannot give them.
 */
int vfd_call_datatypes(H5FD_mem_t type, MPI_Datatype *btype, MPI_Datatype *ftype);

/* what a file answers to HDF5's MPI ctl operations */
typedef struct {
    MPI_Comm comm;
    MPI_Info info;
    int      rank, size;
} vfd_comm_t;

/* a file's MPI objects released: its MPI handle (vfd_mpihandle.h), communicator and
 * info, each when set */
void vfd_comm_free(MPI_File *handle, MPI_Comm *comm, MPI_Info *info);

/* The ctl callback for a file (path: for the message): the communicator, info, rank
 * and size; "no" for MPI_File_sync after writes; an unknown operation is an error
 * only when HDF5 flags it so. */
herr_t vfd_ctl(vfd_driver_t *d, const char *path, const vfd_comm_t *c, uint64_t op_code, uint64_t flags,
               void **output);

/* The query callback of both drivers: HDF5 aggregates metadata and small raw data, the
 * driver has MPI (ctl answers the communicator), and its files are HDF5 files as the
 * default driver's are (no driver information in the superblock). */
herr_t vfd_query(const H5FD_t *file, unsigned long *flags);

/* one entry of a vector transfer */
typedef herr_t (*vfd_entry_fn)(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                               void *buf);

/* Each entry of a vector, in order, until one fails (then -1). A size of 0 or a type of
 * H5FD_MEM_NOLIST ends its array: the previous entry's then holds for all remaining
 * elements (HDF5's compact convention). */
herr_t vfd_each_entry(vfd_entry_fn io, H5FD_t *file, hid_t dxpl, uint32_t count, const H5FD_mem_t types[],
                      const haddr_t addrs[], const size_t sizes[], void *bufs[]);

/* The most bytes vfd_each_run gathers into one write */
#define VFD_RUN_MAX (8u << 20)

/* Each run of a vector write, in order, until one fails (then -1): entries that continue
 * one another in the file (each at the address where the one before ends) with the same
 * memory type are handed to io as one write, their bytes gathered in order into a
 * buffer of at most VFD_RUN_MAX bytes; a lone entry goes as it is. HDF5 hands each row of
 * a chunk over as an entry of its own: joined, the rows of a chunk are one write. Writing
 * a run is writing its entries one after the other (no entry of a run overlaps another). */
herr_t vfd_each_run(vfd_entry_fn io, H5FD_t *file, hid_t dxpl, uint32_t count, const H5FD_mem_t types[],
                    const haddr_t addrs[], const size_t sizes[], const void *bufs[]);

#endif
