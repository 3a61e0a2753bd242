/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_plan.h - a random parallel HDF5 workload and the file it must leave behind.
 *
 * fz_plan_make() turns a seed and a number of ranks into a list of operations that
 * every rank executes in the same order (fz_exec.c) on objects whose creation
 * properties the plan holds; fz_model_apply() replays them on a model of every element
 * and attribute. Both depend on (seed, ranks) only, so a verifier with any number of
 * ranks rebuilds the same model. No MPI or HDF5 here.
 *
 * The plan writes only what MPI-IO itself defines: within one write each element has
 * one writer; an element written by one rank is rewritten by another rank only after a
 * flush or a collective write orders the two (as MPI-IO's collective writes do; HDF5
 * writes compact datasets in object headers, never collectively, and turns a collective
 * write that converts the elements independent, so those do not count);
 * a read of other ranks' data follows a barrier after their writes.
 */
#ifndef FZ_PLAN_H
#define FZ_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define FZ_NAME        256
#define FZ_MAX_OBJECTS 64
#define FZ_MAX_RANK    8 /* dimensions the model carries (the workloads use 1 to 5) */
#define FZ_MAX_JOIN    4 /* transfers joined in one H5Dwrite_multi or H5Dread_multi (grammar 6) */

enum fz_op_kind { OP_GROUP, OP_DSET, OP_WRITE, OP_EXTEND, OP_ATTR, OP_READ, OP_FLUSH, OP_REOPEN, OP_DELETE };
enum fz_layout { LAYOUT_CONTIGUOUS, LAYOUT_CHUNKED, LAYOUT_COMPACT };
enum fz_pattern { PAT_BLOCKS, PAT_CYCLIC, PAT_POINTS, PAT_ALL };
enum fz_fill_time { FILL_IFSET, FILL_ALLOC, FILL_NEVER };
/* the dataset's type in the file; every transfer uses native int32 in memory, so all but
 * the first need conversion (the values fit every one exactly) */
enum fz_file_type { FT_I32LE, FT_I32BE, FT_I64LE, FT_F64LE, FT_COUNT };
/* a transfer's property variations (fz_op_t.xfer, bits) */
enum fz_xfer {
    XFER_SELECTION_OFF = 1, /* H5Pset_selection_io(OFF): HDF5 describes it by MPI datatypes */
    XFER_INDIVIDUAL    = 2, /* H5Pset_dxpl_mpio_collective_opt(H5FD_MPIO_INDIVIDUAL_IO) */
    XFER_CHUNK_ONE     = 4, /* H5Pset_dxpl_mpio_chunk_opt(H5FD_MPIO_CHUNK_ONE_IO) */
    XFER_CHUNK_MULTI   = 8  /* H5Pset_dxpl_mpio_chunk_opt(H5FD_MPIO_CHUNK_MULTI_IO) */
};
/* the dataset's chunk cache (its access list) */
enum fz_cache { CACHE_DEFAULT, CACHE_NONE, CACHE_LARGE };
/* grammar 3: the element in memory (enum fz_mem_type; grammars 1 and 2: MT_I32 with the
 * file types above). Each has a file type equal to it and one that needs a conversion
 * (fz_object_t.fconv): integers and floats of other sizes and byte orders, a compound
 * with its members in another order, a longer space-padded string, an enum of another
 * base type (its members converted by name), an array of big-endian elements */
enum fz_mem_type {
    MT_I32,
    MT_I8,
    MT_U16,
    MT_I64,
    MT_F32,
    MT_F64,
    MT_COMPOUND,
    MT_STRING,
    MT_ENUM,
    MT_ARRAY,
    MT_COUNT
};
/* the grammars: 1 the first one (int32 in the file, no transfer variations, independent
 * reads); 2 adds file types, filters, transfer variations, collective reads, deletes,
 * chunk caches, alignment and the latest format; 3 adds the element types above, three
 * dimensions and paged file-space aggregation; 4 adds nbit and scaleoffset, which HDF5
 * 1.14.6 fails with its own MPI-IO driver (kept to reproduce that, and to try newer
 * HDF5 versions); 5 is grammar 3 (not 4) and datasets of 4 and 5 dimensions, and reopens
 * by another number of ranks (the first k of the job, on a communicator of their own,
 * the others idle until a later reopen takes them again); 6 is grammar 5 and collective
 * writes and reads of several datasets in one call (H5Dwrite_multi, H5Dread_multi).
 * Each draws from a random stream of its own, so that a plan of an earlier grammar is
 * unchanged by the later ones */
#define FZ_GRAMMAR_LATEST 6

/* An OP_READ with block > 0 reads bands: rank `shift` its band [shift*block, +block),
 * each other rank r the first element of its band r*block; with pattern PAT_POINTS rank
 * `shift` selects its region as points (late inside the call when HDF5 builds the MPI
 * datatype of the points after the call's opening MPI_Allreduce) */
typedef struct {
    int      kind;
    int      target;     /* object index (OP_GROUP/OP_DSET: the new one; OP_ATTR: any object) */
    int      coll;       /* collective transfer */
    int      pattern;    /* OP_WRITE: enum fz_pattern; OP_READ: see below */
    int      shift;      /* OP_WRITE: rotates which rank owns which part; OP_READ: see below */
    uint64_t block;      /* OP_WRITE PAT_CYCLIC: block length; PAT_POINTS: 1 in `block` elements */
    uint64_t dim0;       /* OP_WRITE, OP_READ: the dataset's first dimension then; OP_EXTEND: the new one */
    uint32_t skip;       /* OP_WRITE: ranks (bit r % 32) that write nothing this time */
    uint64_t salt;       /* OP_WRITE: values; OP_READ: regions */
    int32_t  value;      /* OP_ATTR */
    int      delay_rank; /* a rank that sleeps delay_us before the operation (-1: none) */
    unsigned delay_us;
    /* grammar 2 */
    int xfer;    /* OP_WRITE, OP_READ: enum fz_xfer bits */
    int barrier; /* OP_READ: a barrier first (always for independent reads) */
    /* grammar 5: the ranks of the session the operation runs in (the first `ranks` of
     * the job; 0: all); for OP_REOPEN, those of the session it opens */
    int ranks;
    /* grammar 6: OP_WRITE, OP_READ: joins the transfer before it (collective, the same
     * transfer list, another dataset) in one H5Dwrite_multi or H5Dread_multi */
    int join;
} fz_op_t;

typedef struct {
    char name[FZ_NAME]; /* full path */
    int  is_dset;
    int  parent;
    /* datasets: creation properties */
    int      nd;
    uint64_t dims[FZ_MAX_RANK], maxdims[FZ_MAX_RANK], chunk[FZ_MAX_RANK]; /* maxdims[0] == 0: unlimited */
    int      layout, deflate, fill_time, fill_set;
    int32_t  fill;
    int      ftype, shuffle, fletcher32, cache, dense_attrs; /* grammar 2 (enums above) */
    int      mtype, fconv;      /* grammar 3: enum fz_mem_type, and a file type that converts */
    int      nbit, scaleoffset; /* grammar 4: H5Pset_nbit, H5Pset_scaleoffset(H5Z_SO_INT) */
    int      deleted;           /* while planning: removed (H5Ldelete); no later operation names it */
    /* while planning */
    uint64_t cur0;        /* first dimension now */
    int64_t  last_owners; /* who owns what in independent writes since the last ordering point, -1 none */
} fz_object_t;

/* what the model knows of an element */
enum fz_element_state {
    FZ_UNDEFINED, /* never written and no fill value written: any bytes (MPI-IO may leave garbage) */
    FZ_FILLED,    /* holds the fill value HDF5 wrote */
    FZ_WRITTEN    /* holds the value of the last write */
};

/* the expected state of an object after some operations: for a dataset, the bytes of
 * every element in the memory type (esize bytes each, row-major over dims) */
typedef struct {
    int      exists, has_attr;
    int32_t  attr;
    int      nd;
    uint64_t dims[FZ_MAX_RANK];
    size_t   esize;
    uint8_t *v;
    uint8_t *state; /* enum fz_element_state, one per element */
} fz_mobj_t;

typedef struct {
    fz_mobj_t obj[FZ_MAX_OBJECTS];
} fz_model_t;

typedef struct {
    uint64_t    seed;
    int         ranks;
    int         sync_bytes; /* >0: metadata cache sync points after this many dirty bytes */
    int         coll_md;    /* metadata written collectively (H5Pset_coll_metadata_write) */
    int         grammar;    /* 1 to FZ_GRAMMAR_LATEST */
    int         align;      /* grammar 2: H5Pset_alignment(fapl, 1, align) when > 0 */
    int         latest;     /* grammar 2: H5Pset_libver_bounds(LATEST, LATEST) */
    int         paged;      /* grammar 3: H5Pset_file_space_strategy(PAGE, not persistent) */
    int         ranks0;     /* grammar 5: ranks of the session that creates the file (0: all) */
    int         all_ranks;  /* grammars 5, 6: FZ_PLAN_ALL_RANKS (no session of fewer ranks) */
    int         active;     /* while planning: ranks of the session (grammar 5), else ranks */
    fz_op_t    *ops;
    size_t      nops, cap;
    fz_object_t obj[FZ_MAX_OBJECTS]; /* obj[0] is the root group */
    int         nobj;
} fz_plan_t;

/* how a plan is made (fz_plan_make's flags) */
enum fz_plan_flags {
    /* grammars 5 and 6: every session by all the job's ranks (what the DSM hosts: its
     * clients open a file together); the same random draws, so the same workload but
     * for the sessions */
    FZ_PLAN_ALL_RANKS = 1
};
/* a random workload of about nops operations (flags: enum fz_plan_flags); 0, or -1
 * (out of memory) */
int fz_plan_make(fz_plan_t *p, uint64_t seed, int ranks, size_t nops, int grammar, int flags);
/* the regression workload "straddle": chunked datasets whose chunks straddle the
 * ranks' slabs, written independently, a flush after each */
int fz_plan_straddle(fz_plan_t *p, int ranks);
/* the regression workload "metadata": groups and attributes rewritten many times, sync
 * points every KiB of dirty metadata, one epoch (no flush) */
int fz_plan_metadata(fz_plan_t *p, int ranks);
/* the regression workload "snapshot": a collective read in which the last rank reads its
 * band as a large point selection (so it reaches the driver late), and right after it
 * rank 0 overwrites that band with an independent write, a flush after each round: the
 * last rank must read the values from before the call (what MPI-IO's collective reads
 * give), never the overwrite that rank 0 issued after its own part returned */
int  fz_plan_snapshot(fz_plan_t *p, int ranks);
void fz_plan_free(fz_plan_t *p);

void fz_model_init(fz_model_t *m);
/* the state after op; 0, or -1 (out of memory) */
int  fz_model_apply(fz_model_t *m, const fz_plan_t *p, const fz_op_t *op);
void fz_model_free(fz_model_t *m);

/* is the dataset filtered (writes must be collective in parallel HDF5)? */
int fz_filtered(const fz_object_t *o);
/* elements of a dataset whose first dimension is dim0 */
uint64_t fz_elements(const fz_object_t *o, uint64_t dim0);
/* the bytes of one element in memory (the memory type of every read and write) */
size_t fz_element_size(const fz_object_t *o);
/* the bytes in memory of the element that stands for value v (exact in every file type
 * of the dataset); out holds fz_element_size(o) bytes */
void fz_element_bytes(const fz_object_t *o, int32_t v, uint8_t *out);
/* the innermost dimension (a run of a hyperslab stays within one) and the elements of
 * one row (every dimension but the first) */
uint64_t fz_line(const fz_object_t *o);
/* the values of the enum's four members in memory (MT_ENUM) */
extern const int fz_enum_values[4];
uint64_t         fz_row(const fz_object_t *o);
/* elements of a model object, and those of them the model leaves undefined */
uint64_t fz_model_elements(const fz_mobj_t *mo);
uint64_t fz_model_undefined(const fz_mobj_t *mo);
/* the ranks of the session an operation runs in (after it, for OP_REOPEN) */
int fz_op_ranks(const fz_plan_t *p, const fz_op_t *op);
/* the rank that writes element i (row-major) in a write, or -1 for nobody */
int fz_owner(const fz_plan_t *p, const fz_object_t *o, const fz_op_t *op, uint64_t i);
/* the value a write puts in element i */
int32_t fz_value(const fz_op_t *op, uint64_t i);
/* a rank's read region of an OP_READ: first and count of rows (or elements, 1-D) */
void fz_read_region(const fz_object_t *o, const fz_op_t *op, int rank, uint64_t *first, uint64_t *count);

const char *fz_op_name(int kind);

#endif
