#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# usage.sh H5FUZZ: bad arguments give the usage and exit status 2
set -uo pipefail
fuzz=$1
for args in "" "--seed x f.h5" "--ops 0 f.h5" "--case nosuch f.h5" "--verify-only --no-verify f.h5" "--driver nosuch f.h5"; do
    # shellcheck disable=SC2086
    "$fuzz" $args > out.txt 2>&1
    rc=$?
    if [[ $rc != 2 ]]; then cat out.txt; echo "h5fuzz $args: exit $rc, expected 2"; exit 1; fi
done
# the first line names the option and the value that is wrong, nothing is written
while IFS='|' read -r args want; do
    # shellcheck disable=SC2086
    "$fuzz" $args > out.txt 2> err.txt
    rc=$?
    if [[ $rc != 2 || $(head -1 err.txt) != "$want" ]]; then
        cat out.txt err.txt; echo "h5fuzz $args: exit $rc, expected 2 and first: $want"; exit 1
    fi
done <<'EOF'
f.h5 --seed -1|h5fuzz: --seed: '-1' is not a non-negative integer
f.h5 --seed abc|h5fuzz: --seed: 'abc' is not a non-negative integer
f.h5 --seed 18446744073709551616|h5fuzz: --seed: '18446744073709551616' is more than 18446744073709551615
f.h5 --ops abc|h5fuzz: --ops: 'abc' is not a positive integer
f.h5 --ops 0|h5fuzz: --ops: '0' is not a positive integer
f.h5 --ops 100001|h5fuzz: --ops: '100001' is more than 100000
f.h5 --ops 0x10|h5fuzz: --ops: '0x10' is not a positive integer
f.h5 --writer-ranks -2 --verify-only|h5fuzz: --writer-ranks: '-2' is not a positive integer
f.h5 --grammar 0|h5fuzz: --grammar: '0' is not a positive integer
f.h5 --case nosuch|h5fuzz: --case: 'nosuch' is not a case (straddle, metadata, snapshot)
f.h5 g.h5|h5fuzz: 'g.h5': one FILE only (the first is 'f.h5')
--ops 5|h5fuzz: FILE missing
EOF
"$fuzz" "" --ops 5 > out.txt 2> err.txt
rc=$?
if [[ $rc != 2 || $(head -1 err.txt) != "h5fuzz: FILE is empty" ]]; then
    cat out.txt err.txt; echo "h5fuzz '': exit $rc, expected 2 and first: h5fuzz: FILE is empty"; exit 1
fi
[[ ! -e f.h5 ]] || { echo "h5fuzz wrote f.h5 for a refused command line"; exit 1; }
# a link planted at the file's name is refused, its target untouched
echo precious > victim && ln -sf victim planted.h5
"$fuzz" --seed 1 --ops 5 planted.h5 > out.txt 2>&1
rc=$?
if [[ $rc == 0 || $(cat victim) != precious ]] || ! grep -q "planted.h5: is a symbolic link" out.txt; then
    cat out.txt; echo "h5fuzz wrote through a planted link (exit $rc)"; exit 1
fi
rm -f out.txt err.txt victim planted.h5
echo "usage: ok"
