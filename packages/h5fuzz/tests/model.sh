#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# model.sh MPIEXEC H5FUZZ DELAY_LIB RANKS
# MPI-IO against the model: seeds written on RANKS ranks (some with slowed ranks) must
# verify, also read back on another number of ranks; a file of another seed must not.
set -euo pipefail
mpiexec=$1 fuzz=$2 delay=$3 ranks=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/h5fuzz-model.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
run() { echo "+ $*"; "$@"; }
for seed in 1 2 3; do
    run "$mpiexec" -n "$ranks" env LD_PRELOAD="$delay" H5FUZZ_DELAY="2000:20:$seed" "$fuzz" "s$seed.h5" --seed "$seed" --ops 50
done
other=$((ranks % 3 + 1))
run "$mpiexec" -n "$other" "$fuzz" s1.h5 --seed 1 --ops 50 --verify-only --writer-ranks "$ranks"
run "$mpiexec" -n "$ranks" "$fuzz" straddle.h5 --case straddle
# negative control: the model of seed 2 does not describe the file of seed 1
if "$mpiexec" -n 1 "$fuzz" s1.h5 --seed 2 --ops 50 --verify-only --writer-ranks "$ranks" > neg.txt 2>&1; then
    cat neg.txt; echo "the verifier accepted the file of another seed"; exit 1
fi
grep -q "FAILED" neg.txt
echo "model: ok ($ranks ranks)"
