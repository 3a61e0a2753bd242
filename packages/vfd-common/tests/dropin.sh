#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# dropin.sh MPIEXEC VFD_DROPIN PLUGIN_DIR multifile H5MF
# dropin.sh MPIEXEC VFD_DROPIN PLUGIN_DIR dsm SERVER DISTRIBUTION
# vfd_dropin (legal calls an MPI driver must carry out: collective transfers with MPI
# derived datatypes, H5Dwrite_multi, collective reads, the MPI driver API calls) on 4
# ranks through HDF5's MPI-IO driver and through the driver (an unmodified program:
# HDF5_DRIVER), in each variant (plain; alignment and collective metadata; the latest
# format). Each run is judged against the program's model by itself; then the driver's
# file (merged by h5mf, or dumped by the DSM's servers) must equal MPI-IO's (h5diff:
# silent, exit 0; every element of the program is written, so every byte is defined).
set -euo pipefail
mpiexec=$1 dropin=$2 plugins=$3 driver=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/vfd-dropin.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
run() { echo "+ $*"; "$@"; }
same() { # h5diff must exit 0 and print nothing (exit 2: it could not compare)
    echo "+ h5diff $1 $2"
    h5diff "$1" "$2" > diff.txt 2>&1 || { cat diff.txt; echo "dropin: h5diff $1 $2 failed (exit $?)"; exit 1; }
    if [[ -s diff.txt ]]; then cat diff.txt; echo "dropin: $2 differs from $1"; exit 1; fi
}
for variant in 0 1 2; do
    run "$mpiexec" -n 4 "$dropin" "ref_$variant.h5" mpio --variant "$variant" | tee out.txt
    grep -q "vfd_dropin: ok (4 ranks, variant $variant" out.txt
    export HDF5_PLUGIN_PATH=$plugins HDF5_DRIVER=$driver
    if [[ $driver == multifile ]]; then
        run "$mpiexec" -n 4 "$dropin" "mf_$variant.h5" --variant "$variant" | tee out.txt
        run "$5" merge "mf_$variant.h5" -o "merged_$variant.h5"
        result=merged_$variant.h5
    else
        run "$mpiexec" -n 2 "$5" --size 4m --distribution "$6" --action "dump:dump_$variant.h5" \
            : -n 4 "$dropin" "mem_$variant.h5" --variant "$variant" | tee out.txt
        result=dump_$variant.h5
    fi
    unset HDF5_PLUGIN_PATH HDF5_DRIVER
    grep -q "vfd_dropin: ok (4 ranks, variant $variant" out.txt
    same "ref_$variant.h5" "$result"
done
echo "dropin: ok ($driver${6:+ $6})"
