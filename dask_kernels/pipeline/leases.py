"""Leases: the random id that names a store's owner, checked before every write.

A job whose store was replaced by another job (``overwrite=True``) finds another lease there
and stops instead of writing into the new store.
"""

from __future__ import annotations

import json
import time

from .location import filesystem


class LeaseLostError(RuntimeError):
    """The store this job was writing was replaced by another job."""


def lease_key(lease):
    return int(str(lease)[:16], 16)


def read_lease(path, storage_options=None):
    """The lease in the store's zarr.json now, or None if there is no store of ours there."""
    fs, p = filesystem(path, storage_options)
    for attempt in range(5):
        try:
            meta = json.loads(fs.cat_file(p.rstrip("/") + "/zarr.json"))
            return meta["attributes"]["dask_kernels"].get("lease")
        except FileNotFoundError:
            pass  # another job is swapping its store in: look again
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        time.sleep(0.02 * (attempt + 1))
    return None


def check_lease(path, storage_options, lease, doing):
    """Raise :class:`LeaseLostError` unless the store at ``path`` still holds ``lease``."""
    now = read_lease(path, storage_options)
    if now != lease:
        raise LeaseLostError(
            f"{path}: this job's feature store was replaced by another job (overwrite=True?) while this "
            f"job was {doing}; stopping without writing into the other job's store (lease now "
            f"{now or 'none'}, this job's {lease}). Re-run the job if its store is still wanted.")
