"""A command's own process gives large freed blocks back to the system at once (glibc's malloc).

glibc maps an allocation larger than its *mmap threshold* on its own, and unmaps it when it is
freed; smaller ones come from its heaps, which keep what is freed inside them. The threshold
starts at 128 KiB and rises to the size of every larger block freed, up to 32 MiB: once the
first training step (a block's features, 30 MB) had come and gone, every later one came from
the heaps, and what they freed stayed in the process (``dask-kernels train`` at 1.6 x 10^7
rows on 2 workers: 668 MiB peak RSS, 552 MiB with the threshold fixed at 1 MiB). Fixing the
threshold is what the environment variable ``MALLOC_MMAP_THRESHOLD_`` does at start-up; a user's
own setting of it is left alone.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

logger = logging.getLogger(__name__)

#: ``mallopt``'s parameter number of the mmap threshold (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
#: Blocks of at least this many bytes are mapped on their own and unmapped when freed.
MMAP_THRESHOLD = 2**20


def release_large_blocks() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` in this process; True if it was set
    (False: not Linux, no ``mallopt``, or ``MALLOC_MMAP_THRESHOLD_`` set by the user)."""
    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):
        return False
    done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    logger.debug("malloc mmap threshold fixed at %d bytes: %s", MMAP_THRESHOLD, done)
    return done
