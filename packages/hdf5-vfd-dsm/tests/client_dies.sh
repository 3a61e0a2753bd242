#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# client_dies.sh MPIEXEC SERVER WORKLOAD PLUGIN_DIR
# A client job that dies with a file open: the servers (h5dsm-server --client-timeout)
# discard that file, run no action on it, and serve the next client job, whose file
# reaches the disk equal to its MPI-IO reference. Needs separate jobs (a contact file):
# where this MPI cannot join jobs (separate_jobs_lib.sh), skipped with the reason (exit 77):
# in one MPMD job the launcher ends the whole job when one rank dies.
set -uo pipefail
mpiexec=$1 server=$2 workload=$3
export HDF5_PLUGIN_PATH=$4
. "$(dirname "$0")/separate_jobs_lib.sh"
jobs_workdir client_dies
join_jobs
# the client timeout: long enough for a busy 2-core machine, short enough for a test
if ! start_server -n 2 "$server" --size 2m --distribution block-cyclic:4k --connections 2 --client-timeout 12 \
    --action summary --action "dump:dump_{step}.h5"; then
    grep -q "MPI_Open_port failed: this MPI cannot accept connections from other jobs" server.txt ||
        fail "the server stopped without a contact file, and not because this MPI cannot open ports"
    echo "client_dies: skipped: this MPI cannot join separate jobs ($(grep -o '(.*)' server.txt | head -1)), and in"
    echo "one MPMD job the launcher ends every rank when one dies (the servers cannot outlive a dead client there)"
    exit 77
fi
export HDF5_DRIVER=dsm HDF5_DRIVER_CONFIG="contact=$work/dsm.contact;timeout=60"
timeout 120 "$mpiexec" "${JOIN[@]}" -n 2 "$workload" env "dead_{step}.h5" 1 --die-mid-file \
    > dying.txt 2>&1 && fail "the dying client job exited 0"
grep -q "workload: rank 0 dies in the middle of dead_0.h5" dying.txt || fail "the client did not die mid-file"
timeout 120 "$mpiexec" "${JOIN[@]}" -n 2 "$workload" env "mem_{step}.h5" 1 --verify \
    > client.txt 2>&1 || fail "the next client job failed"
wait "$spid"
rc=$?
((rc == 1)) || fail "the server exited $rc, expected 1 (a connection lost its clients)"
grep -q "workload: ok (1 files, 2 ranks, verified)" client.txt || fail "the next clients did not read their file back"
grep -q "h5dsm: step 0: 'dead_0.h5' discarded (no word from the clients for 12 s with the file open" server.txt ||
    fail "the server did not discard the dead clients' file"
grep -q "the clients were lost .*; serving the next connection" server.txt || fail "no word of serving on"
grep -q "h5dsm-server: step 0: 'mem_0.h5' closed" server.txt || fail "the next clients' file was not served"
grep -q "1 of 2 connection(s) lost their clients" server.txt || fail "the lost connection is not reported"
grep -q "dead_0.h5' closed" server.txt && fail "an action ran on the discarded file"
unset HDF5_DRIVER HDF5_DRIVER_CONFIG
"$mpiexec" -n 2 "$workload" mpio "ref_{step}.h5" 1 > ref.txt 2>&1 || fail "the MPI-IO reference failed"
h5diff ref_0.h5 dump_0.h5 > diff.txt 2>&1 || fail "h5diff: the next clients' file differs"
[[ -s diff.txt ]] && fail "h5diff reported something"
echo "client_dies: ok (a client job died mid-file: its file discarded; the next job's file equal to MPI-IO)"
