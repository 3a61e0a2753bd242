#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# open_at_finalize.sh MPIEXEC SERVER WORKLOAD
# A program that calls MPI_Finalize with a DSM file still open (HDF5's t_pshutdown): HDF5
# closes the file inside MPI_Finalize, after the driver's own finalize callback has run
# (MPI deletes MPI_COMM_SELF's attributes in the reverse order of their setting). The
# clients must stay linked to the servers until that close: the file reaches the
# servers whole (its dump equals the MPI-IO reference) and every rank exits 0. One MPMD
# job (servers and clients), on every MPI.
set -euo pipefail
mpiexec=$1 server=$2 workload=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/dsm-open-at-finalize.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "open_at_finalize: FAIL: $*"; cat out.txt 2>/dev/null; exit 1; }
"$mpiexec" -n 2 "$workload" mpio "ref_{step}.h5" 2 > ref.txt 2>&1 || { cat ref.txt; fail "the MPI-IO reference failed"; }
status=0
timeout 120 "$mpiexec" -n 1 "$server" --size 2m --action summary --action "dump:dump_{step}.h5" \
    : -n 2 "$workload" mpmd "mem_{step}.h5" 2 --verify --open-at-finalize > out.txt 2>&1 || status=$?
((status == 0)) || fail "the job exited $status"
grep -q "workload: ok (2 files, 2 ranks, verified)" out.txt || fail "the clients did not finish"
grep -q "h5dsm-server: step 1: 'mem_1.h5' closed" out.txt || fail "the file left open was not closed in the DSM"
for k in 0 1; do
    h5diff "ref_$k.h5" "dump_$k.h5" > diff.txt 2>&1 || { cat diff.txt; fail "h5diff: step $k differs"; }
    [[ -s diff.txt ]] && { cat diff.txt; fail "h5diff reported something for step $k"; }
done
echo "open_at_finalize: ok (a file left open at MPI_Finalize reached the servers whole; every rank exited 0)"
