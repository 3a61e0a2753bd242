#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# model.sh MPIEXEC H5FUZZ DELAY_LIB RANKS
# MPI-IO against the model: seeds written on RANKS ranks (some with slowed ranks) must
# verify, also read back on another number of ranks, which names the same datasets with
# undefined elements (never written, no fill value written); a file of another seed
# must not verify (exit status 4: differs from the model).
set -euo pipefail
mpiexec=$1 fuzz=$2 delay=$3 ranks=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/h5fuzz-model.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
run() { echo "+ $*"; "$@"; }
for seed in 1 2 3; do
    run "$mpiexec" -n "$ranks" env LD_PRELOAD="$delay" H5FUZZ_DELAY="2000:20:$seed" "$fuzz" "s$seed.h5" --seed "$seed" --ops 50 |
        tee "s$seed.txt"
done
other=$((ranks % 3 + 1))
run "$mpiexec" -n "$other" "$fuzz" s1.h5 --seed 1 --ops 50 --verify-only --writer-ranks "$ranks" | tee v1.txt
# seed 1 leaves datasets never written with no fill value written: listed, the same by both
undefined() { grep -o '^h5fuzz: undefined: [^ ]*: [0-9]* elements' "$1" || true; }
if [[ -z $(undefined s1.txt) || $(undefined s1.txt) != "$(undefined v1.txt)" ]]; then
    echo "the datasets with undefined elements differ or are missing:"; cat s1.txt v1.txt; exit 1
fi
run "$mpiexec" -n "$ranks" "$fuzz" straddle.h5 --case straddle
# grammar 3 (element types, converted or not; 3-D; paged file space): written on RANKS,
# verified on another number of ranks
run "$mpiexec" -n "$ranks" "$fuzz" g3.h5 --seed 22 --ops 50 --grammar 3
run "$mpiexec" -n "$other" "$fuzz" g3.h5 --seed 22 --ops 50 --grammar 3 --verify-only --writer-ranks "$ranks"
# grammar 6: writes and reads of several datasets joined in one H5Dwrite_multi and one
# H5Dread_multi (reads during the session compared with the model), verified on another
# number of ranks
run "$mpiexec" -n "$ranks" "$fuzz" g6.h5 --seed 11 --ops 60 --grammar 6 --verbose > g6.txt
for call in H5Dwrite_multi H5Dread_multi; do
    grep -q "one $call of [2-4] datasets" g6.txt || { cat g6.txt; echo "grammar 6's seed 11 made no $call"; exit 1; }
done
run "$mpiexec" -n "$other" "$fuzz" g6.h5 --seed 11 --ops 60 --grammar 6 --verify-only --writer-ranks "$ranks"
# ... and with --all-ranks (what the DSM runs): no session of fewer ranks than the job's
run "$mpiexec" -n "$ranks" "$fuzz" g6a.h5 --seed 11 --ops 60 --grammar 6 --all-ranks --verbose > g6a.txt
if grep -q "ranks 0\.\." g6a.txt || ! grep -q "one H5Dwrite_multi of" g6a.txt; then
    cat g6a.txt; echo "--all-ranks: a session of fewer ranks, or no joined write"; exit 1
fi
# negative control: the model of seed 2 does not describe the file of seed 1
rc=0
"$mpiexec" -n 1 "$fuzz" s1.h5 --seed 2 --ops 50 --verify-only --writer-ranks "$ranks" > neg.txt 2>&1 || rc=$?
if [[ $rc != 4 ]] || ! grep -q "FAILED" neg.txt; then
    cat neg.txt; echo "the verifier gave exit status $rc for the file of another seed, expected 4"; exit 1
fi
# ... and the same seed in grammar 2 is another workload, which that file is not
rc=0
"$mpiexec" -n 1 "$fuzz" g3.h5 --seed 22 --ops 50 --grammar 2 --verify-only --writer-ranks "$ranks" > neg3.txt 2>&1 || rc=$?
if [[ $rc != 4 ]]; then
    cat neg3.txt; echo "grammar 2's model of seed 22 gave exit status $rc for grammar 3's file, expected 4"; exit 1
fi
echo "model: ok ($ranks ranks)"
