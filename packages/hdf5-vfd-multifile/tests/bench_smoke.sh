#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# bench_smoke.sh MPIEXEC H5MF_BENCH
# The benchmark runs and reports every kernel and ratio (figures are not judged here),
# and writes none of its files through a symbolic link planted at their names.
set -uo pipefail
mpiexec=$1 bench=$2
d=$(mktemp -d "${TMPDIR:-/tmp}/mf-bench.XXXXXX")
trap 'rm -rf "$d"' EXIT
echo precious > "$d/victim"
for name in fpp.0 fpp.1 merged.h5 copy.out bench.json shared.mpiio mpio.h5 mpio-seloff.h5; do ln -s victim "$d/$name"; done
"$mpiexec" -n 2 "$bench" "$d" --mib-per-rank 2 --block-kib 256 --repeat 1 --json "$d/bench.json" || exit 1
python3 - "$d/bench.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))["ratios"]
need = ["multifile/posix-fpp (write limit)", "merge-serial/copy-serial", "read-inplace/read-merged",
        "multifile selection-off/on", "multifile/hdf5-mpio (selection off)",
        "multifile/hdf5-mpio (collective reads in the session)"]
missing = [k for k in need if not r.get(k)]
sys.exit(f"missing ratios: {missing}" if missing else 0)
PY
[[ $(cat "$d/victim") == precious ]] || { echo "FAIL: a planted link was written through"; exit 1; }
# bad arguments: the reason and exit 2, nothing run
for bad in "--repeat abc:--repeat takes 1 to 16" "--mib-per-rank -5:--mib-per-rank takes" \
    "--records 1,0:--records takes" "--bogus:unknown option"; do
    args=${bad%%:*} want=${bad#*:}
    out=$("$mpiexec" -n 1 "$bench" "$d" $args 2>&1); rc=$?
    [[ $rc == 2 && $out == *"$want"* ]] || { echo "FAIL: h5mf-bench $args: exit $rc, $out"; exit 1; }
done
echo "bench_smoke: ok (every ratio reported, planted links not followed, bad arguments refused)"
