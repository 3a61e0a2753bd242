#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# rotate.sh MPIEXEC MF_ROTATE PLUGIN_DIR
# mf_rotate through the plugin (HDF5_DRIVER=multifile) on 4 ranks, rank 0's clock
# running 1.5 times as fast as the others' (libfaketime, as on a node whose clock
# drifts): collective writes that HDF5 makes independent underneath must keep the
# program's order. Skipped (77) without libfaketime.
set -euo pipefail
mpiexec=$1 prog=$2 plugins=$3
lib=
for f in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1; do
    [[ -r $f ]] && { lib=$f; break; }
done
[[ -n $lib ]] || { echo "rotate: libfaketime is not installed (Debian: faketime): not run"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-rotate.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HDF5_PLUGIN_PATH=$plugins HDF5_DRIVER=multifile
"$mpiexec" -n 1 env LD_PRELOAD="$lib" FAKETIME="+0 x1.5" "$prog" "$work" : -n 3 "$prog" "$work"
