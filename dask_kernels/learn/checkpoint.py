"""Atomic, pickle-free files of arrays + JSON (checkpoints and saved models)."""

import json
import os

import numpy as np

_META = "__meta__"


def save_npz(path, arrays, meta):
    """Write ``arrays`` and the JSON ``meta`` to ``path`` atomically (temp file, fsync, rename).

    A reader sees either the previous file or the complete new one, never a partial write.
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    payload = dict(arrays)
    payload[_META] = np.array(json.dumps(meta))
    with open(tmp, "wb") as f:
        np.savez(f, **payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_npz(path):
    """``(arrays, meta)`` from :func:`save_npz`; never unpickles (``allow_pickle=False``)."""
    with np.load(os.fspath(path), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != _META}
        if _META not in z.files:
            raise ValueError(f"{path} is not a dask_kernels file (no metadata)")
        meta = json.loads(str(z[_META]))
    return arrays, meta


def prefixed(arrays, prefix):
    return {f"{prefix}/{k}": v for k, v in arrays.items()}


def unprefixed(arrays, prefix):
    n = len(prefix) + 1
    return {k[n:]: v for k, v in arrays.items() if k.startswith(prefix + "/")}
