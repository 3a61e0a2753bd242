#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# head.sh MPIEXEC MF_PATH MF_HEAD_TEMPLATE H5MF PLUGIN_DIR
# The head layout (the default, layout=head: the path a small HDF5 file that names its
# directory NAME.h5mf beside it), through the plugin with the default options: what code around HDF5 does with the path
# works (mf_path: netCDF's sniff through MPI-IO, stat, a reopen read-write and by one
# rank alone, MPI_File_delete, remove(), H5Fdelete); a tool without the driver prints
# what the file is and how to read it; the head's HDF5 bytes are what this HDF5 writes;
# h5mf takes the head for its directory, and a merge in place of the directory replaces the head; a renamed head keeps its directory, a new file
# of the old name gets another; an orphan directory (its head removed) is replaced by
# a new file of its name, is not merged in place (-o reads it), and h5mf clean lists and removes orphans (not one a writer
# holds); a head without its directory, with its slot overwritten, or with its first
# bytes overwritten (a user block written into the path), is refused with the reason.
set -euo pipefail
mpiexec=$1 prog=$2 template=$3 h5mf=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-head.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HDF5_PLUGIN_PATH=$5 HDF5_DRIVER=multifile
unset HDF5_DRIVER_CONFIG
fail() { echo "head: FAILED: $*"; exit 1; }
run_path() { timeout 120 "$mpiexec" -n 2 "$prog" "$work" </dev/null >"$work/out" 2>&1 || fail "mf_path: $(tail -5 "$work/out")"; }
run_path
grep -q "mf_path: ok (2 ranks)" "$work/out" || fail "mf_path: $(cat "$work/out")"
[[ -f $work/p.h5 && -d $work/p.h5.h5mf ]] || fail "no head p.h5 beside its directory p.h5.h5mf"
[[ ! -e $work/del.h5.h5mf ]] || fail "H5Fdelete left the directory"
[[ -d $work/gone.h5.h5mf && -d $work/gone2.h5.h5mf ]] || fail "removing the heads removed their directories"
(unset HDF5_DRIVER HDF5_DRIVER_CONFIG; "$template" "$work/p.h5" "$work/scratch.h5") || fail "the head's HDF5 bytes"
# a tool without the driver: the message, not an empty file
(unset HDF5_DRIVER HDF5_DRIVER_CONFIG; h5dump "$work/p.h5") >"$work/dump" 2>&1 || fail "h5dump without the driver: $(cat "$work/dump")"
grep -q "head of a multifile HDF5 file: its data are in the directory 'p.h5.h5mf'" "$work/dump" &&
    grep -q "HDF5_DRIVER=multifile" "$work/dump" && grep -q "h5mf merge" "$work/dump" ||
    fail "h5dump without the driver: $(cat "$work/dump")"
# h5mf takes the head; the head's size is the file's
"$h5mf" verify "$work/p.h5" >"$work/out" 2>&1 || fail "h5mf verify p.h5: $(cat "$work/out")"
"$h5mf" merge "$work/p.h5" -o "$work/copy.h5" >/dev/null || fail "h5mf merge p.h5 -o copy.h5"
[[ $(stat -c %s "$work/p.h5") == $(stat -c %s "$work/copy.h5") ]] || fail "the head's size is not the file's"
# renamed: still read; a new p.h5 gets another directory
mv "$work/p.h5" "$work/q.h5"
run_path
"$h5mf" verify "$work/q.h5" >/dev/null 2>&1 || fail "h5mf verify of the renamed head"
"$h5mf" merge "$work/q.h5" -o "$work/copy2.h5" >/dev/null || fail "h5mf merge of the renamed head"
(unset HDF5_DRIVER HDF5_DRIVER_CONFIG; h5diff "$work/copy.h5" "$work/copy2.h5") >/dev/null || fail "the renamed head's file changed"
[[ -d $work/p.h5.h5mf ]] || fail "the renamed head's directory is gone"
compgen -G "$work/p.h5.*.h5mf" >/dev/null || fail "the new p.h5 took the renamed head's directory"
# the orphans of the first run were replaced, not kept beside new directories
compgen -G "$work/gone.h5.*.h5mf" >/dev/null && fail "the orphan gone.h5.h5mf was kept"
# h5mf clean: the orphans (heads removed) listed, then removed; one a writer holds, and
# every directory a head names, kept
(exec 9<"$work/gone2.h5.h5mf/0" && flock -x 9 && exec sleep 30) &
holder=$!
for ((i = 0; i < 50; i++)); do flock -xn "$work/gone2.h5.h5mf/0" true || break; sleep 0.1; done
"$h5mf" info "$work/gone.h5.h5mf" | grep -q "an orphan: " || fail "h5mf info does not call gone.h5.h5mf an orphan"
"$h5mf" clean "$work" >"$work/out" 2>&1 || fail "h5mf clean: $(cat "$work/out")"
grep -qx "orphan: $work/gone.h5.h5mf" "$work/out" && ! grep -q "gone2\|p.h5" "$work/out" &&
    grep -q "1 orphan(s) (directories being written are not orphans)" "$work/out" || fail "h5mf clean: $(cat "$work/out")"
"$h5mf" clean "$work" --remove >"$work/out" 2>&1 || fail "h5mf clean --remove: $(cat "$work/out")"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true
[[ ! -e $work/gone.h5.h5mf && -d $work/gone2.h5.h5mf && -d $work/p.h5.h5mf ]] || fail "h5mf clean --remove: $(ls "$work")"
"$h5mf" clean "$work" --remove >"$work/out" 2>&1 && grep -q "removed: $work/gone2.h5.h5mf" "$work/out" ||
    fail "h5mf clean --remove, the writer gone: $(cat "$work/out")"
# merged in place: an ordinary file at the path, no directory left
body=$(ls -d "$work"/p.h5.*.h5mf)
cp -a "$body" "$work/saved.h5mf"
"$h5mf" merge "$work/p.h5" 2>"$work/err" >/dev/null || fail "h5mf merge p.h5 in place"
# the head itself given: no word of a body adopted (that is for a body given by its path)
grep -q "is the directory of the head" "$work/err" && fail "h5mf merge of the head says it adopted it: $(cat "$work/err")"
[[ -f $work/p.h5 && ! -e $body ]] || fail "the merge in place left $body"
# a merge in place cut after its rename leaves the directory (no head names it): the
# merge run again says the file is merged and removes it; a renamed head's is kept
mv "$work/saved.h5mf" "$work/p.h5.h5mf.tmp" && mv "$work/p.h5.h5mf" "$work/kept.h5mf" && mv "$work/p.h5.h5mf.tmp" "$work/p.h5.h5mf"
"$h5mf" merge "$work/p.h5" >"$work/out" 2>&1 || fail "h5mf merge of the merged p.h5: $(cat "$work/out")"
grep -q "already merged" "$work/out" || fail "no word of the merged file: $(cat "$work/out")"
[[ ! -e $work/p.h5.h5mf ]] || fail "the directory of the cut merge is still there"
mv "$work/kept.h5mf" "$work/p.h5.h5mf"
"$h5mf" merge "$work/p.h5" >/dev/null 2>&1 || fail "h5mf merge of the merged p.h5, again"
[[ -d $work/p.h5.h5mf ]] || fail "the renamed head's directory was removed"
(unset HDF5_DRIVER HDF5_DRIVER_CONFIG; h5dump -d /w "$work/p.h5") >/dev/null 2>&1 || fail "the merged p.h5 has no /w"
# a head without its directory; a head whose slot HDF5 overwrote
mkdir "$work/away" && mv "$work/q.h5" "$work/away/"
"$h5mf" info "$work/away/q.h5" >"$work/out" 2>&1 && fail "h5mf info of a head without its directory exited 0"
grep -q "its directory .*p.h5.h5mf is not there" "$work/out" || fail "no reason: $(cat "$work/out")"
head -c 4096 "$work/away/q.h5" >"$work/cut.h5" && truncate -s 2048 "$work/cut.h5" && truncate -s 4096 "$work/cut.h5"
"$h5mf" info "$work/cut.h5" >"$work/out" 2>&1 && fail "h5mf info of a head without its slot exited 0"
grep -q "slot .* is damaged or gone" "$work/out" || fail "no reason: $(cat "$work/out")"
# a copy of a head outlives its file's next run: creating over the copy, or merging it,
# never touches the directory, which now belongs to another file
mkdir "$work/r" && cd "$work/r"
step() { timeout 120 "$mpiexec" -n 2 "$prog" "$@" </dev/null >"$work/out" 2>&1; }
step create a.h5 1 && cp a.h5 copy.h5 && step create a.h5 2 || fail "create a.h5: $(tail -3 "$work/out")"
"$h5mf" info copy.h5 >"$work/out" 2>&1 && fail "h5mf info of a stale copy of a head exited 0"
grep -q "belongs to another file" "$work/out" || fail "no reason: $(cat "$work/out")"
"$h5mf" merge copy.h5 >/dev/null 2>&1 && fail "h5mf merge of a stale copy of a head exited 0"
step create copy.h5 3 || fail "create over the stale copy: $(tail -3 "$work/out")"
# the directory given for a merge in place: the head takes the file, as if it were given
step create b.h5 4 && "$h5mf" merge b.h5.h5mf >"$work/out" 2>&1 || fail "h5mf merge b.h5.h5mf: $(cat "$work/out")"
grep -q "b.h5.h5mf is the directory of the head ./b.h5: merged in place of the head" "$work/out" &&
    [[ -f b.h5 && ! -e b.h5.h5mf ]] || fail "h5mf merge b.h5.h5mf: $(cat "$work/out") $(ls -d b.h5*)"
step check b.h5 4 || fail "the merged b.h5: $(tail -3 "$work/out")"
# ... but a directory no head names (an orphan: here what a merge in place leaves when it
# is cut before removing the directory, the merged file at the head's path) is refused,
# nothing changed: a merge in place would make a second file of it; -o still reads it
step create c.h5 8 && "$h5mf" merge c.h5 -o c-merged.h5 >/dev/null && mv c-merged.h5 c.h5 && cp c.h5 c-copy.h5 ||
    fail "create c.h5: $(tail -3 "$work/out")"
"$h5mf" merge c.h5.h5mf >"$work/out" 2>&1 && fail "h5mf merge in place of an orphan directory exited 0"
grep -q "c.h5.h5mf: no head names it (an orphan), and a file has its name.*h5mf merge c.h5.h5mf -o FILE keeps" "$work/out" &&
    [[ -d c.h5.h5mf ]] && cmp -s c.h5 c-copy.h5 ||
    fail "orphan: $(cat "$work/out") $(ls -d c.h5*)"
HDF5_DRIVER_CONFIG=read=merge step check c.h5.h5mf 8 && fail "the driver's read=merge of the orphan succeeded"
grep -q "c.h5.h5mf: no head names it (an orphan), and a file has its name" "$work/out" &&
    [[ -d c.h5.h5mf ]] && cmp -s c.h5 c-copy.h5 || fail "read=merge of the orphan: $(tail -3 "$work/out")"
"$h5mf" merge c.h5.h5mf -o c2.h5 >/dev/null && step check c2.h5 8 || fail "h5mf merge -o of the orphan"
rm -rf c.h5.h5mf c2.h5 c-copy.h5
# ... while a file of the dir layout that is named so, no regular file at its name (a
# directory there), is merged in place
mkdir run && HDF5_DRIVER_CONFIG=layout=dir step create run.h5mf 9 && "$h5mf" merge run.h5mf >"$work/out" 2>&1 &&
    [[ -f run.h5mf ]] && step check run.h5mf 9 || fail "merge in place of run.h5mf (dir layout): $(cat "$work/out")"
rm -r run.h5mf run
# the driver's merge in place (read=merge) of a head's body opened by its own path is
# refused, nothing changed (the head would name nothing); of the head, it replaces the head
step create k.h5 10 && HDF5_DRIVER_CONFIG=read=merge step check k.h5.h5mf 10 &&
    fail "the driver's read=merge of a head's body succeeded"
grep -q "k.h5.h5mf: the directory of a head beside it: open the head" "$work/out" && [[ -d k.h5.h5mf ]] &&
    step check k.h5 10 || fail "read=merge of a head's body: $(tail -3 "$work/out")"
ln -s k.h5.h5mf k-link && HDF5_DRIVER_CONFIG=read=merge step check k-link 10 &&
    fail "the driver's read=merge through a link to a body succeeded"
grep -q "k-link: a symbolic link" "$work/out" && [[ -L k-link && -d k.h5.h5mf ]] && rm k-link ||
    fail "read=merge through a link: $(tail -3 "$work/out")"
HDF5_DRIVER_CONFIG=read=merge step check k.h5 10 && [[ -f k.h5 && ! -e k.h5.h5mf ]] ||
    fail "read=merge of the head k.h5: $(tail -3 "$work/out")"
# ... refused, nothing changed, where it cannot tell which head to replace or must not
# replace one: a copy of the head beside it, a damaged copy, the body through a link
step create d.h5 5 && cp d.h5 d-copy.h5 || fail "create d.h5: $(tail -3 "$work/out")"
"$h5mf" merge d.h5.h5mf >"$work/out" 2>&1 && fail "h5mf merge of a body that two heads name exited 0"
grep -q "named by more than one head" "$work/out" && [[ -d d.h5.h5mf ]] || fail "two heads: $(cat "$work/out")"
printf 'USERBLOCK%.0s' {1..50} | dd of=d-copy.h5 conv=notrunc status=none
"$h5mf" merge d.h5.h5mf >"$work/out" 2>&1 && fail "h5mf merge of a body a damaged head names exited 0"
grep -q "first bytes or slot were overwritten" "$work/out" && [[ -d d.h5.h5mf ]] || fail "damaged: $(cat "$work/out")"
rm d-copy.h5 && ln -s d.h5.h5mf d-link
"$h5mf" merge d-link >"$work/out" 2>&1 && fail "h5mf merge in place of a link to a body exited 0"
grep -q "d-link: a symbolic link" "$work/out" && [[ -L d-link && -d d.h5.h5mf ]] || fail "link: $(cat "$work/out")"
rm d-link && step check d.h5 5 || fail "d.h5 after the refused merges: $(tail -3 "$work/out")"
step check a.h5 2 || fail "a.h5 after a create over a stale copy of its head: $(tail -3 "$work/out")"
# HDF5 without the driver rewrote the head (an attribute added): the driver still reads
# the directory, h5mf too
step plain a.h5 && step check a.h5 2 || fail "a head that HDF5 rewrote: $(tail -3 "$work/out")"
"$h5mf" verify a.h5 >/dev/null 2>&1 || fail "h5mf verify of a head that HDF5 rewrote"
# bytes written over the head's start (a user block written into the path with open()):
# refused with the reason and the way out, the directory not an orphan, h5mf merge of it
step create ub.h5 6 || fail "create ub.h5: $(tail -3 "$work/out")"
printf 'USERBLOCK%.0s' {1..50} | dd of=ub.h5 conv=notrunc status=none
step check ub.h5 6 && fail "a head whose first bytes were overwritten was read"
grep -q "first bytes were overwritten .*h5mf merge .*ub.h5.h5mf -o FILE" "$work/out" || fail "no reason: $(cat "$work/out")"
"$h5mf" clean . >"$work/out" 2>&1 && ! grep -q "ub.h5" "$work/out" || fail "h5mf clean: $(cat "$work/out")"
"$h5mf" merge ub.h5.h5mf -o ub2.h5 >/dev/null && step check ub2.h5 6 || fail "h5mf merge of the overwritten head's directory"
# ... and H5Fdelete of it (HDF5 opens the file first) is refused with the same reason,
# the head and its directory both kept
step delete ub.h5 && fail "H5Fdelete of the overwritten head succeeded"
grep -q "first bytes were overwritten" "$work/out" && [[ -f ub.h5 && -d ub.h5.h5mf ]] ||
    fail "H5Fdelete of the overwritten head: $(ls -d ub.h5*) $(tail -3 "$work/out")"
# ... and a new file created over it (H5F_ACC_TRUNC) replaces the head and its directory,
# leaving no orphan behind
step create ub.h5 7 && step check ub.h5 7 || fail "create over the overwritten head: $(tail -3 "$work/out")"
compgen -G "ub.h5.*.h5mf" >/dev/null && fail "create over the overwritten head left an orphan: $(ls -d ub.h5*)"
"$h5mf" clean . >"$work/out" 2>&1 && ! grep -q "ub.h5" "$work/out" || fail "h5mf clean after the create: $(cat "$work/out")"
# H5F_ACC_EXCL of a name that is not there creates the file, as without the driver, and
# never removes a directory that no head names (the head moved away, or removed by rm):
# the new file gets another body name; of a name that is there, it is refused
mkdir sub && mv a.h5 sub/
step excl a.h5 4 && step check a.h5 4 || fail "H5F_ACC_EXCL beside an orphan a.h5.h5mf: $(tail -3 "$work/out")"
compgen -G "a.h5.*.h5mf" >/dev/null || fail "H5F_ACC_EXCL: no body of another name: $(ls -d a.h5*)"
step excl a.h5 5 && fail "H5F_ACC_EXCL over an existing a.h5 succeeded"
grep -q "a.h5: exists (H5F_ACC_EXCL)" "$work/out" || fail "no reason: $(tail -3 "$work/out")"
step check a.h5 4 || fail "a.h5 after the refused H5F_ACC_EXCL: $(tail -3 "$work/out")"
mv sub/a.h5 . && step check a.h5 2 || fail "a.h5 moved back over the other: $(tail -3 "$work/out")"
"$h5mf" clean . --remove >"$work/out" 2>&1 && ! compgen -G "a.h5.*.h5mf" >/dev/null ||
    fail "h5mf clean of the other body: $(cat "$work/out") $(ls -d a.h5*)"
# rm and H5F_ACC_EXCL in a loop leave a body per round; the next H5F_ACC_TRUNC create of
# the name removes them all (and not the body a head names); H5F_ACC_EXCL beside a
# NAME.h5mf that is not a multifile directory creates the file too, touching nothing
step create o.h5 1 && rm o.h5 && step excl o.h5 2 && rm o.h5 && step excl o.h5 3 ||
    fail "rm and H5F_ACC_EXCL in a loop: $(tail -3 "$work/out")"
[[ $(compgen -G "o.h5*.h5mf" | wc -l) == 3 ]] || fail "rm and H5F_ACC_EXCL: $(ls -d o.h5*)"
step create o.h5 4 && step check o.h5 4 || fail "H5F_ACC_TRUNC after the loop: $(tail -3 "$work/out")"
[[ $(compgen -G "o.h5*.h5mf") == o.h5.h5mf ]] || fail "H5F_ACC_TRUNC left orphans of the name: $(ls -d o.h5*)"
mkdir e.h5.h5mf && step excl e.h5 5 && step check e.h5 5 && [[ -d e.h5.h5mf ]] ||
    fail "H5F_ACC_EXCL beside an empty e.h5.h5mf: $(tail -3 "$work/out")"
# symbolic links: to the head from another directory, removed (the link only), merged in
# place (the head itself replaced, the link kept)
ln -s ../a.h5 sub/link.h5 && step check sub/link.h5 2 || fail "a link from another directory: $(tail -3 "$work/out")"
ln -s a.h5 link.h5 && step delete link.h5 && [[ ! -e link.h5 ]] || fail "H5Fdelete of a link: $(tail -3 "$work/out")"
step check a.h5 2 || fail "a.h5 after H5Fdelete of a link to it: $(tail -3 "$work/out")"
ln -s a.h5 link.h5 && "$h5mf" merge link.h5 >/dev/null || fail "h5mf merge of a link"
[[ -L link.h5 && -f a.h5 && ! -e a.h5.h5mf ]] || fail "h5mf merge of a link: $(ls -la)"
step check link.h5 2 || fail "the merged file through the link: $(tail -3 "$work/out")"
# a long name (the head's temporary name must fit too)
long=$(printf 'n%.0s' {1..240}).h5
step create "$long" 5 && step check "$long" 5 || fail "a name of 243 bytes: $(tail -3 "$work/out")"
cd "$work"
echo "head: ok (netCDF's sniff, stat, reopen, MPI_File_delete, remove, H5Fdelete; h5dump without the driver;"
echo "h5mf on heads, h5mf clean; renamed heads, orphans, a head without its directory or slot, stale copies, heads"
echo "HDF5 rewrote, a head's start overwritten, H5F_ACC_EXCL, links, long names)"
