#!/bin/bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# h5mf_preload: with HDF5_DRIVER=multifile, an application that calls H5Pset_fapl_mpio
# writes a multifile file (a head over.h5 beside over.h5.h5mf/); without it, the call
# passes through to MPI-IO.
# preload.sh MPIEXEC MF_WORKLOAD H5MF PRELOAD_LIB PLUGIN_DIR
set -u
mpiexec=$1 workload=$2 h5mf=$3 preload=$4 plugins=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

"$mpiexec" -n 2 "$workload" ref.h5 --driver mpio >/dev/null || fail "reference run"
# preloaded per rank (not into the launcher)
"$mpiexec" -n 2 env LD_PRELOAD="$preload" HDF5_DRIVER=multifile HDF5_PLUGIN_PATH="$plugins" \
    "$workload" over.h5 --driver mpio >/dev/null || fail "run with the preload"
[ -f over.h5.h5mf/metafile ] || fail "H5Pset_fapl_mpio was not turned into multifile: no over.h5.h5mf/metafile"
"$h5mf" verify over.h5 >/dev/null || fail "h5mf verify"
# reading through H5Pset_fapl_mpio with the preload: the driver's read, in place
"$mpiexec" -n 2 env LD_PRELOAD="$preload" HDF5_DRIVER=multifile HDF5_PLUGIN_PATH="$plugins" \
    "$workload" over.h5 --driver mpio --check >/dev/null || fail "read back with the preload"
[ -f over.h5.h5mf/metafile ] || fail "the read changed over.h5: its directory is gone"
"$h5mf" merge over.h5 -q && [ ! -e over.h5.h5mf ] || fail "h5mf merge"
h5diff ref.h5 over.h5 || fail "h5diff: the substituted run differs from MPI-IO"
# without HDF5_DRIVER=multifile the call is MPI-IO's own
"$mpiexec" -n 2 env LD_PRELOAD="$preload" "$workload" plain.h5 --driver mpio >/dev/null || fail "pass-through run"
[ -f plain.h5 ] && [ ! -e plain.h5.h5mf ] || fail "without HDF5_DRIVER the preload changed the driver"
h5diff ref.h5 plain.h5 || fail "h5diff: pass-through differs"
echo "preload: ok (H5Pset_fapl_mpio -> multifile with HDF5_DRIVER=multifile; pass-through without)"
