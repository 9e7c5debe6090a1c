"""Planning a featurize run against what is at its store's path: create the store, resume this
job's (its finished blocks kept), replace another job's when asked, or find the part of an
appended-to store that already holds the input's rows."""

from __future__ import annotations

import uuid

import numpy as np

from .creation import create_store
from .fingerprint import differences, fingerprint_hash, stable_part
from .layout import STORE_FORMAT, open_checked
from .location import StoreError, inspect_path, open_group, refuse_foreign
from .records import FIELD, read_records, record_ok
from .segments import segment_path


def appended_part(store, storage_options, root, fp, row_digests):
    """The part of an appended-to store (``""``: its first rows, else a segment's name) that holds
    the rows of ``fp``'s input under another identity: the same stable fingerprint (map, shape,
    block size, columns...) and the same recorded digest of every block's input rows
    (``row_digests()``, computed only if such a part exists). None if no part does."""
    parts = [("", root)]
    for entry in root.get("segments", []):
        name = entry["name"] if isinstance(entry, dict) else entry
        parts.append((name, open_checked(segment_path(store, name), storage_options, consolidated=False)[1]))
    digests = None
    for name, info in parts:
        if differences(stable_part(info["fingerprint"]), stable_part(fp)):
            continue
        records = read_records(open_group(store if not name else segment_path(store, name), "r", storage_options))
        if digests is None:
            digests = row_digests()
        if records.shape[0] == digests.shape[0] and np.array_equal(records[:, FIELD["input"]], digests):
            return name
    return None


def _overwrite_resumes(group, info, create):
    """Whether ``overwrite`` resumes this job's store (``group``, attributes ``info``) instead of
    replacing it: it holds no appended rows (segments) and has the codecs and shards that
    ``create`` would give it."""
    auto = isinstance(create["compressors"], str) and create["compressors"] == "auto"
    return (auto and "segments" not in group.group_keys()
            and int(info.get("shard_blocks", 1)) == int(create["shard_blocks"]))


def plan_run(path, storage_options, overwrite, fp, checks, **create):
    """Create the store, or check an existing one of the same job. Returns a plan: ``lease``,
    ``done`` mask, ``records``, ``info`` (stored attributes), ``resumed``, ``input_changed``."""
    n_blocks = -(-create["n_rows"] // create["block_rows"])
    kind, detail = inspect_path(path, storage_options)
    if kind == "foreign":
        refuse_foreign(path, detail)
    attrs = detail["attributes"]["dask_kernels"] if kind == "ours" else {}
    if kind == "ours" and attrs.get("format") == 1 and not overwrite:
        raise StoreError(
            f"{path} is a format 1 feature store (dask_kernels {attrs.get('package_version', '?')}); this "
            f"version resumes only format {STORE_FORMAT} stores (format 1 still opens for reading). "
            "Pass overwrite=True to replace it, or write to another store.")
    # else its creation was killed half-way (no "done"): nothing in it, replace it
    if kind == "ours" and attrs.get("format") != 1 and "done" in open_group(path, "r", storage_options).array_keys():
        try:
            g, info = open_checked(path, storage_options, consolidated=False)
        except ValueError:
            if not overwrite:
                raise
            info = None  # damaged: overwrite replaces it
        diff = None if info is None else differences(stable_part(info["fingerprint"]), stable_part(fp))
        if diff and not overwrite:
            raise ValueError(f"{path} holds features of a different job, refusing to resume it; "
                             f"what differs: {'; '.join(diff)}. Pass overwrite=True to replace it, or "
                             "write to another store.")
        # overwrite replaces another job's store; this job's is resumed as without it (a re-run of a
        # job after a crash keeps its finished blocks)
        if info is not None and not diff and (not overwrite or _overwrite_resumes(g, info, create)):
            records = read_records(g)
            done = record_ok(records, info, np.arange(n_blocks), check=checks)
            return {"lease": info["lease"], "done": done, "records": records, "info": info, "resumed": True,
                    "input_changed": info["fingerprint_sha256"] != fingerprint_hash(fp)}
    lease = uuid.uuid4().hex
    info = dict(create.pop("info"), lease=lease)
    create_store(path, storage_options=storage_options, replace=kind == "ours", info=info, checksums=checks,
                 **create)
    return {"lease": lease, "done": np.zeros(n_blocks, dtype=bool), "records": None, "info": None, "resumed": False,
            "input_changed": False}
