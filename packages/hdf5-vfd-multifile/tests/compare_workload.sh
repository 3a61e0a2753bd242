#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# compare_workload.sh MPIEXEC NP WORKLOAD H5MF LIBDIR|builtin
# The same workload written with MPI-IO (reference), with multifile linked and with
# multifile as a plugin (HDF5_DRIVER; "builtin": a patched HDF5 that has the driver
# inside, selected by the same variable); every multifile result is checked value by
# value, read in place by a read-only open with the default options (the directory
# unchanged; by another number of ranks, and by the plugin), reconstructed four ways
# (read-only open with read=merge and read=parallel, h5mf merge -o, h5mf merge under
# mpiexec), and compared with the reference by h5diff. The linked writes make the
# directory at the path (layout=dir), whose copies (cp -r) are whole files; the plugin's
# write with the default options makes a head (the path a file) beside its directory.
set -euo pipefail
mpiexec=$1 np=$2 workload=$3 h5mf=$4 libdir=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-workload-${np}.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
run() { echo "+ $*"; "$@"; }
other=$(( np > 1 ? np - 1 : 2 ))

run "$mpiexec" -n "$np" "$workload" ref.h5 --driver mpio
# negative control: h5diff must see a different workload (another seed) as different,
# exit 1 (exit 2 is h5diff's own error, e.g. a file its HDF5 cannot read: never "different")
run "$mpiexec" -n "$np" "$workload" other.h5 --driver mpio --seed 2 --datasets 8
status=0
h5diff -q ref.h5 other.h5 || status=$?
[ "$status" = 1 ] || { echo "h5diff -q ref.h5 other.h5: exit $status, expected 1 (different files)"; exit 1; }
run "$mpiexec" -n "$np" "$workload" mf.h5 --driver multifile --options layout=dir
test -d mf.h5 || { echo "mf.h5 is not a directory"; exit 1; }
test -f mf.h5/metafile && test -f mf.h5/0 && test -f mf.h5/0.offset
run "$h5mf" info mf.h5 | tee info.txt
grep -q "$np ranks, complete" info.txt
run "$h5mf" verify mf.h5
cp -r mf.h5 copy1.h5
cp -r mf.h5 copy2.h5
cp -r mf.h5 copy3.h5

# 1. a read-only open with the default options, by another number of ranks, reads in
#    place: the directory stays, byte for byte
before=$(cd copy1.h5 && sha256sum ./* | sha256sum)
run "$mpiexec" -n "$other" "$workload" copy1.h5 --driver multifile --check
test -d copy1.h5 && [ "$(cd copy1.h5 && sha256sum ./* | sha256sum)" = "$before" ] ||
    { echo "a read-only open changed copy1.h5"; exit 1; }
# 2. h5mf merge -o: the directory stays, FILE is ordinary HDF5
run "$h5mf" merge copy1.h5 -o merged.h5 -q
test -d copy1.h5 && test -f merged.h5
run h5diff ref.h5 merged.h5
# 2b. the index resolved in windows of a few records each (as in a directory larger than
#     h5mf's --memory), serially and in parallel: the same bytes, the same extents
run env H5MF_TEST_WINDOW_RECORDS=3 "$h5mf" merge copy1.h5 -o windows.h5 -q
run cmp merged.h5 windows.h5
run env H5MF_TEST_WINDOW_RECORDS=3 "$mpiexec" -n "$other" "$h5mf" merge copy1.h5 -o windows-par.h5 -q
run cmp merged.h5 windows-par.h5
[ "$(H5MF_TEST_WINDOW_RECORDS=3 "$h5mf" info copy1.h5 | grep 'total:')" = "$(grep 'total:' info.txt)" ] ||
    { echo "h5mf info in windows differs: $(H5MF_TEST_WINDOW_RECORDS=3 "$h5mf" info copy1.h5 | grep total:)"; exit 1; }
# 3. parallel reconstruction by h5mf under mpiexec, in place
run "$mpiexec" -n "$other" "$h5mf" merge copy2.h5 -q
test -f copy2.h5
run h5diff ref.h5 copy2.h5
# 4. the driver's parallel reconstruction when opened read-only
run "$mpiexec" -n "$np" "$workload" copy3.h5 --driver multifile --check --options read=parallel
test -f copy3.h5
run h5diff ref.h5 copy3.h5
# 5. the original patch's behaviour, selected: open read-only -> reconstructed in place
#    of the directory
run "$mpiexec" -n "$np" "$workload" mf.h5 --driver multifile --check --options read=merge
test -f mf.h5
run h5diff ref.h5 mf.h5
run h5dump -H mf.h5 > /dev/null
# 6. the plugin: an unmodified program (default fapl) with HDF5_DRIVER=multifile
if [ "$libdir" = builtin ]; then
    run env HDF5_DRIVER=multifile "$mpiexec" -n "$np" "$workload" plugin.h5 --driver default
else
    plugdir=$work/plugins
    mkdir "$plugdir"
    ln -s "$libdir/libh5fd_multifile.so" "$plugdir/"
    run env HDF5_DRIVER=multifile HDF5_PLUGIN_PATH="$plugdir${HDF5_PLUGIN_PATH:+:$HDF5_PLUGIN_PATH}" \
        "$mpiexec" -n "$np" "$workload" plugin.h5 --driver default
fi
test -f plugin.h5 && test -d plugin.h5.h5mf || { echo "plugin.h5 is not a head beside plugin.h5.h5mf/"; exit 1; }
# read back by the same unmodified program: in place, the head and its directory stay
if [ "$libdir" = builtin ]; then
    run env HDF5_DRIVER=multifile "$mpiexec" -n "$np" "$workload" plugin.h5 --driver default --check
else
    run env HDF5_DRIVER=multifile HDF5_PLUGIN_PATH="$plugdir${HDF5_PLUGIN_PATH:+:$HDF5_PLUGIN_PATH}" \
        "$mpiexec" -n "$np" "$workload" plugin.h5 --driver default --check
fi
test -f plugin.h5 && test -d plugin.h5.h5mf || { echo "the read changed plugin.h5 or plugin.h5.h5mf/"; exit 1; }
run "$h5mf" merge plugin.h5 -q
test ! -e plugin.h5.h5mf || { echo "h5mf merge left plugin.h5.h5mf/"; exit 1; }
run h5diff ref.h5 plugin.h5
run "$mpiexec" -n "$np" "$workload" ref.h5 --driver mpio --check
echo "compare_workload: $np ranks: all multifile results equal the MPI-IO reference"
