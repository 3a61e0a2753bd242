#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# client_job.sh MPIEXEC SERVER SIZE LIMIT RANKS PROGRAM [ARGS...]
# An unmodified program as the client job of a fresh DSM: a server job (1 server rank
# hosting SIZE, e.g. 2g) and PROGRAM on RANKS ranks with HDF5_DRIVER=dsm, joined through
# a contact file (separate_jobs_lib.sh: an ompi-server for Open MPI 4). The environment
# reaches both jobs: pass what only the clients need through `env VAR=... PROGRAM`.
# Each job gets LIMIT seconds. Exit status: the program's; 3 when the program exited 0
# but the server job failed or did not end (the clients vanished with a file open); 1
# when the server job could not start; 77 when this MPI cannot join separate jobs (with
# the reason). The program's output goes to standard output, the server's follows when
# something failed. A program that opens no DSM file never connects: its server job is
# stopped and that is said. Ends with "client_job: ok (the server job served N file(s))"
# when both jobs passed.
set -uo pipefail
mpiexec=$1 server=$2 size=$3 limit=$4 ranks=$5
shift 5
. "$(dirname "$0")/separate_jobs_lib.sh"
jobs_workdir client_job
join_jobs
server_limit=$limit
# no --client-timeout: one-sided transfers are no requests, and a slow client's file
# session (oversubscribed ranks) can outlast any short one; a client job that dies is
# seen here, and its server job stopped
if ! start_server -n 1 "$server" --size "$size" --action summary --connections 1; then
    fail "the server job stopped without a contact file"
fi
HDF5_DRIVER=dsm HDF5_DRIVER_CONFIG="contact=$work/dsm.contact;timeout=60" \
    timeout "$limit" "$mpiexec" "${JOIN[@]}" -n "$ranks" "$@" < /dev/null > client.out 2>&1
rc=$?
cat client.out
if [[ -e dsm.contact ]]; then # the server removes it once a client job has connected
    echo "client_job: the program opened no DSM file (its server job is stopped)"
    exit "$rc"
fi
if ((rc != 0)); then # a failed client job can leave the server waiting for it
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    echo "== server.txt"
    cat server.txt
    exit "$rc"
fi
for ((i = 0; i < 600; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
src=0
kill -0 "$spid" 2>/dev/null && src=timeout
[[ $src == timeout ]] || { wait "$spid"; src=$?; }
if [[ $src != 0 ]]; then
    echo "client_job: the program exited 0, but the server job failed or did not end within 60 s ($src):"
    cat server.txt
    exit 3
fi
served=$(grep -o "the clients disconnected after [0-9]* file(s)" server.txt | grep -o "[0-9]*")
echo "client_job: ok (the server job served ${served:-0} file(s))"
