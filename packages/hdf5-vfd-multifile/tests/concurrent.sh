#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# concurrent.sh MPIEXEC MF_PATH H5MF PLUGIN_DIR [ROUNDS]
# Two programs create the same name at the same moment (both layouts, ROUNDS times,
# default 8): each either succeeds or is refused with the reason (one writer at a time);
# never do both succeed with a damaged file: whatever is left verifies (h5mf verify) and
# holds the values of a program that succeeded. H5Fdelete of a file another program
# writes is refused with the reason, and deletes it once the writer is gone.
set -uo pipefail
mpiexec=$1 prog=$2 h5mf=$3 rounds=${5:-8}
export HDF5_PLUGIN_PATH=$4 HDF5_DRIVER=multifile
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-concurrent.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "concurrent: FAILED: $*"; exit 1; }
refused=0 both=0
for layout in dir head; do
    export HDF5_DRIVER_CONFIG="layout=$layout"
    for ((k = 0; k < rounds; k++)); do
        timeout 120 "$mpiexec" -n 2 "$prog" create c.h5 1 </dev/null >a.txt 2>&1 &
        a=$!
        timeout 120 "$mpiexec" -n 2 "$prog" create c.h5 2 </dev/null >b.txt 2>&1 &
        b=$!
        wait "$a"
        ra=$?
        wait "$b"
        rb=$?
        ((ra == 0 || rb == 0)) || fail "$layout: both creates failed: $(tail -3 a.txt) / $(tail -3 b.txt)"
        for r in a b; do
            [[ $r == a ]] && rc=$ra || rc=$rb
            ((rc == 0)) || grep -q "one writer at a time" $r.txt || fail "$layout: a refused create gave no reason: $(grep -v "major\|minor" $r.txt | tail -4)"
        done
        ((ra != 0 || rb != 0)) && refused=$((refused + 1)) || both=$((both + 1))
        "$h5mf" verify c.h5 >v.txt 2>&1 || fail "$layout, round $k: the file left does not verify: $(cat v.txt)"
        ok=0
        ((ra == 0)) && timeout 60 "$mpiexec" -n 2 "$prog" check c.h5 1 </dev/null >/dev/null 2>&1 && ok=1
        ((rb == 0)) && timeout 60 "$mpiexec" -n 2 "$prog" check c.h5 2 </dev/null >/dev/null 2>&1 && ok=1
        ((ok)) || fail "$layout, round $k: the file left holds the values of no program that succeeded (exits $ra, $rb)"
    done
    # H5Fdelete while another program writes the file (its writer lock held): refused
    # with the reason, the file kept; once the writer is gone, deleted
    [[ $layout == head ]] && data=c.h5.h5mf/0 || data=c.h5/0
    (exec 9<"$data" && flock -x 9 && exec sleep 60) &
    holder=$!
    for ((i = 0; i < 50; i++)); do flock -xn "$data" true || break; sleep 0.1; done
    timeout 60 "$mpiexec" -n 2 "$prog" delete c.h5 </dev/null >d.txt 2>&1 && fail "$layout: H5Fdelete of a file being written succeeded"
    grep -q "open for writing by another program: not deleting it" d.txt || fail "$layout: no reason: $(grep -v "major\|minor" d.txt | tail -4)"
    [[ -e $data ]] || fail "$layout: the refused H5Fdelete removed the file"
    kill "$holder"
    wait "$holder" 2>/dev/null
    timeout 60 "$mpiexec" -n 2 "$prog" delete c.h5 </dev/null >d.txt 2>&1 || fail "$layout: H5Fdelete: $(tail -4 d.txt)"
    [[ ! -e c.h5 && ! -e c.h5.h5mf ]] || fail "$layout: H5Fdelete left $(ls)"
done
echo "concurrent: ok ($((2 * rounds)) pairs of creates of one name: $refused with one refused, $both one after the other;"
echo "H5Fdelete refused while another program writes, in both layouts)"
