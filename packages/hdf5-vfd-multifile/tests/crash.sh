#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# crash.sh MPIEXEC WORKLOAD H5MF
# Kill one rank or all ranks at several points of a write session, and kill a merge
# part-way: the directory is never replaced by an incomplete file, `h5mf info` says
# what is incomplete, and a merge either gives the data of every completed flush or
# refuses with a clear reason.
set -uo pipefail
mpiexec=$1 workload=$2 h5mf=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-crash.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
crash() { # crash NAME RANK:PHASE
    rm -rf "$1"
    MF_WORKLOAD_KILL=$2 "$mpiexec" -n 2 "$workload" "$1" --driver multifile --options layout=dir --datasets 8 > "$1.log" 2>&1 \
        && bad "$1: the workload survived MF_WORKLOAD_KILL=$2"
    test -d "$1" || bad "$1: no directory after the crash"
}

# a rank dies after the first flush: the first flush's state is recoverable
for who in 1 all; do
    crash "after-$who.h5" "$who:after-flush"
    "$h5mf" info "after-$who.h5" > info.txt; cat info.txt
    grep -q "INCOMPLETE" info.txt && grep -q "1 committed epochs" info.txt && ok "info reports the crash ($who)" \
        || bad "info after-$who"
    "$h5mf" merge "after-$who.h5" 2> err.txt && bad "in-place merge of an incomplete directory"
    grep -q "incomplete" err.txt && test -d "after-$who.h5" && ok "in-place merge refused ($who)" || bad "merge message"
    # one rank: no other rank's MPI_Abort ends the job while this one prints its error
    # stack (the launcher may drop output still in flight when it kills a rank)
    "$mpiexec" -n 1 "$workload" "after-$who.h5" --driver multifile --check-partial --datasets 8 --options read=merge \
        > read.txt 2>&1 && bad "the driver's read=merge merged an incomplete directory"
    grep -q "incomplete" read.txt || bad "read=merge message: $(tail -3 read.txt)"
    test -d "after-$who.h5" || bad "the driver replaced an incomplete directory"
    "$mpiexec" -n 1 "$workload" "after-$who.h5" --driver multifile --check-partial --datasets 8 \
        && test -d "after-$who.h5" && ok "in-place read (the default) of the first flush ($who)" \
        || bad "in-place read after-$who"
    "$h5mf" merge "after-$who.h5" --partial -o "after-$who-partial.h5" -q \
        && "$mpiexec" -n 2 "$workload" "after-$who-partial.h5" --driver mpio --check-partial --datasets 8 \
        && ok "partial merge has every value of the first flush ($who)" || bad "partial merge after-$who"
done

# every rank dies before any flush: nothing committed, nothing to reconstruct
crash before.h5 all:before-flush
"$h5mf" merge before.h5 --partial -o before-partial.h5 2> err.txt && bad "merge of a directory with no flush"
grep -q "never completed a flush" err.txt && test ! -e before-partial.h5 && ok "no-flush merge refused" \
    || bad "no-flush message: $(cat err.txt)"

# a rank dies just before close: four completed flushes
crash close.h5 0:before-close
# (into a file, not a pipe: under MPI h5mf's stdout is unbuffered, and `grep -q` leaving
# early would kill it with SIGPIPE, which pipefail reports as a failure)
"$h5mf" info close.h5 > info.txt; cat info.txt
grep -q "4 committed epochs" info.txt && ok "before-close: 4 committed epochs" || bad "before-close info"
"$h5mf" merge close.h5 --partial -o close-partial.h5 -q && h5dump -H close-partial.h5 > /dev/null \
    && ok "before-close partial merge is a valid HDF5 file" || bad "before-close partial merge"

# a merge killed part-way leaves the directory intact; the next merge succeeds
"$mpiexec" -n 2 "$workload" good.h5 --driver multifile --options layout=dir --datasets 8 > /dev/null || bad "good workload"
H5MF_TEST_KILL_AFTER_BYTES=1000 "$h5mf" merge good.h5 -q 2> /dev/null && bad "the killed merge succeeded"
test -d good.h5 && "$h5mf" verify good.h5 > /dev/null && ok "killed merge: directory intact" || bad "killed merge"
"$h5mf" merge good.h5 -q && test -f good.h5 && ok "merge after a killed merge" || bad "merge after kill"
ls -a | grep -q "h5mf-merge" && bad "temporary output of the killed merge left behind" || ok "stale output removed"
"$mpiexec" -n 2 "$workload" good.h5 --driver mpio --check --datasets 8 > /dev/null && ok "merged file checks" \
    || bad "merged file values"
echo "crash: $failures failure(s)"
exit $(( failures > 0 ))
