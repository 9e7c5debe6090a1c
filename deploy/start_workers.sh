#!/usr/bin/env bash
# Usage: start_workers.sh SCHEDULER_FILE [N_PROCESSES] [HOST]
# Single-threaded worker processes (default: one per core) under nannies, which restart a
# worker that dies; the scheduler re-runs its tasks elsewhere.
set -euo pipefail
SCHEDULER_FILE=${1:?scheduler file}
N=${2:-$(nproc)}
HOST=${3:-127.0.0.1}
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-${TMPDIR:-/tmp}/numba-cache}
for _ in $(seq 60); do [ -f "$SCHEDULER_FILE" ] && break; sleep 1; done
exec dask worker --scheduler-file "$SCHEDULER_FILE" --nworkers "$N" --nthreads 1 \
    --host "$HOST" --local-directory "${TMPDIR:-/tmp}/dask-worker-space"
