#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# nommap.sh MPIEXEC WORKLOAD H5MF NOMMAP_LIB
# h5mf merge where the rank files cannot be mapped (NOMMAP_LIB refuses shared maps, as a
# FUSE file system with direct I/O does): the result is byte for byte the merge that maps
# them, serial and under mpiexec, and the small pieces are read through each rank file's
# read-ahead: far fewer reads than pieces (each read a round trip on such a file system).
set -euo pipefail
mpiexec=$1 workload=$2 h5mf=$3 nommap=$4
work=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/mf-nommap.XXXXXX")" && pwd -P)  # as /proc/self/fd names it
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
# the shim refuses maps of the files under this directory; UCX's mmap hooks would pass it by
export NOMMAP_DIR=$work UCX_MEM_MMAP_HOOK_MODE=none

"$mpiexec" -n 4 "$workload" mf.h5 --driver multifile --options layout=dir >/dev/null || fail "the multifile run"
cp -r mf.h5 par.h5
"$h5mf" merge mf.h5 -o mapped.h5 -q || fail "h5mf merge with maps"
NOMMAP_COUNT=$work/preads LD_PRELOAD="$nommap" "$h5mf" merge mf.h5 -o unmapped.h5 -q ||
    fail "h5mf merge without maps"
cmp mapped.h5 unmapped.h5 || fail "the merge without maps differs from the merge with them"
extents=$("$h5mf" info par.h5 | sed -n 's/.* in \([0-9]*\) extents$/\1/p')
read -r reads refused < <(awk '{r += $1; m += $2} END {print r + 0, m + 0}' "$work/preads")
echo "merge without maps: $reads reads for $extents extents, $refused maps refused"
[ "$refused" -gt 0 ] || fail "no map was refused: the merge mapped its files and this tested nothing"
[ "$reads" -gt 0 ] || fail "no read was counted: the shim did not see the merge's reads"
[ "$extents" -ge 100 ] || fail "the workload made only ${extents:-no} extents: nothing to tell reads from pieces"
[ "$reads" -lt $(( extents / 4 )) ] || fail "$reads reads for $extents extents: a read per piece, not read ahead"
"$mpiexec" -n 2 env LD_PRELOAD="$nommap" "$h5mf" merge par.h5 -q || fail "parallel h5mf merge without maps"
cmp mapped.h5 par.h5 || fail "the parallel merge without maps differs from the merge with them"
# the shim works: a shared map of a file is refused under it
if LD_PRELOAD="$nommap" python3 -c "import mmap; mmap.mmap(open('$work/mapped.h5').fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)" 2>/dev/null; then
    fail "the shim did not refuse a shared map"
fi
echo "nommap: ok (merges without maps equal the merge with them)"
