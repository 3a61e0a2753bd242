# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# separate_jobs_lib.sh: what the tests of separate jobs share (sourced):
#   jobs_workdir NAME     a private working directory (removed at exit, with the
#                         background processes listed in pids), and fail MESSAGE
#   join_jobs             how two mpiexecs of this MPI find each other: JOIN, the
#                         arguments of both (Open MPI 4: through an ompi-server started
#                         here, and the ucx one-sided component; MPICH and Intel MPI:
#                         the port name alone); Open MPI 5 has no ompi-server, and
#                         separate mpiexecs share no PMIx server: exit 77 with the reason
#   start_server ARGS     the server job (JOIN, ARGS, --contact dsm.contact) in the
#                         background, $spid, limited to $server_limit seconds (240); waits
#                         for the contact file: 0 once it is there, 2 when the server
#                         stopped without one (server.txt)
jobs_workdir() {
    test_name=$1
    work=$(mktemp -d "${TMPDIR:-/tmp}/dsm-$test_name.XXXXXX")
    pids=()
    trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
    cd "$work" || exit 1
}
fail() { echo "$test_name: FAIL: $*"; for f in *.txt; do echo "== $f"; cat "$f"; done; exit 1; }
start_ompi_server() {
    export OMPI_MCA_osc=${OMPI_MCA_osc:-ucx}
    ompi-server --no-daemonize --report-uri "$work/uri" > ompi-server.txt 2>&1 &
    pids+=($!)
    for ((i = 0; i < 100; i++)); do [[ -s uri ]] && break; sleep 0.1; done
    [[ -s uri ]] || fail "ompi-server wrote no URI"
}
join_jobs() {
    JOIN=()
    local version
    version=$("$mpiexec" --version 2>&1)
    grep -q "Open MPI\|OpenRTE" <<<"$version" || return 0
    if grep -q "(Open MPI) [5-9]\|(Open MPI) [1-9][0-9]" <<<"$version"; then
        echo "$test_name: skipped: Open MPI 5 has no ompi-server, and separate mpiexecs share no PMIx server"
        echo "to connect through ($(head -1 <<<"$version"))"
        exit 77
    fi
    start_ompi_server
    JOIN=(--ompi-server "file:$work/uri")
}
start_server() {
    timeout "${server_limit:-240}" "$mpiexec" "${JOIN[@]}" "$@" --contact dsm.contact > server.txt 2>&1 &
    spid=$!
    pids+=($spid)
    for ((i = 0; i < 1200; i++)); do
        [[ -e dsm.contact ]] && return 0
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    [[ -e dsm.contact ]] && return 0
    kill -0 "$spid" 2>/dev/null && fail "the server wrote no contact file in 120 s"
    return 2
}
