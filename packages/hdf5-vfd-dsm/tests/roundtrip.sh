#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# roundtrip.sh MPIEXEC SERVER WORKLOAD DISTRIBUTION SERVERS CLIENTS
# The DSM against HDF5's MPI-IO driver: the workload (h5dsm-workload, tools/h5dsm_workload.c) writes three
# files (time steps) with MPI-IO to disk (the reference) and through the DSM in one MPMD
# job, where h5dsm-server lists each file through the driver and dumps it to disk; each
# dump must equal its reference (h5diff), the clients read each file back through the
# DSM (--verify) and delete the last one (H5Fdelete: then it is gone, and a second delete
# fails), and nothing the clients named reaches the disk.
set -euo pipefail
mpiexec=$1 server=$2 workload=$3 distribution=$4 nservers=$5 nclients=$6
work=$(mktemp -d "${TMPDIR:-/tmp}/dsm-roundtrip.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
run() { echo "+ $*"; "$@"; }
steps=3

run "$mpiexec" -n "$nclients" "$workload" mpio "ref_{step}.h5" "$steps"
# negative control: h5diff must tell two steps apart, exit 1 (exit 2 is h5diff's own
# error, e.g. a file its HDF5 cannot read: never "different")
status=0
h5diff -q ref_0.h5 ref_1.h5 || status=$?
[ "$status" = 1 ] || { echo "h5diff -q ref_0.h5 ref_1.h5: exit $status, expected 1 (different steps)"; exit 1; }

run "$mpiexec" -n "$nservers" "$server" --size 2m --distribution "$distribution" \
    --action summary --action list --action "dump:dump_{step}.h5" \
    : -n "$nclients" "$workload" mpmd "mem_{step}.h5" "$steps" --verify --delete-last | tee out.txt
grep -q "workload: ok ($steps files, $nclients ranks, verified)" out.txt
grep -q "workload: mem_$((steps - 1)).h5 deleted" out.txt
grep -q "h5dsm-server: the clients disconnected after $steps file(s)" out.txt
grep -q 'DATASET "/fields/pressure" { '"$((64 * nclients))"', 96 }' out.txt
for ((k = 0; k < steps; k++)); do
    # h5diff exits 0 for datasets of other shapes ("not comparable"): it must print nothing
    echo "+ h5diff ref_$k.h5 dump_$k.h5"
    h5diff "ref_$k.h5" "dump_$k.h5" > diff.txt 2>&1 || { cat diff.txt; exit 1; }
    if [[ -s diff.txt ]]; then cat diff.txt; echo "h5diff reported something for step $k"; exit 1; fi
done
if ls mem_* 2>/dev/null; then echo "files named by the clients reached the disk"; exit 1; fi
echo "roundtrip: ok ($distribution, $nservers servers, $nclients clients)"
