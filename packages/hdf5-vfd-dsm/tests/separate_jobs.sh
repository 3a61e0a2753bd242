#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# separate_jobs.sh MPIEXEC SERVER WORKLOAD PLUGIN_DIR DROPIN
# Servers and clients as two jobs joined through a contact file (MPI_Open_port /
# MPI_Comm_accept / MPI_Comm_connect), the clients a program selecting the driver with
# HDF5_DRIVER=dsm; two files go through the DSM and equal their MPI-IO references
# (h5diff). Then a second client job of a program not linked with the driver (vfd_dropin:
# HDF5 loads the plugin, and unloads it in H5close before MPI_Finalize, as HDF5's own test
# programs end) must pass its checks and exit 0. How the jobs find each other:
# separate_jobs_lib.sh (join_jobs).
# Open MPI 4: the window between the jobs needs the ucx one-sided component (the default,
# rdma, cannot create it: "cannot expose ... in an MPI window"; pt2pt creates it but hung
# with 2 servers and 2 clients). An MPI that cannot open ports (Debian's MPICH 4.0.2 with
# its UCX netmod, whose port name does not fit MPI_MAX_PORT_NAME): the server must say so
# and stop, and the test is skipped (exit 77).
set -uo pipefail
mpiexec=$1 server=$2 workload=$3
export HDF5_PLUGIN_PATH=$4
dropin=$5
. "$(dirname "$0")/separate_jobs_lib.sh"
jobs_workdir separate_jobs
join_jobs
if ! start_server -n 2 "$server" --size 4m --distribution block-cyclic:4k --action summary \
    --action "dump:dump_{step}.h5" --connections 2; then
    wait "$spid" && fail "the server stopped without a contact file and exited 0"
    grep -q "MPI_Open_port failed: this MPI cannot accept connections from other jobs" server.txt ||
        fail "no contact file, and no reason given for the refusal"
    # the refusal is checked; the jobs were not joined: a skip (77), not a pass
    echo "separate_jobs: skipped: this MPI refuses separate jobs with the reason: $(grep -o '(.*)' server.txt | head -1)"
    exit 77
fi
HDF5_DRIVER=dsm HDF5_DRIVER_CONFIG="contact=$work/dsm.contact;timeout=60" \
    timeout 120 "$mpiexec" "${JOIN[@]}" -n 2 "$workload" env "mem_{step}.h5" 2 --verify \
    > client.txt 2>&1 || fail "the client job failed"
grep -q "workload: ok (2 files, 2 ranks, verified)" client.txt || fail "the clients did not read their files back"
"$mpiexec" -n 2 "$workload" mpio "ref_{step}.h5" 2 > ref.txt 2>&1 || fail "the MPI-IO reference failed"
for k in 0 1; do # the first connection's dumps, before the next connection's overwrite dump_0.h5
    for ((i = 0; i < 100; i++)); do [[ -e dump_$k.h5 ]] && break; sleep 0.1; done
    h5diff "ref_$k.h5" "dump_$k.h5" > diff.txt 2>&1 || fail "h5diff: step $k differs"
    [[ -s diff.txt ]] && fail "h5diff reported something for step $k"
done
HDF5_DRIVER=dsm HDF5_DRIVER_CONFIG="contact=$work/dsm.contact;timeout=60" \
    timeout 120 "$mpiexec" "${JOIN[@]}" -n 2 "$dropin" plugin.h5 > dropin.txt 2>&1
rc=$?
((rc == 0)) || fail "the client job of a program not linked with the driver exited $rc"
grep -q "vfd_dropin: ok (2 ranks" dropin.txt || fail "vfd_dropin did not pass its checks"
wait "$spid" || fail "the server job failed"
grep -q "h5dsm-server: the clients disconnected after 2 file(s)" server.txt || fail "the servers did not see 2 files"
grep -q "h5dsm-server: the clients disconnected after 1 file(s)" server.txt ||
    fail "the servers did not see the second job's file"
[[ -e dsm.contact ]] && fail "the contact file outlived the connection"
echo "separate_jobs: ok (two jobs through a contact file, HDF5_DRIVER=dsm, 2 files equal to MPI-IO;"
echo "a program not linked with the driver passed and exited 0)"
