#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# alone.sh MPIEXEC MF_ALONE PLUGIN_DIR
# Through the plugin (HDF5_DRIVER=multifile): files that one rank opens alone with a
# default access list work (mf_alone own, 2 and 3 ranks), opens that cannot both be are
# refused at once (mf_alone conflict: a second writer, a second open over other
# ranks), and an open that can never
# complete (one rank over MPI_COMM_WORLD) ends the job with the reason within its
# open_wait instead of waiting for ever.
set -euo pipefail
mpiexec=$1 prog=$2 plugins=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-alone.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HDF5_PLUGIN_PATH=$plugins HDF5_DRIVER=multifile
fail() { echo "alone: FAILED: $*"; exit 1; }
for np in 2 3; do
    rm -rf "${work:?}"/*
    timeout 120 "$mpiexec" -n "$np" "$prog" "$work" own </dev/null || fail "own on $np ranks: exit $?"
    [[ -f $work/own.h5 && -d $work/own.h5.h5mf && -f $work/rank1.h5 && -d $work/rank1.h5.h5mf ]] ||
        fail "own on $np ranks: no multifile files (heads beside their directories) written"
done
rm -rf "${work:?}"/*
timeout 120 "$mpiexec" -n 2 "$prog" "$work" conflict </dev/null >"$work/out" 2>&1 || fail "conflict: exit $?: $(tail -5 "$work/out")"
grep -q "mf_alone: conflicts refused" "$work/out" || fail "conflict: $(tail -5 "$work/out")"
grep -q "one writer at a time" "$work/out" || fail "conflict: no message for the second writer"
grep -q "open in this process already over other ranks" "$work/out" || fail "conflict: no message for the open over other ranks"
rc=0
SECONDS=0
HDF5_DRIVER_CONFIG="open_wait=3" timeout 120 "$mpiexec" -n 2 "$prog" "$work" stray </dev/null >"$work/out" 2>&1 || rc=$?
cat "$work/out"
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "stray: exit $rc (124: the job hung until timeout killed it)"
grep -q "stray.h5: rank 0 of MPI_COMM_WORLD has waited 3 s in the collective open" "$work/out" ||
    fail "stray: no message naming the file and the rank"
grep -q "H5Pset_mpi_params" "$work/out" || fail "stray: the message does not name H5Pset_mpi_params"
echo "alone: ok (one rank's own files on 2 and 3 ranks; conflicting opens refused; an open that cannot complete ended after ${SECONDS} s, exit $rc)"
