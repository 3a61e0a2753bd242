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
    # (into a variable, not a pipe: `grep -q` leaving early kills h5mf with SIGPIPE)
    [[ $("$h5mf" info "$d") == *DAMAGED* ]] || fail "h5mf info $d does not say DAMAGED"
}
"$mpiexec" -n 2 "$workload" good.h5 --driver multifile --options layout=dir --datasets 4 > /dev/null || exit 1
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
# reading in place checks each record it reads from, whole, once per open
expect_fail "data checksum mismatch" "$mpiexec" -n 1 "$workload" data.h5 --driver multifile --datasets 4 --check
# (on 2 ranks the first rank to fail ends the job, sometimes before the other prints why)
"$mpiexec" -n 2 "$workload" data.h5 --driver multifile --datasets 4 --check > /dev/null 2>&1 \
    && fail "a damaged record was read in place on 2 ranks"
# a hole punched into the data (zeros where the bytes were): the same
cp -r good.h5 hole.h5
fallocate --punch-hole --keep-size --offset 4096 --length 4096 hole.h5/0 2> /dev/null \
    || python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(4096); f.write(bytes(4096))' hole.h5/0
expect_fail "data checksum mismatch" "$mpiexec" -n 1 "$workload" hole.h5 --driver multifile --datasets 4 --check
"$mpiexec" -n 1 "$workload" good.h5 --driver multifile --datasets 4 --check > /dev/null || fail "the intact copy is refused in place"
test -d data.h5 && test "$(cd data.h5 && sha256sum ./* | sha256sum)" = "$before" || fail "data.h5 was changed"
test ! -e data.out || fail "data.out was written"
"$h5mf" merge data.h5 -o data.out --no-verify -q > /dev/null && test -f data.out || fail "merge --no-verify"
echo "ok: rank 1 wrote $records records; damaged copies refused"

# another run's files of the same shape copied in: every index carries its run's tag
"$mpiexec" -n 2 "$workload" other.h5 --driver multifile --options layout=dir --datasets 4 > /dev/null || exit 1
cp -r good.h5 foreign.h5 && cp other.h5/1 other.h5/1.offset foreign.h5/
refused_everywhere foreign.h5 "belongs to another run"
expect_fail "belongs to another run" "$mpiexec" -n 1 "$workload" foreign.h5 --driver multifile --datasets 4 --check
grep -q "^run [0-9a-f]\{16\}$" good.h5/metafile || fail "the metafile names no run"

# a reconstruction whose output cannot be created (a parent that refuses new entries):
# every rank fails with the reason, none waits for the others
mkdir ro && cp -r good.h5 ro/
trap 'chattr -i "$work/ro" 2> /dev/null; chmod 755 "$work/ro" 2> /dev/null; rm -rf "$work"' EXIT
chattr +i ro 2> /dev/null || chmod 555 ro
if touch ro/probe 2> /dev/null; then
    rm -f ro/probe; fail "no way to make a directory refuse new entries here (chattr +i, chmod 555)"
else
    for opt in read=merge read=parallel; do
        out=$(timeout 60 "$mpiexec" -n 2 "$reopen" --open-rdonly ro/good.h5 $opt 2>&1); rc=$?
        if [[ $rc == 124 ]]; then fail "$opt: hangs when the output cannot be created"
        elif [[ $rc != 0 ]] && grep -q "cannot create" <<<"$out"; then echo "ok: $opt refused with the reason"
        else fail "$opt: exit $rc"; echo "$out" | tail -3; fi
    done
    test -d ro/good.h5 || fail "ro/good.h5 was removed"
fi
chattr -i ro 2> /dev/null; chmod 755 ro

# ... also when the metafile is made to look older (version 2: no run), or says run 0
metafile_set() { # metafile_set DIR PYTHON-EXPR-ON-LINES: rewrite the metafile, its crc32 fixed
    python3 - "$1/metafile" "$2" <<'PY'
import sys, zlib
p, expr = sys.argv[1], sys.argv[2]
lines = [l for l in open(p).read().splitlines() if not l.startswith("crc32 ")]
lines = eval(expr, {"lines": lines})
text = "\n".join(lines) + "\n"
open(p, "w").write(text + "crc32 %08x\n" % zlib.crc32(text.encode()))
PY
}
cp -r foreign.h5 older.h5 && metafile_set older.h5 '[l.replace("multifile 3", "multifile 2") for l in lines if not l.startswith("run ")]'
expect_fail "belongs to another run" "$h5mf" verify older.h5
expect_fail "belongs to another run" "$h5mf" merge older.h5 -o older.out
cp -r foreign.h5 run0.h5 && metafile_set run0.h5 '[("run " + "0" * 16) if l.startswith("run ") else l for l in lines]'
expect_fail "without a run identity" "$h5mf" verify run0.h5
# an end of address space out of range: refused, no arithmetic fault
cp -r good.h5 eoa.h5 && metafile_set eoa.h5 '["eoa 18446744073709551615" if l.startswith("eoa ") else l for l in lines]'
for cmd in info verify merge; do expect_fail "out of range" "$h5mf" $cmd eoa.h5; done

# a merge killed while it removes the old directory (after the swap): the next merge of
# the same path removes what is left (the metafile goes last)
cp -r good.h5 killed.h5
strace -f -o /dev/null -e trace=unlinkat -e inject=unlinkat:signal=KILL:when=2 "$h5mf" merge killed.h5 -q \
    > /dev/null 2>&1
test -f killed.h5 || fail "the killed merge did not swap killed.h5"
"$h5mf" merge killed.h5 > /dev/null || fail "the second merge of killed.h5"
test -z "$(ls -a | grep '^\.killed\.h5\.h5mf-merge\.')" || fail "left after a merge killed in its removal: $(ls -a | grep killed)"

# -o naming a device or FIFO is refused, even with --force (never replaced by the file)
mkfifo out.fifo && mknod out.dev c 1 3
expect_fail "not a regular file" "$h5mf" merge good.h5 -o out.fifo --force
expect_fail "not a regular file" "$h5mf" merge good.h5 -o out.dev --force
test -p out.fifo && test -c out.dev || fail "a FIFO or device named by -o was replaced"
# a dangling link named by -o exists: replaced only with --force
ln -s nowhere out.link
expect_fail "exists" "$h5mf" merge good.h5 -o out.link
test -L out.link || fail "a dangling link named by -o was replaced without --force"

# a FIFO (or a directory) in place of a file of the directory: refused at once, no hang
for victim in metafile 1 1.offset; do
    cp -r good.h5 fifo.h5 && rm fifo.h5/$victim && mkfifo fifo.h5/$victim
    for cmd in "$h5mf info fifo.h5" "$h5mf verify fifo.h5" "$h5mf merge fifo.h5" \
               "$mpiexec -n 1 $workload fifo.h5 --driver multifile --datasets 4 --check"; do
        out=$(timeout 20 $cmd 2>&1); rc=$?
        if [[ $rc == 124 ]]; then fail "$cmd: hangs on a FIFO in place of $victim"
        elif [[ $cmd != *info* && $rc == 0 ]]; then fail "$cmd: exit 0 with a FIFO in place of $victim"
        elif ! grep -q "not a regular file\|DAMAGED\|neither" <<<"$out"; then fail "$cmd ($victim): $out"
        else echo "ok: $cmd with a FIFO in place of $victim"; fi
    done
    rm -rf fifo.h5
done

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
for _ in $(seq 300); do # both in place before the merge looks (python starts slowly under load)
    [[ -e .left.h5.h5mf-merge.1 && $(ls -a | grep -c '^\.left\.h5\.h5mf-merge\.') -ge 4 ]] && break
    sleep 0.1
done
sleep 0.5 # the lock is taken after the file is created
"$h5mf" merge left.h5 -q > /dev/null || fail "merge of left.h5"
leftover=$(ls -a | grep -c '^\.left\.h5\.h5mf-merge\.')
test "$leftover" = 1 && test -e .left.h5.h5mf-merge.1 || { fail "leftovers: $(ls -a | grep h5mf-merge)"; }
kill "$zparent" "$locker" 2>/dev/null
echo "ok: leftovers of dead merges removed, a live one kept"

# a merge killed right after its swap: the old directory stays under the output's name;
# the next merge of the same path (nothing left to do) removes it
cp -r good.h5 .left.h5.h5mf-merge.999997
[[ $("$h5mf" merge left.h5) == *"already merged"* ]] || fail "a second merge of left.h5"
test ! -e .left.h5.h5mf-merge.999997 || fail "the swapped-out directory of a killed merge stays"
# ... and the empty directory of a removal cut before its rmdir (a power loss after the
# metafile's unlink persisted)
mkdir .left.h5.h5mf-merge.999996
[[ $("$h5mf" merge left.h5) == *"already merged"* ]] || fail "a third merge of left.h5"
test ! -e .left.h5.h5mf-merge.999996 || fail "the emptied directory of a merge cut before its rmdir stays"

# a merge that cannot remove the old directory says so and exits non-zero (the file is in place)
cp -r good.h5 keep.h5 && chattr +i keep.h5/0 2> /dev/null
if lsattr -d keep.h5/0 2> /dev/null | grep -q -- '-i-'; then
    out=$("$h5mf" merge keep.h5 2>&1); rc=$?
    chattr -i "$work"/.keep.h5.h5mf-merge.*/0 2> /dev/null
    [[ $rc != 0 ]] && grep -q "could not be removed" <<<"$out" && test -f keep.h5 \
        && echo "ok: an old directory that cannot be removed is reported" || fail "merge of keep.h5: exit $rc: $out"
else
    fail "chattr +i is not available here: the case of an old directory that cannot be removed is untested"
fi
# ... on every rank of a parallel merge (each rank's own status, not the launcher's)
cp -r good.h5 pkeep.h5 && chattr +i pkeep.h5/0 2> /dev/null
out=$("$mpiexec" -n 2 bash -c '"$0" merge pkeep.h5 > /dev/null 2>&1; echo "rank-status: $?"' "$h5mf" 2>&1)
chattr -i "$work"/.pkeep.h5.h5mf-merge.*/0 2> /dev/null
[[ $(grep -c "^rank-status: 1$" <<<"$out") == 2 ]] && test -f pkeep.h5 \
    && echo "ok: every rank of a parallel merge exits 1 when the old directory stays" || fail "parallel merge of pkeep.h5: $out"
# ... and so does a merge in place of a head whose body cannot be removed afterwards
"$mpiexec" -n 2 "$workload" hkeep.h5 --driver multifile --options layout=head --datasets 2 > /dev/null || exit 1
if chattr +i hkeep.h5.h5mf/0 2> /dev/null; then
    out=$("$h5mf" merge hkeep.h5 2>&1); rc=$?
    chattr -i hkeep.h5.h5mf/0 2> /dev/null
    [[ $rc != 0 ]] && grep -q "could not be removed" <<<"$out" && "$h5mf" merge hkeep.h5 2>&1 | grep -q "already merged" \
        && echo "ok: a head's body that cannot be removed is reported" || fail "merge of hkeep.h5: exit $rc: $out"
else
    fail "chattr +i is not available here: a head's body that cannot be removed is untested"
fi

# h5mf on an ordinary HDF5 file
for cmd in info verify merge; do
    out=$("$h5mf" "$cmd" left.h5 2>&1) || fail "h5mf $cmd on an HDF5 file: exit $?"
    grep -q "an ordinary HDF5 file, already merged: nothing to do" <<<"$out" || fail "h5mf $cmd: $out"
done
echo notes > notes.txt
expect_fail "neither a multifile directory nor an HDF5 file" "$h5mf" merge notes.txt
echo "corrupt: $failures failure(s)"
exit $(( failures > 0 ))
