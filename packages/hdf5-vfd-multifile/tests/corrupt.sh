#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# corrupt.sh MPIEXEC WORKLOAD H5MF RENAME REOPEN
# Damaged or torn input is never accepted as data: a complete directory must hold every
# record its metafile committed, intact; the driver and h5mf refuse anything else with
# the reason and change nothing. Also: a directory renamed while written, leftovers of
# merges that died, and h5mf on an ordinary HDF5 file.
set -uo pipefail
mpiexec=$1 workload=$2 h5mf=$3 rename=$4 reopen=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-corrupt.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_fail() { # expect_fail "message part" command...
    local want=$1; shift
    local out
    out=$("$@" 2>&1) && { fail "(exit 0) $*"; return; }
    if grep -qF -- "$want" <<<"$out"; then echo "ok: $* -> $want"
    else fail "(message) $*"; echo "$out" | tail -5; fi
}
refused_everywhere() { # refused_everywhere DIR "message part": verify, merge, read-only opens (in place, merge)
    local d=$1 want=$2 before
    before=$(cd "$d" && sha256sum ./* | sha256sum)
    expect_fail "$want" "$h5mf" verify "$d"
    expect_fail "$want" "$h5mf" merge "$d"
    expect_fail "$want" "$h5mf" merge "$d" -o "$d.out"
    expect_fail "$want" "$mpiexec" -n 1 "$reopen" --open-rdonly "$d"
    expect_fail "$want" "$mpiexec" -n 1 "$reopen" --open-rdonly "$d" read=merge
    test -d "$d" && test "$(cd "$d" && sha256sum ./* | sha256sum)" = "$before" || fail "$d was changed"
    test ! -e "$d.out" || fail "$d.out was written"
    "$h5mf" info "$d" | grep -q DAMAGED || fail "h5mf info $d does not say DAMAGED"
}
"$mpiexec" -n 2 "$workload" good.h5 --driver multifile --datasets 4 > /dev/null || exit 1
records=$(( ($(stat -c %s good.h5/1.offset) - 32) / 48 ))

# a bit flipped in the last record of an index
cp -r good.h5 flip.h5
python3 - flip.h5/1.offset <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-20] ^= 0x10; open(p, "wb").write(b)
PY
refused_everywhere flip.h5 "damaged"
# an index cut in the middle of a record
cp -r good.h5 cut.h5 && truncate -s -20 cut.h5/1.offset
refused_everywhere cut.h5 "damaged"
# whole records cut off the end
cp -r good.h5 short.h5 && truncate -s -96 short.h5/1.offset
refused_everywhere short.h5 "the metafile committed"
# a byte of data flipped (the index intact): every reconstruction checks the data
# checksums first (h5mf merge, and the driver's read-only open with read=merge, which
# removes the directory afterwards); --no-verify is the user's explicit choice
cp -r good.h5 data.h5
python3 - data.h5/1 <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0x5a; open(p, "wb").write(b)
PY
before=$(cd data.h5 && sha256sum ./* | sha256sum)
expect_fail "data checksum mismatch" "$h5mf" verify data.h5
expect_fail "data checksum mismatch" "$h5mf" merge data.h5
expect_fail "data checksum mismatch" "$h5mf" merge data.h5 -o data.out
expect_fail "data checksum mismatch" "$mpiexec" -n 1 "$reopen" --open-rdonly data.h5 read=merge
expect_fail "data checksum mismatch" "$mpiexec" -n 2 "$reopen" --open-rdonly data.h5 read=merge
test -d data.h5 && test "$(cd data.h5 && sha256sum ./* | sha256sum)" = "$before" || fail "data.h5 was changed"
test ! -e data.out || fail "data.out was written"
"$h5mf" merge data.h5 -o data.out --no-verify -q > /dev/null && test -f data.out || fail "merge --no-verify"
echo "ok: rank 1 wrote $records records; damaged copies refused"

# a directory renamed while it is written: the writers go on in it
mkdir moved && "$mpiexec" -n 2 "$rename" moved | grep -q "rename: ok" || fail "mf_rename"
"$h5mf" verify moved/b.h5 > /dev/null || fail "the renamed directory is not complete"
test ! -e moved/a.h5 || fail "a.h5 came back"
"$mpiexec" -n 1 "$reopen" --open-rdonly moved/b.h5 read=merge && h5dump -d /second moved/b.h5 > /dev/null \
    || fail "the renamed directory does not reconstruct into a file with both datasets"

# leftovers of merges that died: an output, a directory swapped out, one of a zombie;
# an output whose merge still runs (it holds its lock) stays
cp -r good.h5 left.h5
printf 'partial' > .left.h5.h5mf-merge.999999
cp -r good.h5 .left.h5.h5mf-merge.999998
python3 -c 'import os, sys, time
pid = os.fork()
if pid == 0: os._exit(0)
open(".left.h5.h5mf-merge.%d" % pid, "w").write("of a zombie"); time.sleep(30)' > /dev/null 2>&1 &
zparent=$!
python3 -c 'import fcntl, time
f = open(".left.h5.h5mf-merge.1", "w"); fcntl.flock(f, fcntl.LOCK_EX); time.sleep(30)' > /dev/null 2>&1 &
locker=$!
sleep 1
"$h5mf" merge left.h5 -q > /dev/null || fail "merge of left.h5"
leftover=$(ls -a | grep -c '^\.left\.h5\.h5mf-merge\.')
test "$leftover" = 1 && test -e .left.h5.h5mf-merge.1 || { fail "leftovers: $(ls -a | grep h5mf-merge)"; }
kill "$zparent" "$locker" 2>/dev/null
echo "ok: leftovers of dead merges removed, a live one kept"

# h5mf on an ordinary HDF5 file
for cmd in info verify merge; do
    out=$("$h5mf" "$cmd" left.h5 2>&1) || fail "h5mf $cmd on an HDF5 file: exit $?"
    grep -q "an ordinary HDF5 file, already merged: nothing to do" <<<"$out" || fail "h5mf $cmd: $out"
done
echo notes > notes.txt
expect_fail "neither a multifile directory nor an HDF5 file" "$h5mf" merge notes.txt
echo "corrupt: $failures failure(s)"
exit $(( failures > 0 ))
