#!/usr/bin/env bash
# Usage: start_scheduler.sh SCHEDULER_FILE [HOST]
# Starts `dask scheduler`; it writes its address into SCHEDULER_FILE for workers and clients.
set -euo pipefail
SCHEDULER_FILE=${1:?scheduler file}
HOST=${2:-127.0.0.1}   # use the node's cluster-network address when workers run on other nodes
exec dask scheduler --host "$HOST" --port 0 --scheduler-file "$SCHEDULER_FILE"
