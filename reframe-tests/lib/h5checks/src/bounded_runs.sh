#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# bounded_runs.sh LABEL BOUND PLAN
#
# Runs the programs of a suite one after the other, each bounded to BOUND seconds. PLAN
# has a line per run, its fields separated by tabs:
#
#   NAME  STATUSES  EXE  COMMAND
#
# COMMAND (a shell command line: the launcher, the program EXE and its arguments) runs in
# a session of its own, its output in NAME.out (a '/' of NAME made '_'); STATUSES are the
# exit statuses that pass (e.g. "0", "1"). Prints one verdict line per run:
#
#   LABEL: NAME: pass
#   LABEL: NAME: fail (exit N)       then the last lines of its output
#   LABEL: NAME: hang (BOUND s)      then the stack of each process of EXE in the run's
#                                    session, or else on this node (gdb, where installed);
#                                    then the run is ended
#
# A run passes when its status is one of STATUSES and its output holds none of FAILURES
# (an HDF5 error stack, "FAILED", "REAL ERROR": a program may exit as it must after a
# failed test, as t_pflush1 does with 1; a preload library the loader ignored). A
# TERM, INT or HUP (ReFrame ending the job) ends the running program's session first.
set -u
[[ $# == 3 ]] || { echo "usage: bounded_runs.sh LABEL BOUND PLAN" >&2; exit 2; }
label=$1 bound=$2 plan=$3
FAILURES='HDF5-DIAG|FAILED|REAL ERROR|cannot be preloaded'
running=

all_pids() { # every process on this node (/proc: no procps needed)
    local dir
    for dir in /proc/[0-9]*; do echo "${dir#/proc/}"; done
}

session_pids() { # the processes of session $1 (the 6th field of /proc/PID/stat)
    local pid stat sid
    for pid in $(all_pids); do
        { stat=$(< "/proc/$pid/stat"); } 2> /dev/null || continue
        read -r _ _ _ sid _ <<< "${stat##*) }" # after the command's name: state ppid pgrp session
        [[ $sid == "$1" ]] && echo "$pid"
    done
}

end_session() { # the processes of session $1: TERM, then KILL
    local pids
    pids=$(session_pids "$1")
    [[ -n $pids ]] || return 0
    # shellcheck disable=SC2086 # word splitting of pid lists is meant
    kill -TERM $pids 2> /dev/null
    sleep 2
    pids=$(session_pids "$1")
    # shellcheck disable=SC2086
    [[ -z $pids ]] || kill -KILL $pids 2> /dev/null
}
trap '[[ -n $running ]] && end_session "$running"; exit 143' TERM INT HUP

running_exe() { # running_exe EXE PID...: those of the PIDs that run EXE (resolved)
    local exe=$1 pid
    shift
    for pid in "$@"; do
        [[ $(readlink "/proc/$pid/exe" 2> /dev/null) == "$exe" ]] && echo "$pid"
    done
}

processes_of() { # the pids running $2 (resolved) in session $1, else anywhere on this node
    local found
    # shellcheck disable=SC2046 # word splitting of pid lists is meant
    found=$(running_exe "$2" $(session_pids "$1"))
    # a launcher may start the ranks in sessions of their own (srun's, MPICH's proxies)
    [[ -n $found ]] || found=$(running_exe "$2" $(all_pids))
    echo "$found"
}

stacks() { # stacks SESSION EXE: the stacks of the program's processes
    local pid out
    command -v gdb > /dev/null || { echo "  (no gdb here: no stacks)"; return; }
    local pids
    pids=$(processes_of "$1" "$(readlink -f "$2")")
    [[ -n $pids ]] || echo "  (no process of $2 found on this node)"
    for pid in $pids; do
        echo "  --- process $pid"
        out=$(timeout 60 gdb -batch -p "$pid" -ex "thread apply all -ascending bt" < /dev/null 2>&1)
        grep -E '^(#|Thread)' <<< "$out" | head -60 | sed 's/^/  /'
        grep -qE '^#' <<< "$out" || echo "  (gdb took no stack: $(tail -1 <<< "$out"))"
    done
}

run() { # run NAME STATUSES EXE COMMAND: the verdict line
    local name=$1 statuses=$2 exe=$3 command=$4 out=${1//\//_}.out
    setsid bash -c "$command" < /dev/null > "$out" 2>&1 &
    local pid=$! waited=0
    running=$pid
    while kill -0 "$pid" 2> /dev/null && ((waited < bound * 10)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2> /dev/null; then
        echo "$label: $name: hang ($bound s)"
        stacks "$pid" "$exe"
        end_session "$pid"
        wait "$pid" 2> /dev/null
        running=
        return
    fi
    wait "$pid"
    local status=$?
    running=
    if [[ " $statuses " == *" $status "* ]] && ! grep -qE "$FAILURES" "$out"; then
        echo "$label: $name: pass"
    else
        echo "$label: $name: fail (exit $status)"
        tail -20 "$out" | sed 's/^/  /'
    fi
}

while IFS=$'\t' read -r name statuses exe command; do
    [[ -n $name ]] && run "$name" "$statuses" "$exe" "$command"
done < "$plan"
