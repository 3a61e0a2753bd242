#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# json_stdout.sh MPIEXEC WORKLOAD H5MF NOISE_LIB
# `h5mf info --json` prints one JSON document on stdout even when the MPI library prints
# while it starts (NOISE_LIB, preloaded, prints a line on stdout in MPI_Init): what the
# library says goes to stderr.
set -euo pipefail
mpiexec=$1 workload=$2 h5mf=$3 noise=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/mf-json.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$mpiexec" -n 2 "$workload" "$work/d.h5" --driver multifile --options layout=dir --datasets 2 > /dev/null
LD_PRELOAD="$noise" "$h5mf" info "$work/d.h5" --json > "$work/out.json" 2> "$work/err.txt"
grep -q "a notice of the MPI library" "$work/err.txt" || { echo "FAIL: the preloaded notice was not printed"; exit 1; }
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["state"] == "complete", d' "$work/out.json" \
    || { echo "FAIL: stdout is not one JSON document:"; head -3 "$work/out.json"; exit 1; }
echo "json_stdout: ok"
