#!/bin/bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# h5pwrite3dc's test cases: cases.sh CASE MPIEXEC H5PWRITE3DC
# Results are checked with HDF5's own tools (h5dump, h5diff) where they can be.
# Exit 0 = pass, 77 = skipped (with the reason on stdout), anything else = fail.
set -u
case_name=$1 mpiexec=$2 prog=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
run() { echo "+ $*"; "$@"; }
# the value h5dump prints for one pixel: h5dump -d DSET -s I,Y,X -c 1,1,1 FILE
pixel() { h5dump -d "$2" -s "$3" -c 1,1,1 "$1" | sed -n 's/^ *([0-9,]*): *\([-0-9.e+]*\).*/\1/p' | head -1; }
# is the multifile driver there (a plugin on HDF5_PLUGIN_PATH, or built into libhdf5)?
have_multifile() {
    local d
    for d in ${HDF5_PLUGIN_PATH//:/ }; do
        [ -e "$d/libh5fd_multifile.so" ] && return 0
    done
    local lib
    lib=$(ldd "$prog" | awk '/libhdf5\.so/ {print $3; exit}')
    [ -n "$lib" ] && nm -D --defined-only "$lib" 2>/dev/null | grep -q ' H5Pset_fapl_multifile$'
}
# expect_error "what the message says" ARGS...: non-zero exit and the message on stderr
# (within 120 s: a run waiting on its input fails)
expect_error() {
    local want=$1
    shift
    timeout 120 "$mpiexec" -n 2 "$prog" "$@" >out.txt 2>err.txt
    local rc=$?
    [ $rc -ne 0 ] || fail "exit 0 for: $* (stdout: $(cat out.txt))"
    [ $rc -ne 124 ] || fail "still running after 120 s: $*"
    grep -qF -- "$want" err.txt || fail "for: $*: expected '$want' on stderr, got: $(cat err.txt)"
    echo "ok (exit $rc): $* -> $(grep -F -- "$want" err.txt | head -1)"
}

case $case_name in
usage_errors)
    expect_error "Must supply a filename"
    expect_error "Must supply a total nb of 2d datasets" f.h5
    expect_error "Must supply a nb of hdf5 datasets" f.h5 4
    expect_error "NSETS must be a positive integer, got 'x'" f.h5 x 2
    expect_error "NDSETS must be a positive integer, got '0'" f.h5 4 0
    expect_error "Must use divisible number of hdf5 datasets (10/4)" f.h5 10 4 --size 8 --chunk 4
    expect_error "Must use divisible number of proc and hdf5 datasets (6/2/2)" f.h5 6 2 --size 8 --chunk 4
    expect_error "the chunk edge (16) must not exceed the image edge (8)" f.h5 4 2 --size 8 --chunk 16
    expect_error "--fill-time must be never, alloc or ifset, got 'sometimes'" f.h5 4 2 --fill-time sometimes
    expect_error "--size must be a positive integer, got '12q'" f.h5 4 2 --size 12q
    expect_error "unknown option '--bogus'" f.h5 4 2 --bogus
    expect_error "missing.hints: cannot open the hints file" f.h5 4 2 --size 8 --chunk 4 --hints missing.hints
    printf 'romio_cb_write enable\nstriping_unit\n' >bad.hints
    expect_error "bad.hints:2: hint 'striping_unit' has no value" f.h5 4 2 --size 8 --chunk 4 --hints bad.hints
    expect_error "missing.par: cannot open the parameter file" f.h5 4 2 missing.par
    expect_error "no HDF5 driver named 'nosuchdriver'" f.h5 4 2 --size 8 --chunk 4 --driver nosuchdriver
    expect_error "Unable to open" nodir/f.h5 4 2 --size 8 --chunk 4 --quiet
    [ ! -e f.h5 ] || fail "a refused run left f.h5 behind"
    # the original's ~2 GB per process warning (this run then fails to create its file)
    expect_error "more than ~2 GB per process" nodir/f.h5 40 1 --quiet
    ;;
inputs_not_files)
    # a hints or parameter file that is not a readable regular file stops the run before
    # it starts: the path and the reason, nothing written (a FIFO is not waited on)
    mkdir adir && mkfifo fifo
    for what in hints parameter; do # --hints FILE, then FILE as PARAMFILE
        opt=()
        [ $what = parameter ] || opt=(--hints)
        expect_error "adir: cannot open the $what file: is a directory" f.h5 4 2 --size 8 --chunk 4 "${opt[@]}" adir
        expect_error "fifo: cannot open the $what file: is a FIFO, not a regular file" f.h5 4 2 --size 8 --chunk 4 \
            "${opt[@]}" fifo
        # a regular file whose reading fails (what an unreadable file on a network file system gives)
        expect_error "/proc/self/mem: cannot read the $what file: Input/output error" f.h5 4 2 --size 8 --chunk 4 \
            "${opt[@]}" /proc/self/mem
    done
    if [ "$(id -u)" != 0 ]; then # root reads any file
        echo "romio_cb_write enable" >locked.hints && chmod 000 locked.hints
        expect_error "locked.hints: cannot open the hints file: Permission denied" f.h5 4 2 --size 8 --chunk 4 \
            --hints locked.hints
    fi
    [ ! -e f.h5 ] || fail "a refused run wrote f.h5"
    ;;
driver_missing)
    # a driver HDF5 cannot find stops the run before it starts, on one rank as on several:
    # the message once, exit 2 after MPI_Finalize (no MPI_Abort, no assertion of the MPI)
    for np in 1 2; do
        timeout 120 "$mpiexec" -n $np "$prog" f.h5 4 2 --size 8 --chunk 4 --driver nosuch >out.txt 2>err.txt
        rc=$?
        cat out.txt err.txt
        [ $rc = 2 ] || fail "$np rank(s): exit $rc, expected 2"
        [ "$(grep -c "f.h5: no HDF5 driver named 'nosuch'" err.txt)" = 1 ] || fail "$np rank(s): not said once"
        ! grep -qE "Assertion|Abort|Internal error" out.txt err.txt || fail "$np rank(s): not a clean exit"
        ! grep -q "^mpi-ranks:" out.txt || fail "$np rank(s): the run started"
    done
    [ ! -e f.h5 ] || fail "f.h5 written"
    ;;
original_examples)
    # the original's usage examples, with small images
    run "$mpiexec" -n 1 "$prog" f.h5 400 100 --size 64 --chunk 32 --verify --quiet >one.txt || fail "1 rank"
    cat one.txt
    grep -q "^ verify: ok, 1638400 pixels" one.txt || fail "1 rank: verify"
    run "$mpiexec" -n 5 "$prog" g.h5 400 20 --size 64 --chunk 32 --verify >five.txt 2>five.err || fail "5 ranks"
    cat five.txt
    grep -q "^ verify: ok, 1638400 pixels" five.txt || fail "5 ranks: verify"
    grep -qE "^ saved 13\.107 \(MB\), rate\(create\): [0-9.]+ \(MB/s\), rate\(write\): [0-9.]+ \(MB/s\)$" five.txt ||
        fail "summary line"
    grep -qE "^ elapsed time\(create\): [0-9.]+$" five.txt && grep -qE "^ elapsed time\( write\): [0-9.]+$" five.txt ||
        fail "elapsed lines"
    for k in 1 8 9 10; do
        n=$(grep -c "chckpoint: $k\b" five.err)
        [ "$n" = 5 ] || fail "checkpoint $k printed $n times, expected once per rank (5)"
    done
    # independently: h5dump's view of shape and of who wrote which image
    h5dump -H g.h5 | grep -c 'DATASET "data_' | grep -qx 20 || fail "expected 20 datasets"
    h5dump -H -d /data_0019 g.h5 | grep -q "DATASPACE  SIMPLE { ( 20, 64, 64 ) / ( 20, 64, 64 ) }" || fail "shape"
    h5dump -p -H -d /data_0000 g.h5 | grep -q "CHUNKED ( 1, 32, 32 )" || fail "chunks"
    h5dump -H -d /data_0000 g.h5 | grep -q "H5T_IEEE_F64LE" || fail "pixel type"
    for spec in "/data_0000 0,0,0 0" "/data_0000 7,63,63 2" "/data_0013 19,5,40 4" "/data_0019 10,0,1 0"; do
        set -- $spec
        v=$(pixel g.h5 "$1" "$2")
        [ "$v" = "$3" ] || fail "h5dump: $1 ($2) = '$v', expected $3"
    done
    echo "h5dump agrees: image i of a dataset holds rank i mod 5"
    ;;
parameter_file)
    # the original's parameter file: g_N, ch_N, romio_cb_write, romio_ds_write, filling
    printf '48\n16\n"disable"\n"enable"\n1\n' >params.txt
    run "$mpiexec" -n 2 "$prog" f.h5 8 2 params.txt --verify --quiet >out.txt || fail "run"
    cat out.txt
    grep -q "g_N: 48, ch_N: 16" out.txt || fail "g_N/ch_N from the parameter file"
    grep -q "romio_cb_write: disable, romio_ds_write: enable, filling: alloc" out.txt || fail "hints and filling"
    h5dump -p -H -d /data_0001 f.h5 | grep -q "FILL_TIME H5D_FILL_TIME_ALLOC" || fail "h5dump: fill time not alloc"
    # an option wins over the file
    run "$mpiexec" -n 2 "$prog" f.h5 8 2 params.txt --size 32 --no-fill --quiet >out.txt || fail "run 2"
    grep -q "g_N: 32, ch_N: 16" out.txt && grep -q "filling: never" out.txt || fail "options over the file"
    printf '48\n16\n' >short.txt
    expect_error "short.txt: the parameter file needs 5 lines" f.h5 8 2 short.txt
    ;;
json)
    run "$mpiexec" -n 2 "$prog" f.h5 8 2 --size 64 --chunk 32 --verify --json r.json --quiet >out.txt || fail "run"
    python3 - r.json <<'PY' || fail "JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks"] == 2 and r["nsets"] == 8 and r["ndsets"] == 2 and r["g_n"] == 64, r
assert r["driver"] == "mpio" and r["transfer"] == "collective" and r["fill_time"] == "never", r
assert r["driver_in_use"] == "mpio", r
assert abs(r["saved_mb"] - 64 * 64 * 8 * 8 / 1e6) < 1e-3, r
for key in ("rate_create_mb_s", "rate_write_mb_s"):
    assert r[key] > 0, key
assert r["limits"]["mpiio"]["rate_mb_s"] > 0 and r["limits"]["posix_fpp"]["rate_mb_s"] > 0, r
w = r["rate_write_mb_s"]
assert abs(r["ratios"]["write/mpiio"] - w / r["limits"]["mpiio"]["rate_mb_s"]) < 1e-3 * max(1, w), r
assert r["verify"] == {"pixels": 32768, "wrong": 0, "time_s": r["verify"]["time_s"]}, r
print("JSON ok:", {k: r[k] for k in ("rate_write_mb_s", "ratios")})
PY
    grep -qx " driver in use: mpio" out.txt || fail "the driver in use is not reported: $(grep driver out.txt)"
    ;;
preload_shim)
    # the multifile package's LD_PRELOAD shim turns H5Pset_fapl_mpio into multifile: the
    # driver HDF5 really uses is reported, not the one asked for
    shim=
    for d in ${HDF5_PLUGIN_PATH//:/ }; do # the shim is installed beside the plugin's library
        lib=$(dirname "$(realpath "$d/libh5fd_multifile.so" 2>/dev/null || echo /nonexistent/x)")
        [ -e "$lib/libh5mf_preload.so" ] && shim=$lib/libh5mf_preload.so && break
    done
    [ -n "$shim" ] || { echo "no libh5mf_preload.so beside the multifile plugin of HDF5_PLUGIN_PATH: not run"; exit 77; }
    run "$mpiexec" -n 2 env LD_PRELOAD="$shim" HDF5_DRIVER=multifile "$prog" s.h5 8 2 --size 64 --chunk 32 --quiet \
        --no-limits --json s.json >out.txt || fail "run under the shim"
    [ -f s.h5 ] && [ -d s.h5.h5mf ] || fail "no multifile file (a head beside s.h5.h5mf/) written under the shim"
    grep -q "^ driver: mpio," out.txt || fail "the requested driver is not reported"
    grep -qF " driver in use: multifile (requested: mpio; replaced underneath" out.txt ||
        fail "the driver in use: $(grep 'in use' out.txt)"
    python3 -c "import json; r = json.load(open('s.json')); assert r['driver_in_use'] == 'multifile', r" || fail "JSON"
    ;;
drivers_agree)
    # every driver writes the same file: h5diff against the MPI-IO (collective) one
    run "$mpiexec" -n 2 "$prog" ref.h5 8 2 --size 40 --chunk 20 --quiet --no-limits >/dev/null || fail "mpio"
    run "$mpiexec" -n 2 "$prog" ind.h5 8 2 --size 40 --chunk 20 --independent --verify --quiet --no-limits >out.txt ||
        fail "mpio independent"
    grep -q "transfer: independent" out.txt || fail "independent not reported"
    run h5diff ref.h5 ind.h5 || fail "h5diff: independent differs"
    if have_multifile; then
        # --verify reads through the driver, in place by default: the head and its directory stay
        run "$mpiexec" -n 2 "$prog" mf.h5 8 2 --size 40 --chunk 20 --driver multifile --verify --quiet --no-limits \
            >out.txt || fail "multifile --verify"
        grep -q "verify: ok" out.txt || fail "multifile: verify in place"
        [ -f mf.h5.h5mf/metafile ] || fail "multifile: the read changed the file"
        # with read=merge the read replaces the head and its directory by the reconstructed file
        run "$mpiexec" -n 2 "$prog" mf2.h5 8 2 --size 40 --chunk 20 --driver multifile --driver-config read=merge \
            --verify --quiet --no-limits >out.txt || fail "multifile --verify, read=merge"
        grep -q "verify: ok" out.txt || fail "multifile: verify with read=merge"
        [ -f mf2.h5 ] && [ ! -e mf2.h5.h5mf ] || fail "multifile: not merged into a file by a read with read=merge"
        run h5diff ref.h5 mf2.h5 || fail "h5diff: multifile differs"
        # chunks that fit the chunk cache make HDF5 read collectively through MPI derived
        # datatypes: the driver carries the read out, and the values are right
        run "$mpiexec" -n 2 "$prog" mf3.h5 8 2 --size 40 --chunk 20 --driver multifile --verify --chunk-cache 1m \
            --quiet --no-limits >out.txt || fail "multifile --verify through derived datatypes"
        grep -q "verify: ok" out.txt || fail "multifile: verify through derived datatypes"
    else
        echo "multifile driver absent here (no plugin on HDF5_PLUGIN_PATH, not in libhdf5): its part not run"
        exit 77
    fi
    ;;
tuning_knobs)
    printf '# a comment\nromio_cb_write disable\ncb_buffer_size 1048576\n' >h.hints
    run "$mpiexec" -n 2 "$prog" f.h5 8 2 --size 64 --chunk 32 --alignment 64k --alignment-threshold 1k --hints h.hints \
        --latest-format --coll-metadata --fill-time alloc --chunk-cache 1m --meta-block-size 64k --verify --quiet \
        >out.txt || fail "run"
    cat out.txt
    grep -q "  cb_buffer_size = 1048576" out.txt || fail "hints not shown"
    grep -q "romio_cb_write = disable" out.txt || fail "the hints file does not win"
    grep -q "alignment: 65536 (threshold 1024), latest format: yes, collective metadata: yes" out.txt || fail "knobs"
    grep -q "verify: ok" out.txt || fail "verify"
    # h5dump sees the knobs: superblock version of the latest format, aligned chunk addresses
    h5dump -B -H f.h5 | grep -qE "SUPERBLOCK_VERSION [23]" || fail "latest format: superblock"
    run h5dump -p -H -d /data_0000 f.h5 | grep -q "FILL_TIME H5D_FILL_TIME_ALLOC" || fail "fill time"
    ;;
subfiling)
    out=$("$mpiexec" -n 2 "$prog" s.h5 8 2 --size 64 --chunk 32 --driver subfiling --verify --quiet --no-limits 2>&1)
    rc=$?
    echo "$out"
    if [ $rc -ne 0 ] && grep -q "built without the subfiling driver" <<<"$out"; then
        echo "this HDF5 has no subfiling driver"
        exit 77
    fi
    [ $rc -eq 0 ] && grep -q "verify: ok, 32768 pixels" <<<"$out" || fail "subfiling"
    ls s.h5.subfile_* >/dev/null 2>&1 || fail "no subfiles written"
    ;;
limits_cleanup)
    run "$mpiexec" -n 2 "$prog" f.h5 8 2 --size 64 --chunk 32 --quiet >out.txt || fail "run"
    cat out.txt
    grep -qE "^ limit mpiio \(MPI_File_write_at_all, shared file\): elapsed time\( write\): [0-9.]+, rate\(write\): [0-9.]+ \(MB/s\)$" out.txt ||
        fail "mpiio limit line"
    grep -qE "^ ratio rate\(write\)/mpiio: [0-9.]+$" out.txt && grep -qE "^ ratio rate\(write\)/posix-fpp: [0-9.]+$" out.txt ||
        fail "ratio lines"
    [ -z "$(ls f.h5.limit-* 2>/dev/null)" ] || fail "limit files left: $(ls f.h5.limit-*)"
    run "$mpiexec" -n 2 "$prog" k.h5 8 2 --size 64 --chunk 32 --quiet --keep-limits >/dev/null || fail "run --keep-limits"
    # the same bytes: the shared limit file is the size of the raw data, each per-rank file half of it
    [ "$(stat -c %s k.h5.limit-mpiio)" = $((8 * 64 * 64 * 8)) ] || fail "mpiio limit size"
    [ "$(stat -c %s k.h5.limit-posix.1)" = $((4 * 64 * 64 * 8)) ] || fail "posix limit size"
    cmp -s k.h5.limit-posix.1 <(python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<d', 1.0) * (4*64*64))") ||
        fail "rank 1's posix limit file does not hold 1.0 pixels"
    ;;
rounds)
    # --rounds 3: every kernel three times, alternated; the figures are medians, each ratio
    # the median of the rounds' own ratios, printed with the spread; the file of the last
    # HDF5 round is whole
    expect_error "--rounds must be a positive integer, got '0'" f.h5 8 2 --size 64 --chunk 32 --rounds 0
    expect_error "--rounds must be at most 1000, got '1001'" f.h5 8 2 --size 64 --chunk 32 --rounds 1001
    run "$mpiexec" -n 2 "$prog" f.h5 8 2 --size 128 --chunk 64 --quiet --rounds 3 --verify --json r.json >out.txt ||
        fail "run"
    cat out.txt
    grep -qx " rounds: 3, the kernels alternated; each figure is the median of the rounds" out.txt || fail "rounds line"
    [ "$(grep -c "^ driver in use: mpio$" out.txt)" = 1 ] || fail "the driver in use said more than once"
    for what in "rate(write)" "limit mpiio rate(write)" "limit posix-fpp rate(write)"; do
        grep -qE "^ spread ${what//[()]/.}: [0-9.]+ - [0-9.]+ \(MB/s\)$" out.txt || fail "no spread of $what"
    done
    grep -qE "^ spread ratio rate\(write\)/mpiio: [0-9.]+ - [0-9.]+$" out.txt || fail "no spread of the ratio"
    grep -q "^ verify: ok, 131072 pixels" out.txt || fail "the last round's file is not whole"
    python3 - r.json out.txt <<'PY' || fail "medians and spreads"
import json, re, statistics, sys
r, out = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
near = lambda a, b: abs(a - b) <= 0.01 * max(abs(a), abs(b))  # the JSON's seconds are rounded to 1 us
rounds = r["seconds_per_round"]
assert r["rounds"] == 3 and all(len(rounds[k]) == 3 for k in ("write", "mpiio", "posix_fpp")), r
mb = 8 * 128 * 128 * 8 / 1e6
assert near(r["rate_write_mb_s"], statistics.median([mb / t for t in rounds["write"]])), r
q = [m / w for m, w in zip(rounds["mpiio"], rounds["write"])]  # each round's own ratio
assert near(r["ratios"]["write/mpiio"], statistics.median(q)), (r["ratios"], q)
lo, hi = map(float, re.search(r"^ spread ratio rate\(write\)/mpiio: (\S+) - (\S+)$", out, re.M).groups())
printed = lambda a, b: abs(a - b) <= 0.5e-4 or near(a, b)  # the spread's ratios are printed with 4 decimals
median = r["ratios"]["write/mpiio"]
assert printed(lo, min(q)) and printed(hi, max(q)) and lo - 0.5e-4 <= median <= hi + 0.5e-4, (lo, hi, q)
lo, hi = map(float, re.search(r"^ spread rate\(write\): (\S+) - (\S+) ", out, re.M).groups())
assert near(lo, mb / max(rounds["write"])) and near(hi, mb / min(rounds["write"])), (lo, hi)
print("medians and spreads ok:", r["ratios"], [round(x, 3) for x in q])
PY
    [ -z "$(ls f.h5.limit-* 2>/dev/null)" ] || fail "limit files left: $(ls f.h5.limit-*)"
    # one round prints what the original prints: no rounds or spread lines
    run "$mpiexec" -n 2 "$prog" g.h5 8 2 --size 64 --chunk 32 --quiet >out.txt || fail "run"
    ! grep -qE "^ (rounds|spread)" out.txt || fail "a single run printed rounds or spreads"
    # rounds without limits: the write's medians alone; limit files kept by another run stay
    run "$mpiexec" -n 2 "$prog" k.h5 8 2 --size 64 --chunk 32 --quiet --keep-limits >/dev/null || fail "run --keep-limits"
    run "$mpiexec" -n 2 "$prog" k.h5 8 2 --size 64 --chunk 32 --quiet --rounds 4 --no-limits --json n.json >out.txt ||
        fail "run --no-limits"
    grep -q "^ spread rate(write): " out.txt && ! grep -qE "^ (limit (mpiio|posix)|ratio) " out.txt ||
        fail "--no-limits with rounds"
    python3 -c "import json; r = json.load(open('n.json')); assert r['rounds'] == 4 and list(r['seconds_per_round']) == ['write'] and 'limits' not in r, r" ||
        fail "--no-limits JSON"
    [ -e k.h5.limit-mpiio ] && [ -e k.h5.limit-posix.1 ] || fail "a run without limits removed another run's limit files"
    ;;
too_large)
    # sizes beyond 64 bits, the node's memory or the file system: the reason, exit 2, nothing written
    expect_error "NSETS x image bytes (4611686018427387904 x 32768) is more than a 64-bit size holds" \
        f.h5 4611686018427387904 4611686018427387904 --size 64 --chunk 64
    expect_error "an image of 1518500250 x 1518500250 doubles is more bytes than a 64-bit size holds" \
        f.h5 8 2 --size 1518500250
    expect_error "the images need" f.h5 8 2 --size 2000000 --chunk 512
    expect_error "f.h5: the run writes 26388.28 GB (1099511627776 images of 8 bytes, and as much again twice for the limit files)" \
        f.h5 1099511627776 2 --size 1 --chunk 1
    expect_error "f.h5: the run writes 8796.09 GB (1099511627776 images of 8 bytes)" \
        f.h5 1099511627776 2 --size 1 --chunk 1 --no-limits
    [ -z "$(ls f.h5* 2>/dev/null)" ] || fail "files written: $(ls f.h5*)"
    ;;
hostile_outputs)
    # results that cannot be written fail the run, before it starts (nothing written)
    expect_error "--json: /nonexistent/x.json: cannot create a file in /nonexistent" j.h5 8 2 --size 64 --chunk 32 \
        --quiet --no-limits --json /nonexistent/x.json
    [ ! -e j.h5 ] || fail "j.h5 written although its results could not be"
    mkdir adir
    expect_error "--json: adir: is a directory" j.h5 8 2 --size 64 --chunk 32 --quiet --no-limits --json adir
    # links planted at the names of the files it creates are replaced, never written through
    echo precious > victim
    for name in p.h5.limit-posix.0 p.h5.limit-posix.1 p.h5.limit-mpiio r.json; do ln -s victim "$name"; done
    run "$mpiexec" -n 2 "$prog" p.h5 8 2 --size 64 --chunk 32 --quiet --keep-limits --json r.json >/dev/null ||
        fail "run with planted links"
    [ "$(cat victim)" = precious ] || fail "a planted link was written through: victim holds $(head -c 40 victim)"
    for name in p.h5.limit-posix.0 p.h5.limit-posix.1 p.h5.limit-mpiio r.json; do
        [ -f "$name" ] && [ ! -L "$name" ] || fail "$name is not a new file of its own"
    done
    python3 -c "import json; assert json.load(open('r.json'))['ranks'] == 2" || fail "r.json"
    # the HDF5 file the user names is refused when a link stands there
    ln -s victim l.h5
    expect_error "l.h5: is a symbolic link: not written through" l.h5 8 2 --size 64 --chunk 32 --quiet --no-limits
    [ "$(cat victim)" = precious ] || fail "the HDF5 file was written through a planted link"
    [ "$(stat -c %s p.h5.limit-mpiio)" = $((8 * 64 * 64 * 8)) ] || fail "mpiio limit size"
    echo "ok: planted links replaced, their target untouched"
    ;;
dsm_client)
    # a DSM client in one MPMD job: the images go into the memory of h5dsm-server, which
    # dumps each file it gets; the dump equals the MPI-IO file of the same run (h5diff)
    server=$(command -v h5dsm-server) || { echo "no h5dsm-server on PATH (hdf5-vfd-dsm): not run"; exit 77; }
    run "$mpiexec" -n 2 "$prog" ref.h5 8 2 --size 64 --chunk 32 --quiet --no-limits >/dev/null || fail "mpio"
    run timeout 240 "$mpiexec" -n 1 "$server" --size 4m --distribution block-cyclic:64k --action summary \
        --action 'dump:dsm_{step}.h5' : -n 2 "$prog" mem.h5 8 2 --size 64 --chunk 32 --driver dsm --verify --quiet \
        --json r.json >out.txt 2>err.txt || fail "MPMD job: $(tail -5 err.txt)"
    cat out.txt
    grep -q "^mpi-ranks: 2$" out.txt || fail "the clients are not 2 ranks of their own"
    grep -q "driver: dsm" out.txt || fail "driver not reported"
    grep -q "^ verify: ok, 32768 pixels" out.txt || fail "verify through the DSM"
    grep -q "step 0: 'mem.h5' closed" out.txt err.txt || fail "the server did not see the file closed"
    [ ! -e mem.h5 ] || fail "mem.h5 reached the disk"
    out=$(h5diff ref.h5 dsm_0.h5 2>&1) || fail "h5diff: $out"
    [ -z "$out" ] || fail "h5diff printed: $out"
    echo "ok: the DSM's dump equals the MPI-IO file"
    python3 -c "import json; r = json.load(open('r.json')); assert r['ranks'] == 2 and r['driver'] == 'dsm', r" ||
        fail "JSON"
    # the original's constraint counts the clients, and a refused client stops the whole job
    timeout 120 "$mpiexec" -n 1 "$server" --size 4m : -n 2 "$prog" mem.h5 6 2 --size 64 --chunk 32 --driver dsm \
        --quiet >out.txt 2>err.txt && fail "6 images on 2 clients x 2 datasets accepted"
    [ $? -ne 124 ] || fail "a refused client left the job hanging"
    grep -qF "Must use divisible number of proc and hdf5 datasets (6/2/2)" err.txt || fail "constraint: $(cat err.txt)"
    echo "ok: constraint checked on the clients, job stopped"
    # no servers, or no DSM library: the reason, a non-zero exit
    expect_error "not an MPMD job with servers and clients" mem.h5 8 2 --size 64 --chunk 32 --driver dsm --quiet
    mkdir empty
    HDF5_PLUGIN_PATH=$PWD/empty expect_error "the DSM driver's libh5fd_dsm.so is not on HDF5's plugin path" mem.h5 8 2 --size 64 \
        --chunk 32 --driver dsm --quiet
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "PASS: $case_name"
