#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# faults.sh MPIEXEC SERVER WORKLOAD STALL PLUGIN_DIR
# Bad input and faults end with a clear error and a non-zero exit, never a hang or a
# corrupted DSM: a file larger than the DSM ("the DSM is full"), unknown distributions
# and bad sizes at server start, a contact file no server wrote, a server that never
# answers (the clients' timeout), a file that one client rank opens alone (the open's
# bounded wait: the job ends with the reason).
set -uo pipefail
mpiexec=$1 server=$2 workload=$3 stall=$4
export HDF5_PLUGIN_PATH=$5 # the driver as a plugin, for HDF5_DRIVER=dsm
work=$(mktemp -d "${TMPDIR:-/tmp}/dsm-faults.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
# expect STATUS TEXT CMD...: CMD exits with STATUS (any non-zero: "nonzero") within 120 s
# and prints TEXT. The server stops a job with bad arguments by MPI_Abort (in an MPMD
# job the clients would wait for it forever), whose code not every launcher passes on:
# its errors are checked as non-zero.
expect() {
    local want=$1 text=$2
    shift 2
    local start=$SECONDS
    timeout 120 "$@" > out.txt 2>&1
    local rc=$?
    if [[ $rc != 0 && $rc != 124 && ! -s out.txt ]]; then
        # MPICH's launcher now and then forwards nothing of a job that ends in MPI_Abort (seen
        # on a loaded node): say so, with the exit status, and run the case once more
        echo "retried (exit $rc with no output at all): $*"
        timeout 120 "$@" > out.txt 2>&1
        rc=$?
    fi
    local ok=1
    if [[ $rc == 124 ]]; then ok=0; echo "FAIL (hung, killed after 120 s): $*"
    elif [[ $want == nonzero && $rc == 0 ]] || [[ $want != nonzero && $rc != "$want" ]]; then
        ok=0; echo "FAIL (exit $rc, expected $want): $*"
    elif ! grep -qF -- "$text" out.txt; then ok=0; echo "FAIL (exit $rc, no '$text' in the output): $*"; fi
    if ((ok)); then echo "ok (exit $rc, $((SECONDS - start)) s): $* -> $(grep -F -m1 -- "$text" out.txt)"
    else cat out.txt; failures=$((failures + 1)); fi
}

expect nonzero "the DSM is full: a write of" \
    "$mpiexec" -n 1 "$server" --size 64k : -n 2 "$workload" mpmd mem.h5 1
expect nonzero "unknown distribution 'cyclic'" \
    "$mpiexec" -n 1 "$server" --size 1m --distribution cyclic : -n 1 "$workload" mpmd mem.h5 1
expect nonzero "block size 4194304 exceeds each server's buffer" \
    "$mpiexec" -n 1 "$server" --size 1m --distribution block-cyclic:4m : -n 1 "$workload" mpmd mem.h5 1
expect nonzero "--size must be a positive size" "$mpiexec" -n 1 "$server" --size 12q
expect nonzero "--size is required" "$mpiexec" -n 1 "$server"
expect nonzero "no DSM server wrote this contact file within 2 s" \
    env HDF5_DRIVER=dsm HDF5_DRIVER_CONFIG="contact=$work/nobody.contact;timeout=2" \
    "$mpiexec" -n 2 "$workload" env mem.h5 1
expect nonzero "no DSM to connect to: give contact=<file>" \
    env HDF5_DRIVER=dsm "$mpiexec" -n 1 "$workload" env mem.h5 1
expect nonzero "no answer from the DSM servers within 3 s" \
    "$mpiexec" -n 1 "$stall" : -n 2 "$workload" mpmd mem.h5 1 --config timeout=3
# a file that one client rank opens alone: the open ends the job with the reason after
# the timeout, never waits for ever (the other client waits for a message never sent)
expect nonzero "every client rank of the DSM must open the file" \
    "$mpiexec" -n 1 "$server" --size 1m : -n 2 "$workload" mpmd alone.h5 1 --config timeout=3 --alone
expect nonzero "timeout must be a positive number of seconds up to 604800 (a week), got 'soon'" \
    "$mpiexec" -n 1 "$server" --size 1m : -n 1 "$workload" mpmd mem.h5 1 --config timeout=soon
for bad in inf nan -1 1e9; do # never a wait for ever, nor one that cannot end
    expect nonzero "timeout must be a positive number of seconds up to 604800 (a week), got '$bad'" \
        "$mpiexec" -n 1 "$server" --size 1m : -n 1 "$workload" mpmd mem.h5 1 --config "timeout=$bad"
done
expect nonzero "--client-timeout must be a number of seconds from 0 to 604800 (a week, H5FD_DSM_TIMEOUT_MAX), got 'inf'" \
    "$mpiexec" -n 1 "$server" --size 1m --client-timeout inf
# a DSM larger than the node's memory: refused before any window is made, nothing left in /dev/shm
mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
shm_before=$(ls /dev/shm | sort)
expect nonzero "the DSM needs" "$mpiexec" -n 1 "$server" --size "$((mem_kib * 2))k" : -n 1 "$workload" mpmd mem.h5 1
expect nonzero "bytes per server are more than any machine holds" \
    "$mpiexec" -n 1 "$server" --size 17179869183g : -n 1 "$workload" mpmd mem.h5 1
# left behind: new in /dev/shm and neither mapped nor open by any process (another MPI job
# on the machine holds its own segments while it runs)
left=""
for name in $(comm -13 <(echo "$shm_before") <(ls /dev/shm | sort)); do
    grep -qsF "/dev/shm/$name" /proc/[0-9]*/maps && continue
    ls -l /proc/[0-9]*/fd 2>/dev/null | grep -qF "/dev/shm/$name" && continue
    left="$left $name"
done
[[ -z $left ]] || { echo "FAIL: left in /dev/shm:$left"; failures=$((failures + 1)); }
# the server's dumps (and its contact file) are created anew, never through a planted link
echo precious > victim
ln -s victim d_0.h5.part
expect 0 "" "$mpiexec" -n 1 "$server" --size 1m --action "dump:d_{step}.h5" : -n 2 "$workload" mpmd mem.h5 1
[[ $(cat victim) == precious ]] || { echo "FAIL: a planted link was written through"; failures=$((failures + 1)); }
[[ -f d_0.h5 && ! -L d_0.h5 && ! -e d_0.h5.part ]] || { echo "FAIL: the dump is not a file of its own"; failures=$((failures + 1)); }
if ((failures)); then echo "faults: $failures failed"; exit 1; fi
echo "faults: ok"
