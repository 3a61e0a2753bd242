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
# a link planted at the file's name is refused, its target untouched
echo precious > victim && ln -sf victim planted.h5
"$fuzz" --seed 1 --ops 5 planted.h5 > out.txt 2>&1
rc=$?
if [[ $rc == 0 || $(cat victim) != precious ]] || ! grep -q "planted.h5: is a symbolic link" out.txt; then
    cat out.txt; echo "h5fuzz wrote through a planted link (exit $rc)"; exit 1
fi
rm -f out.txt victim planted.h5
echo "usage: ok"
