# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# separate_jobs_lib.sh: what the tests of separate jobs share (sourced):
#   jobs_workdir NAME     a private working directory (removed at exit, with the
#                         background processes listed in pids), and fail MESSAGE
#   start_ompi_server     Open MPI: the ompi-server through which two mpiexecs find
#                         each other ($work/uri), and the ucx one-sided component
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
