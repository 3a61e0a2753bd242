/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* vfd_driver.c - what the MPI drivers do toward HDF5 the same way (see vfd_driver.h) */
#include "vfd_driver.h"

#include "vfd_mpihandle.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* h5stack's version (VERSION), in the error class: defined by the package's CMake, or
 * by the HDF5 patch where the driver is built into libhdf5 */
#ifndef H5STACK_VERSION
#error "H5STACK_VERSION is not defined (the build defines it from h5stack's VERSION)"
#endif

hid_t
vfd_register(vfd_driver_t *d)
{
    if (d->id != H5I_INVALID_HID && H5Iis_valid(d->id) > 0)
        return d->id;
    if (H5FDis_driver_registered_by_value(d->cls->value) > 0) {
        /* registered already (e.g. loaded as a plugin): find its ID through a fapl */
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        if (fapl >= 0 && H5Pset_driver_by_value(fapl, d->cls->value, NULL) >= 0)
            d->id = H5Pget_driver(fapl);
        if (fapl >= 0) {
            if (d->id >= 0)
                H5Iinc_ref(d->id);
            H5Pclose(fapl);
        }
    }
    else
        d->id = H5FDregister(d->cls);
    return d->id;
}

herr_t
vfd_terminate(vfd_driver_t *d)
{
    int finalized = 0;
    if (d->err_class != H5I_INVALID_HID) {
        H5Eclose_msg(d->err_minor);
        H5Eclose_msg(d->err_major);
        H5Eunregister_class(d->err_class);
        d->err_class = H5I_INVALID_HID;
    }
    d->id = H5I_INVALID_HID;
    if (d->initialized_mpi && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
        MPI_Finalize();
    d->initialized_mpi = 0;
    return 0;
}

int
vfd_ensure_mpi(vfd_driver_t *d, const char *path)
{
    int initialized = 0, finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
        VFD_ERROR(d,
                  "%s: MPI is finalised: the %s driver (an MPI driver) cannot open a file after MPI_Finalize "
                  "(is HDF5_DRIVER=%s set for a serial part of the program?)",
                  path, d->name, d->name);
        return -1;
    }
    MPI_Initialized(&initialized);
    if (!initialized) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
            VFD_ERROR(d, "%s: cannot initialise MPI", path);
            return -1;
        }
        d->initialized_mpi = 1;
    }
    return 0;
}

void
vfd_push(vfd_driver_t *d, const char *file, const char *func, int line, const char *fmt, ...)
{
    char    msg[VFD_MSG_SIZE + 64];
    va_list ap;
    if (d->err_class == H5I_INVALID_HID) {
        d->err_class = H5Eregister_class(d->name, d->title, H5STACK_VERSION);
        d->err_major = H5Ecreate_msg(d->err_class, H5E_MAJOR, d->major);
        d->err_minor = H5Ecreate_msg(d->err_class, H5E_MINOR, "operation failed");
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    H5Epush2(H5E_DEFAULT, file, func, (unsigned)line, d->err_class, d->err_major, d->err_minor, "%s: %s",
             d->name, msg);
}

void
vfd_api_enter(void)
{
    H5Eclear2(H5E_DEFAULT);
}

herr_t
vfd_api_fail(void)
{
    H5E_auto2_t func = NULL;
    void       *data = NULL;
    if (H5Eget_auto2(H5E_DEFAULT, &func, &data) >= 0 && func)
        func(H5E_DEFAULT, data); /* the application's handler (H5Eprint2 by default); the stack is kept */
    return -1;
}

herr_t
vfd_sync_collective(vfd_driver_t *d, MPI_Comm comm, const char *path, const char *who, const char *what,
                    herr_t status, int64_t *clock)
{
    int64_t v[2] = {status < 0, clock ? *clock : 0};
    if (MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MAX, comm) != MPI_SUCCESS) {
        VFD_ERROR(d, "%s: the %ss could not complete a %s together", path, who, what);
        return -1;
    }
    if (clock)
        *clock = v[1];
    if (v[0] && status >= 0) {
        VFD_ERROR(d, "%s: another %s's part of this %s failed", path, who, what);
        return -1;
    }
    return status;
}

bool
vfd_collective_call(void)
{
    H5FD_mpio_xfer_t mode = H5FD_MPIO_INDEPENDENT;
    return H5CX_get_io_xfer_mode(&mode) >= 0 && mode == H5FD_MPIO_COLLECTIVE;
}

int
vfd_call_datatypes(H5FD_mem_t type, MPI_Datatype *btype, MPI_Datatype *ftype)
{
    H5FD_mpio_xfer_t mode = H5FD_MPIO_INDEPENDENT;
    *btype = *ftype = MPI_BYTE;
    if (type != H5FD_MEM_DRAW || H5CX_get_io_xfer_mode(&mode) < 0 || mode != H5FD_MPIO_COLLECTIVE)
        return 0;
    return H5CX_get_mpi_coll_datatypes(btype, ftype) < 0 ? -1 : 0;
}

void
vfd_comm_free(MPI_File *handle, MPI_Comm *comm, MPI_Info *info)
{
    vfd_mpi_handle_close(handle);
    if (*comm != MPI_COMM_NULL)
        MPI_Comm_free(comm);
    if (*info != MPI_INFO_NULL)
        MPI_Info_free(info);
}

herr_t
vfd_ctl(vfd_driver_t *d, const char *path, const vfd_comm_t *c, uint64_t op_code, uint64_t flags,
        void **output)
{
    switch (op_code) {
        case H5FD_CTL_GET_MPI_COMMUNICATOR_OPCODE:
            **((MPI_Comm **)output) = c->comm;
            return 0;
        case H5FD_CTL_GET_MPI_INFO_OPCODE:
            **((MPI_Info **)output) = c->info;
            return 0;
        case H5FD_CTL_GET_MPI_RANK_OPCODE:
            **((int **)output) = c->rank;
            return 0;
        case H5FD_CTL_GET_MPI_SIZE_OPCODE:
            **((int **)output) = c->size;
            return 0;
        case H5FD_CTL_GET_MPI_FILE_SYNC_OPCODE:
            **((bool **)output) = false;
            return 0;
        default:
            if (flags & H5FD_CTL_FAIL_IF_UNKNOWN_FLAG) {
                VFD_ERROR(d, "%s: unknown ctl operation %" PRIu64, path, op_code);
                return -1;
            }
            return 0;
    }
}

herr_t
vfd_query(const H5FD_t *file, unsigned long *flags)
{
    (void)file; /* called on the class too (file == NULL) */
    if (flags)
        *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_HAS_MPI |
                 H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
    return 0;
}

/* the type and size of entry i, in order from 0 (HDF5's compact convention: a size of 0
 * or a type of H5FD_MEM_NOLIST ends its array, the previous one holding for the rest) */
typedef struct {
    size_t     size;
    H5FD_mem_t type;
    bool       fixed_size, fixed_type;
} entry_iter_t;

static void
entry_at(entry_iter_t *e, uint32_t i, const H5FD_mem_t types[], const size_t sizes[])
{
    if (!e->fixed_size && (i == 0 || sizes[i] != 0))
        e->size = sizes[i];
    else
        e->fixed_size = true;
    if (!e->fixed_type && (i == 0 || types[i] != H5FD_MEM_NOLIST))
        e->type = types[i];
    else
        e->fixed_type = true;
}

herr_t
vfd_each_entry(vfd_entry_fn io, H5FD_t *file, hid_t dxpl, uint32_t count, const H5FD_mem_t types[],
               const haddr_t addrs[], const size_t sizes[], void *bufs[])
{
    entry_iter_t e = {0, H5FD_MEM_DEFAULT, false, false};
    for (uint32_t i = 0; i < count; i++) {
        entry_at(&e, i, types, sizes);
        if (io(file, e.type, dxpl, addrs[i], e.size, bufs[i]) < 0)
            return -1;
    }
    return 0;
}

/* a run of vfd_each_run: its first entry's buffer until a second joins, then the stage */
typedef struct {
    H5FD_mem_t     type;
    haddr_t        addr;
    size_t         len, cap;
    const void    *first;
    unsigned char *stage;
} run_t;

static herr_t
run_out(run_t *r, vfd_entry_fn io, H5FD_t *file, hid_t dxpl)
{
    herr_t ret =
        r->len == 0 ? 0 : io(file, r->type, dxpl, r->addr, r->len, (void *)(r->first ? r->first : r->stage));
    r->len = 0;
    return ret;
}

/* whether an entry joins the run: it continues it, and the stage (made now) holds both */
static bool
run_joins(run_t *r, H5FD_mem_t type, haddr_t addr, size_t size)
{
    if (r->len == 0 || r->len > r->cap || type != r->type || addr != r->addr + r->len ||
        size > r->cap - r->len)
        return false; /* (a first entry larger than the stage stays alone) */
    if (!r->stage && !(r->stage = malloc(r->cap)))
        return false; /* no memory for a stage: the entries go one by one */
    if (r->first) {
        memcpy(r->stage, r->first, r->len);
        r->first = NULL;
    }
    return true;
}

herr_t
vfd_each_run(vfd_entry_fn io, H5FD_t *file, hid_t dxpl, uint32_t count, const H5FD_mem_t types[],
             const haddr_t addrs[], const size_t sizes[], const void *bufs[])
{
    entry_iter_t e     = {0, H5FD_MEM_DEFAULT, false, false};
    run_t        r     = {H5FD_MEM_DEFAULT, 0, 0, 0, NULL, NULL};
    herr_t       ret   = 0;
    size_t       total = 0;
    for (uint32_t i = 0; i < count; i++) { /* the stage: no larger than the vector */
        entry_at(&e, i, types, sizes);
        total += e.size < VFD_RUN_MAX - total ? e.size : VFD_RUN_MAX - total;
    }
    r.cap = total;
    e     = (entry_iter_t){0, H5FD_MEM_DEFAULT, false, false};
    for (uint32_t i = 0; i < count && ret >= 0; i++) {
        entry_at(&e, i, types, sizes);
        if (run_joins(&r, e.type, addrs[i], e.size)) {
            memcpy(r.stage + r.len, bufs[i], e.size);
            r.len += e.size;
            continue;
        }
        ret = run_out(&r, io, file, dxpl);
        r   = (run_t){e.type, addrs[i], e.size, r.cap, bufs[i], r.stage};
    }
    if (ret >= 0)
        ret = run_out(&r, io, file, dxpl);
    free(r.stage);
    return ret;
}
