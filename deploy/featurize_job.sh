#!/usr/bin/env bash
# Usage: featurize_job.sh INPUT OUTPUT.zarr [featurize options...]
# A whole featurize job on one machine (see local_job.sh). Re-running resumes an unfinished store.
set -euo pipefail
exec "$(cd "$(dirname "$0")" && pwd)/local_job.sh" featurize "$@"
