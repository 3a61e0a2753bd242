#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# netCDF-C's tst_nc4perf (nc_test4: 2-D and 4-D variables, independent and collective
# access, three chunk cache sizes, chunked and contiguous) through HDF5's MPI-IO driver
# and through multifile, in turn, in one run: each run's wall time and the sum of the
# write times the program prints, then the medians and multifile's ratio to MPI-IO.
#
#   eval "$(./h5stack env mpich-hdf5-1.14)"
#   bench/nc4perf.sh NETCDF_BUILD_DIR PRELOAD_LIBRARY [RUNS] [RANKS]
#
# NETCDF_BUILD_DIR: netCDF-C's build tree (stack.json's "clients" build_dir; its source
# tree is src/netcdf-c-* beside it); PRELOAD_LIBRARY: the driver's libh5mf_preload.so
# (netCDF calls H5Pset_fapl_mpio itself: the preload library with
# H5MF_MPIO_DRIVER=multifile selects multifile there). RUNS (3) of each, RANKS (4).
set -euo pipefail
build=${1:?usage: nc4perf.sh NETCDF_BUILD_DIR PRELOAD_LIBRARY [RUNS] [RANKS]}
preload=${2:?usage: nc4perf.sh NETCDF_BUILD_DIR PRELOAD_LIBRARY [RUNS] [RANKS]}
runs=${3:-3}
ranks=${4:-4}
[[ -f $build/config.h ]] || { echo "nc4perf.sh: $build: no config.h (not a netCDF-C build tree)" >&2; exit 2; }
[[ -f $preload ]] || { echo "nc4perf.sh: $preload: not found" >&2; exit 2; }
src=$(ls -d "$(dirname "$build")"/src/netcdf-c-* | head -1)
prefix=$(nc-config --prefix)
work=$(mktemp -d "${TMPDIR:-/tmp}/nc4perf.XXXXXX")
trap 'rm -rf "$work"' EXIT
h5pcc -O2 -w -o "$work/tst_nc4perf" "$src/nc_test4/tst_nc4perf.c" -I"$src/include" -I"$build" \
    -I"$build/include" -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lnetcdf -lm

# one run in a fresh directory: "WALL WRITES" (seconds), or exit 1 with its output
one() {
    local how=$1 dir=$work/$1.$2 start end
    mkdir "$dir"
    start=$(date +%s.%N)
    if [[ $how == multifile ]]; then
        (cd "$dir" && env LD_PRELOAD="$preload" H5MF_MPIO_DRIVER=multifile mpiexec -n "$ranks" ../tst_nc4perf) \
            >"$dir/out" 2>&1 </dev/null || { echo "nc4perf.sh: $how run $2 failed:" >&2; tail -20 "$dir/out" >&2; exit 1; }
        compgen -G "$dir/*.h5mf" >/dev/null || { echo "nc4perf.sh: no multifile file written" >&2; exit 1; }
    else
        (cd "$dir" && mpiexec -n "$ranks" ../tst_nc4perf) >"$dir/out" 2>&1 </dev/null ||
            { echo "nc4perf.sh: $how run $2 failed:" >&2; tail -20 "$dir/out" >&2; exit 1; }
    fi
    end=$(date +%s.%N)
    # the table's rows: ... avg. write time(s) (the 3rd field from the end)
    awk -v wall="$(echo "$end - $start" | bc)" '$1 ~ /^[0-9]+$/ && NF >= 9 { w += $(NF-2) }
        END { printf "%.2f %.3f\n", wall, w }' "$dir/out"
    rm -rf "$dir"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "tst_nc4perf, $ranks ranks, $runs runs of each in turn; seconds: wall, sum of the write times it prints"
: >"$work/mpio" && : >"$work/multifile"
for ((i = 1; i <= runs; i++)); do
    order=(mpio multifile)
    ((i % 2 == 0)) && order=(multifile mpio)
    for how in "${order[@]}"; do
        read -r wall writes < <(one "$how" "$i")
        echo "$wall $writes" >>"$work/$how"
        printf 'run %d %-9s wall %7.2f  writes %8.3f\n' "$i" "$how" "$wall" "$writes"
    done
done
for col in 1 2; do
    a=$(cut -d' ' -f$col "$work/mpio" | median)
    b=$(cut -d' ' -f$col "$work/multifile" | median)
    name=$([[ $col == 1 ]] && echo wall || echo writes)
    printf 'median %-6s  mpio %8.3f  multifile %8.3f  multifile/mpio %.3f\n' "$name" "$a" "$b" \
        "$(echo "scale=6; $b / $a" | bc)"
done
