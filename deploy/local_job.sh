#!/usr/bin/env bash
# Usage: local_job.sh SUBCOMMAND [ARGS...]   e.g. local_job.sh run job.toml
# A whole `dask-kernels SUBCOMMAND` job on one machine: scheduler, workers, the job, shutdown.
# The job connects with --scheduler-file, which waits for the scheduler to write its address
# (no race with the scheduler's start). Re-running a featurize job resumes an unfinished store.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CMD=${1:?subcommand (featurize, run, predict, score)}
shift
RUN=$(mktemp -d)
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-${TMPDIR:-/tmp}/numba-cache}
"$HERE/start_scheduler.sh" "$RUN/scheduler.json" > "$RUN/scheduler.log" 2>&1 &
SCHED=$!
"$HERE/start_workers.sh" "$RUN/scheduler.json" "${WORKERS:-$(nproc)}" > "$RUN/workers.log" 2>&1 &
WORKERS_PID=$!
cleanup() {
    kill "$WORKERS_PID" "$SCHED" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$RUN"
}
trap cleanup EXIT
dask-kernels "$CMD" "$@" --scheduler-file "$RUN/scheduler.json" --scheduler-file-timeout "${SCHEDULER_TIMEOUT:-120}"
