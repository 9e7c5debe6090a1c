#!/usr/bin/env bash
# Usage: featurize_job.sh INPUT OUTPUT.zarr [featurize options...]
# A whole job on one machine: scheduler, workers, `dask-kernels featurize`, then shutdown.
# Re-running the same command resumes an unfinished store.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=$(mktemp -d)
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-${TMPDIR:-/tmp}/numba-cache}
"$HERE/start_scheduler.sh" "$RUN/scheduler.json" > "$RUN/scheduler.log" 2>&1 &
SCHED=$!
"$HERE/start_workers.sh" "$RUN/scheduler.json" "${WORKERS:-$(nproc)}" > "$RUN/workers.log" 2>&1 &
WORKERS_PID=$!
trap 'kill $WORKERS_PID $SCHED 2>/dev/null; wait 2>/dev/null; rm -rf "$RUN"' EXIT
for _ in $(seq 60); do [ -f "$RUN/scheduler.json" ] && break; sleep 1; done
ADDRESS=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['address'])" "$RUN/scheduler.json")
dask-kernels featurize "$@" --scheduler "$ADDRESS"
