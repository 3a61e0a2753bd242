#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# errors.sh MPIEXEC WORKLOAD H5MF REOPEN
# Bad input gives a clear message and a non-zero exit, and changes nothing.
set -uo pipefail
mpiexec=$1 workload=$2 h5mf=$3 reopen=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-errors.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
expect_fail() { # expect_fail "message part" command...
    local want=$1; shift
    local out
    out=$("$@" 2>&1) && { echo "FAIL (exit 0): $*"; failures=$((failures + 1)); return; }
    if grep -qF -- "$want" <<<"$out"; then echo "ok: $* -> $want"
    else echo "FAIL (message): $*"; echo "$out" | tail -5; failures=$((failures + 1)); fi
}
expect_usage() { # expect_usage "message part" command...: exit status 2 and the message
    local want=$1; shift
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [[ $rc == 2 ]] && grep -qF -- "$want" <<<"$out"; then echo "ok: $* -> exit 2, $want"
    else echo "FAIL (exit $rc, expected 2): $*"; echo "$out" | tail -5; failures=$((failures + 1)); fi
}
"$mpiexec" -n 2 "$workload" good.h5 --driver multifile --options layout=dir --datasets 4 > /dev/null || exit 1

mkdir plain-dir && echo data > plain-dir/notes.txt
expect_fail "not a multifile" "$h5mf" info plain-dir
expect_fail "is a directory that is not a multifile" "$mpiexec" -n 1 "$workload" plain-dir --driver multifile --datasets 1
test -f plain-dir/notes.txt || { echo "FAIL: plain-dir was touched"; failures=$((failures + 1)); }
expect_fail "No such file" "$h5mf" info missing.h5

cp -r good.h5 trunc.h5 && truncate -s 10 trunc.h5/1
expect_fail "truncated rank file" "$h5mf" merge trunc.h5
test -d trunc.h5 || { echo "FAIL: trunc.h5 replaced"; failures=$((failures + 1)); }

cp -r good.h5 corrupt.h5 && printf 'XXXX' | dd of=corrupt.h5/0.offset bs=1 seek=40 conv=notrunc 2>/dev/null
expect_fail "corrupt" "$h5mf" verify corrupt.h5

cp -r good.h5 meta.h5 && sed -i 's/ranks 2/ranks 3/' meta.h5/metafile
expect_fail "checksum" "$h5mf" info meta.h5

cp -r good.h5 data.h5 && printf 'Z' | dd of=data.h5/0 bs=1 seek=5 conv=notrunc 2>/dev/null
expect_fail "data checksum mismatch" "$h5mf" merge data.h5 -o data-out.h5
test ! -e data-out.h5 || { echo "FAIL: output written despite bad data"; failures=$((failures + 1)); }

fix_meta_crc() { # the checksum of an edited metafile made right, so only the edit differs
    python3 - "$1" <<'PY'
import sys, zlib
p = sys.argv[1]; text = open(p).read(); body = text[: text.index("crc32 ")]
open(p, "w").write(body + "crc32 %08x\n" % zlib.crc32(body.encode()))
PY
}
# a metafile that names fewer rank files than an index was made among
cp -r good.h5 fewer.h5 && sed -i 's/ranks 2/ranks 1/' fewer.h5/metafile && fix_meta_crc fewer.h5/metafile
expect_fail "made in a directory of 2 rank files, the metafile says 1" "$h5mf" verify fewer.h5

# a metafile edited to a smaller end of address space: the reconstruction would be shorter
# than its superblock says (HDF5 refuses a truncated file): refused, the directory kept
cp -r good.h5 short.h5 && sed -i 's/^eoa .*/eoa 4096/' short.h5/metafile && fix_meta_crc short.h5/metafile
expect_fail "superblock says the file ends at" "$h5mf" merge short.h5 -o short-out.h5
expect_fail "superblock says the file ends at" "$h5mf" merge short.h5
test -d short.h5 && test ! -e short-out.h5 || { echo "FAIL: short.h5 replaced or output written"; failures=$((failures + 1)); }

cp -r good.h5 open.h5 && sed -i 's/state complete/state writing/' open.h5/metafile
fix_meta_crc open.h5/metafile
expect_fail "incomplete" "$h5mf" merge open.h5
expect_fail "--partial needs -o" "$h5mf" merge open.h5 --partial
"$h5mf" merge open.h5 --partial -o partial.h5 -q || { echo "FAIL: partial merge"; failures=$((failures + 1)); }
test -d open.h5 || { echo "FAIL: open.h5 replaced"; failures=$((failures + 1)); }
expect_fail "INCOMPLETE" bash -c "'$h5mf' info open.h5; exit 1"

# read-write: a complete directory is continued by any number of ranks; unclosed ones are refused
cp -r good.h5 rdwr.h5
"$mpiexec" -n 1 "$reopen" --open-rdwr rdwr.h5 && "$h5mf" verify rdwr.h5 > /dev/null \
    && grep -qx "ranks 2" rdwr.h5/metafile \
    && echo "ok: a directory of 2 rank files continued by 1 rank keeps both" \
    || { echo "FAIL: read-write reopen of rdwr.h5 by 1 rank"; failures=$((failures + 1)); }
expect_fail "incomplete" "$mpiexec" -n 2 "$reopen" --open-rdwr open.h5
test -d open.h5 || { echo "FAIL: open.h5 replaced"; failures=$((failures + 1)); }
"$mpiexec" -n 2 "$reopen" --open-rdwr rdwr.h5 && "$h5mf" verify rdwr.h5 > /dev/null \
    && echo "ok: read-write open and close with the writers' rank count" \
    || { echo "FAIL: read-write reopen of rdwr.h5"; failures=$((failures + 1)); }

# a merge in place and a read-write session exclude each other (a lock on the directory)
cp -r good.h5 busy.h5
MF_REOPEN_HOLD_SECONDS=4 "$mpiexec" -n 2 "$reopen" --open-rdwr busy.h5 & holder=$!
for _ in $(seq 100); do grep -q "state writing" busy.h5/metafile && break; sleep 0.1; done
expect_fail "open read-write by a running job" "$h5mf" merge busy.h5
wait $holder || { echo "FAIL: the read-write session of busy.h5"; failures=$((failures + 1)); }
"$h5mf" merge busy.h5 -q && test -f busy.h5 \
    && echo "ok: busy.h5 merged once its writer closed it" \
    || { echo "FAIL: merge of busy.h5 after its writer closed it"; failures=$((failures + 1)); }
cp -r good.h5 held.h5
flock -x held.h5 sleep 4 & locker=$!
sleep 1
expect_fail "being merged in place by another process" "$mpiexec" -n 2 "$reopen" --open-rdwr held.h5
wait $locker

expect_fail "exists" "$h5mf" merge good.h5 -o partial.h5
expect_fail "unknown option 'bogus'" "$mpiexec" -n 1 "$workload" good.h5 --driver multifile --check --options bogus=1
expect_fail "usage" "$h5mf" frobnicate good.h5
for bad in 12x -4G 100K 99999999999T ""; do
    expect_fail "--memory $bad: not a size of at least 1M" "$h5mf" merge good.h5 -o m.h5 --memory "$bad"
done
test ! -e m.h5 || { echo "FAIL: m.h5 written with a bad --memory"; failures=$((failures + 1)); }

# an output inside the directory being merged is refused, --force or not
meta_before=$(cat good.h5/metafile)
for out in good.h5/metafile ./good.h5/ good.h5/../good.h5 "$work/good.h5/0"; do
    expect_fail "inside the directory" "$h5mf" merge good.h5 -o "$out" --force
done
test "$(cat good.h5/metafile)" = "$meta_before" || { echo "FAIL: good.h5/metafile changed"; failures=$((failures + 1)); }
"$h5mf" verify good.h5 > /dev/null || { echo "FAIL: good.h5 damaged by a refused merge"; failures=$((failures + 1)); }

# an empty path is a usage error: not "/metafile", not a file made in the current directory
for cmd in info verify merge; do
    expect_usage "h5mf: DIR: the path is empty" "$h5mf" $cmd ""
done
expect_usage "h5mf: DIR: the path is empty" "$mpiexec" -n 2 "$h5mf" merge ""
expect_usage "h5mf: -o FILE: the path is empty" "$h5mf" merge good.h5 -o ""
# an output that cannot be a new file is refused before the merge starts, --force or not
mkdir out-dir && echo data > a-file
expect_fail "out-dir: is a directory (-o names the file to write)" "$h5mf" merge good.h5 -o out-dir --force
expect_fail "no-dir/x.h5: cannot be created: no-dir: No such file or directory" "$h5mf" merge good.h5 -o no-dir/x.h5
expect_fail "a-file/x.h5: cannot be created: a-file: Not a directory" "$h5mf" merge good.h5 -o a-file/x.h5
[[ -z $(ls -A out-dir) && -z $(find . -name '.*h5mf-merge*') ]] ||
    { echo "FAIL: a refused merge left files: $(find . -name '.*h5mf-merge*')"; failures=$((failures + 1)); }

# info --json is JSON whatever the path holds (quotes, backslashes, newlines, bytes that
# are not UTF-8: Python's surrogate escapes give the bytes back)
odd=$'we"ird\\na\tme\n\xff.h5'
cp -r good.h5 "$odd"
"$h5mf" info "$odd" --json > info.json || { echo "FAIL: info --json on an odd path"; failures=$((failures + 1)); }
python3 - "$odd" info.json <<'PY' && echo "ok: info --json escapes the path" || failures=$((failures + 1))
import json, os, sys
got = os.fsencode(json.load(open(sys.argv[2]))["path"])
want = os.fsencode(sys.argv[1])
assert got == want, f"FAIL: info --json path {got!r} != {want!r}"
PY
echo "errors: $failures failure(s)"
exit $(( failures > 0 ))
