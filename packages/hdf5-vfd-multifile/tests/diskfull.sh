#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# diskfull.sh MPIEXEC WORKLOAD H5MF REOPEN
# A full file system (a 256 KiB tmpfs): writing fails with a clear message naming the
# file and "No space left on device"; a read-write open that would continue a complete
# directory (by as many ranks, fewer, or more, which make new rank files) fails so and
# leaves it complete; a merge that cannot write its output leaves the directory as it
# was. Needs root for the mount: exits 77 (skipped) otherwise.
set -uo pipefail
mpiexec=$1 workload=$2 h5mf=$3 reopen=$4
if [ "$(id -u)" != 0 ]; then echo "skipped: mounting a small tmpfs needs root"; exit 77; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-diskfull.XXXXXX")
small=$work/small
mkdir "$small"
if ! mount -t tmpfs -o size=256k tmpfs "$small" 2> /dev/null; then
    rmdir "$small"; rmdir "$work"; echo "skipped: cannot mount a tmpfs here"; exit 77
fi
trap 'umount "$small"; rm -rf "$work"' EXIT
failures=0
# one rank: no other rank aborts the job while this one prints its error stack
out=$("$mpiexec" -n 1 "$workload" "$small/full.h5" --driver multifile --options layout=dir --datasets 200 2>&1) && { echo "FAIL: wrote into a full disk"; failures=1; }
grep -q "No space left on device" <<<"$out" && grep -q "multifile: $small/full.h5" <<<"$out" \
    && echo "ok: full disk while writing: clear error" || { echo "FAIL: message"; tail -20 <<<"$out"; failures=1; }

rm -rf "$small/full.h5"
# a complete directory that fits, then no room for its reconstruction
"$mpiexec" -n 2 "$workload" "$small/fits.h5" --driver multifile --options layout=dir --datasets 2 > /dev/null \
    || { echo "FAIL: small workload"; exit 1; }
fill=$small/filler
dd if=/dev/zero of="$fill" bs=4k 2> /dev/null
for ranks in 2 1 3; do
    out=$("$mpiexec" -n "$ranks" "$reopen" --open-rdwr "$small/fits.h5" 2>&1) \
        && { echo "FAIL: continued on a full disk by $ranks ranks"; failures=1; }
    # (h5mf's output into a variable, not a pipe: `grep -q` leaving early would kill
    # h5mf with SIGPIPE, which pipefail reports as a failure)
    info=$("$h5mf" info "$small/fits.h5" 2>&1)
    verify=$("$h5mf" verify "$small/fits.h5" 2>&1); verified=$?
    if grep -q "multifile: $small/fits.h5/.*No space left on device" <<<"$out" \
        && grep -q ", complete, " <<<"$info" && [ "$verified" = 0 ]; then
        echo "ok: full disk when continued by $ranks ranks: clear error, the directory complete"
    else
        echo "FAIL: continued by $ranks ranks on a full disk"; tail -20 <<<"$out"
        echo "h5mf info: $info"; echo "h5mf verify (exit $verified): $verify"; failures=1
    fi
done
out=$("$h5mf" merge "$small/fits.h5" 2>&1) && { echo "FAIL: merged into a full disk"; failures=1; }
grep -qi "no space left\|cannot size" <<<"$out" && test -d "$small/fits.h5" && "$h5mf" verify "$small/fits.h5" > /dev/null \
    && echo "ok: full disk while merging: directory intact" || { echo "FAIL: merge on full disk: $out"; failures=1; }
[[ $(ls -a "$small") == *h5mf-merge* ]] && { echo "FAIL: partial output left behind"; failures=1; }
rm -f "$fill"
"$h5mf" merge "$small/fits.h5" -q && test -f "$small/fits.h5" && echo "ok: merge once there is room" \
    || { echo "FAIL: merge with room"; failures=1; }
echo "diskfull: $failures failure(s)"
exit $failures
