"""Fingerprints of a featurization job: what the store was computed from.

A store records the fingerprint of its job; resuming compares it with the new job's and refuses
on any difference, naming what differs. The fingerprint holds:

* ``spec``: the full spec of the feature map (compared key by key, so a message can say
  ``params.n_components: 64 (stored) != 128 (now)``);
* ``input``: shape, dtype and a token of the input (file paths made absolute first). Our readers name their output after a cheap
  identity of the source: file path + size + modification time for ``.npy`` and svmlight files
  (like make/rsync: reading a 100 GB file to hash it would cost as much as featurizing it), the
  first and last chunk of a Zarr array, and a full content hash for in-memory NumPy/SciPy data
  (cheap relative to featurizing it). Any other dask array is identified by its dask name,
  which dask derives deterministically from how it was built;
* ``block_rows``: rows per stored block, which fixes the block boundaries;
* which columns (labels, query ids, row ids) the store holds.

Row partitioning of the input is not part of it: features do not depend on it.

The *job key* is the hash of the fingerprint without the input's content identity (name, hash,
size, modification time, ...): the same map, block size, columns and input shape, kind, dtype
and path. Each block's done record carries the key and a hash of the block's input rows, so a
re-run on changed input (a fixed row) keeps the store and recomputes only the blocks whose input
rows changed.
"""

import os

from .._hashing import fingerprint_hash  # noqa: F401  (re-exported: the stores use it from here)


def normalize_path(path):
    """A local path made absolute (``file://`` URLs too), so the same file named relatively or
    absolutely is the same job; other URLs as they are."""
    s = str(path)
    if s.startswith("file://"):
        return os.path.abspath(s[len("file://"):])
    return s if "://" in s else os.path.abspath(s)


def input_fingerprint(kind, source):
    """JSON-able identity of the input (a dask array or :class:`~dask_kernels.io.SparsePartitions`)."""
    if kind == "sparse":
        fp = dict(source.fingerprint, shape=[int(v) for v in source.shape])
        if isinstance(fp.get("path"), str):
            fp["path"] = normalize_path(fp["path"])
        return fp
    return {"kind": "dask-array", "name": source.name, "shape": [int(v) for v in source.shape],
            "dtype": source.dtype.str}


def job_fingerprint(spec, input_fp, block_rows, columns, classes=None, feature_names=None):
    fp = {"spec": spec, "input": input_fp, "block_rows": int(block_rows), "columns": sorted(columns)}
    if classes is not None:  # labels stored as codes into these class names (store format 5)
        fp["classes"] = [str(c) for c in classes]
    if feature_names is not None:  # the input's column names (absent: as before they were kept)
        fp["feature_names"] = [str(c) for c in feature_names]
    return fp


def check_feature_names(names, n_features, where):
    """``names`` as a list: one distinct string per input column (None stays None; an unknown
    ``n_features``, None, is not compared). For featurize's argument, a store's fingerprint and
    a saved model's ``feature_names``."""
    if names is None:
        return None
    listed = None if isinstance(names, (str, bytes, dict)) or not hasattr(names, "__iter__") else list(names)
    if listed is None or not all(isinstance(n, str) for n in listed):
        raise ValueError(f"{where}: feature names must be a list of strings")
    names = listed
    if n_features is not None and len(names) != n_features:
        raise ValueError(f"{where}: {len(names)} feature names for {n_features} input columns")
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: a feature name is given twice")
    return names


#: input fingerprint keys that describe what the input is, not its current content
STABLE_INPUT_KEYS = ("kind", "shape", "dtype", "path", "n_features", "zero_based")


def stable_part(fp):
    """The fingerprint without the input's content identity (see the module docstring)."""
    inp = fp.get("input", {}) if isinstance(fp, dict) else {}
    inp = {k: v for k, v in inp.items() if k in STABLE_INPUT_KEYS} if isinstance(inp, dict) else inp
    return dict(fp, input=inp) if isinstance(fp, dict) else fp


def job_key(fp):
    """64-bit integer key of :func:`stable_part` (recorded in every done record)."""
    return int(fingerprint_hash(stable_part(fp))[:16], 16)


def differences(stored, new, prefix=""):
    """Human-readable list of the keys whose values differ between two fingerprints."""
    out = []
    if isinstance(stored, dict) and isinstance(new, dict):
        for key in sorted(set(stored) | set(new)):
            name = f"{prefix}.{key}" if prefix else str(key)
            if key not in stored:
                out.append(f"{name}: absent (stored) != {new[key]!r} (now)")
            elif key not in new:
                out.append(f"{name}: {stored[key]!r} (stored) != absent (now)")
            else:
                out.extend(differences(stored[key], new[key], name))
    elif stored != new:
        s, n = repr(stored), repr(new)
        if len(s) > 80 or len(n) > 80:
            s, n = s[:40] + "...", n[:40] + "..."
        out.append(f"{prefix}: {s} (stored) != {n} (now)")
    return out
