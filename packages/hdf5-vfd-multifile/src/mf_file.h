/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_file.h - the multifile driver's open file (private to the driver): its state, and
 * what the driver's two parts share. H5FDmultifile.c is the HDF5 side (the class, the
 * public API, I/O, flush, truncate, delete, ctl); mf_open.c opens a file in each mode
 * (see H5FDmultifile.c), commits an epoch and closes it.
 */
#ifndef MF_FILE_H
#define MF_FILE_H

#include "H5FDmultifile.h"

#include "mf_clock.h"
#include "mf_extents.h"
#include "mf_format.h"
#include "mf_index.h"
#include "mf_merge.h"
#include "mf_options.h"
#include "vfd_driver.h"
#include "vfd_watch.h"

#include <H5FDdevelop.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MF_MAXADDR   ((haddr_t)((1ULL << 62) - 1))
#define MF_ALIGN     (4096u)     /* block size a reflink can share */
#define MF_ALIGN_MIN (64u << 10) /* writes this large start block-aligned in the data file */

typedef enum { MODE_WRITE, MODE_PLAIN, MODE_INPLACE, MODE_ALIAS } mf_mode_t;

typedef struct {
    H5FD_t       pub;        /* public part, must be first */
    MPI_File     mpi_handle; /* for HDF5's atomicity calls (vfd_mpihandle.h) */
    MPI_Comm     comm;
    MPI_Info     info;
    int          rank, size;
    vfd_watch_t *watch;   /* until every rank has come to the open (watch_open) */
    int          nfiles;  /* MODE_WRITE: rank files in the directory (> size when fewer ranks continue it) */
    char        *path;    /* the multifile directory, or the file (MODE_PLAIN) */
    char        *head;    /* the head that names the directory (mf_head.h), or NULL: path is the name */
    int          head_fd; /* rank 0 of a write session: the head, extended at each commit */
    mf_mode_t    mode;
    mf_options_t opt;
    dev_t        dev; /* identity of the directory or file on disk (cmp, ALIAS) */
    ino_t        ino;
    haddr_t      eoa;
    haddr_t      eof; /* as HDF5's mpio driver: known at open and at each commit only, the same on
                         every rank (HDF5 takes decisions on it, e.g. "empty file: create") */
    /* MODE_WRITE */
    int          dir_fd;    /* the directory, held from open: it may be renamed meanwhile */
    int          writer_fd; /* rank 0: the one writer's lock (lock_writer) */
    int          data_fd, idx_fd;
    uint64_t     data_pos, idx_pos, nrec;
    uint64_t     nrec_idle; /* rank 0: records of the rank files no rank of this open writes */
    uint32_t     epoch;
    uint64_t     run_id; /* the write session's identity (the metafile's "run", mf_format.h) */
    mf_clock_t   clock;
    int64_t      hlc;                    /* the last order stamp given or learned (see next_stamp) */
    mf_record_t  run;                    /* this rank's last record, while writes may still extend it */
    char         broken[MF_ERRMSG_SIZE]; /* why the live map can no longer be trusted, or "" */
    bool         run_open;               /* see extend_run */
    mf_extents_t map;                    /* MODE_WRITE: live map; MODE_INPLACE: dir.map */
    mf_tail_t   *tails;                  /* other ranks' files (MODE_WRITE), NULL entries closed */
    uint64_t    *cut;    /* during a collective read: each rank's index length at its start (agree_cut) */
    bool         cut_on; /* a collective read is under way: refresh reads up to the cut */
    /* MODE_PLAIN */
    int      plain_fd;
    int      writable;
    uint64_t plain_size;
    /* MODE_INPLACE */
    mf_dir_t  dir;
    int      *rank_fds;
    uint8_t **checked; /* per rank and record: its data checksum held when first read */
    /* where each rank's data is read from (not owned): rank_fds (INPLACE), or this rank's
     * data_fd and the other ranks' tails[r].data_fd as they are opened (WRITE) */
    int *read_fds;
} H5FD_multifile_t;

/* H5Fdelete of a file another program writes (and a create over one): refused, as HDF5's
 * own delete fails on a file another process holds locked (its open for the signature
 * cannot lock it) */
#define MF_BEING_WRITTEN "%s: open for writing by another program: not deleting it (close it first)"

/* the driver's registration, error class and MPI initialisation (vfd_driver.h) */
extern vfd_driver_t mf_driver_g;
#define MF_ERROR(...) VFD_ERROR(&mf_driver_g, __VA_ARGS__)

/* all ranks' outcome, the message of the lowest failing rank in msg (vfd_agree) */
int mf_agree(MPI_Comm comm, int ok, mf_err_t msg);

/* no later write extends this rank's last record (see extend_run) */
void mf_close_run(H5FD_multifile_t *f);

/* the files this process has open (not ALIAS), by identity: 0, or -1 (no memory) */
int               mf_register_open(H5FD_multifile_t *f);
void              mf_unregister_open(H5FD_multifile_t *f);
H5FD_multifile_t *mf_find_open(dev_t dev, ino_t ino);

/* the fapl's communicator and info; an access list that names none (HDF5_DRIVER=multifile
 * over a default list) is the calling rank's own file, or every rank's with comm=world;
 * both are the caller's to free */
void mf_fapl_comm(hid_t fapl_id, int world, MPI_Comm *comm, MPI_Info *info);

/* mf_open.c: the options an open of name uses (the access list's, HDF5_DRIVER_CONFIG's);
 * the class's open and close; an epoch committed by every rank (rank 0 writes the
 * metafile in state) */
int     mf_fapl_options(const char *name, hid_t fapl_id, mf_options_t *opt);
H5FD_t *mf_open(const char *name, unsigned flags, hid_t fapl_id, haddr_t maxaddr);
herr_t  mf_close(H5FD_t *file);
int     mf_commit(H5FD_multifile_t *f, mf_state_t state, mf_err_t err);

#endif
