"""Partitioned sparse input: row partitions that each load themselves inside a task.

A :class:`SparsePartitions` knows, before any data is read, how many rows each partition holds
(so global row numbers and store blocks are fixed up front), the input dimension, whether rows
carry labels and query ids, and a fingerprint of the input. Its ``loader`` is a small picklable
callable ``loader(i) -> (X_csr, y or None, qid or None)`` that runs on a worker.
"""


from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from .._hashing import content_hash
from ._identity import FileIdentity

if TYPE_CHECKING:  # names used only in annotations
    from dask.delayed import Delayed


class SparsePartitions:
    """Row partitions of a sparse matrix with labels and global row numbers.

    Parameters
    ----------
    loader : callable
        ``loader(i)`` returns partition i as ``(X, y, qid)``: a CSR matrix of shape
        (row_counts[i], n_features), labels (float64) or None, query ids (int64) or None.
    row_counts : sequence of int
        Rows in each partition.
    n_features : int
    has_labels, has_qid : bool
    fingerprint : dict
        JSON-able description of the input (used to refuse resuming a store on other input).
    name : str
        Prefix of the task keys; derived from the fingerprint, so it is deterministic.
    """

    def __init__(self, loader: Callable, row_counts: tuple[int, ...], n_features: int, *, has_labels: bool,
                 has_qid: bool, fingerprint: str, name: str) -> None:
        self.loader = loader
        self.row_counts = tuple(int(c) for c in row_counts)
        self.n_features = int(n_features)
        self.has_labels = bool(has_labels)
        self.has_qid = bool(has_qid)
        self.fingerprint = fingerprint
        self.name = name
        self.identity = _identity_of(fingerprint, loader)

    @property
    def n_partitions(self):
        return len(self.row_counts)

    @property
    def n_rows(self):
        return sum(self.row_counts)

    @property
    def shape(self):
        return (self.n_rows, self.n_features)

    @property
    def chunks(self):
        return (self.row_counts, (self.n_features,))

    @property
    def row_offsets(self):
        """Global row number of the first row of each partition."""
        return tuple(int(v) for v in np.concatenate([[0], np.cumsum(self.row_counts)[:-1]]))

    def to_delayed(self) -> list[Delayed]:
        """One :class:`dask.delayed.Delayed` per partition, computing ``(X, y, qid)``.

        The loader is one key of the graph; each partition task refers to it.
        """
        loader = dask.delayed(self.loader, name=f"{self.name}-loader", pure=True)
        return [
            dask.delayed(_load)(loader, i, self.identity, dask_key_name=f"{self.name}-part-{i}")
            for i in range(self.n_partitions)
        ]

    def _column(self, which, dtype):
        parts = self.to_delayed()
        cols = [
            da.from_delayed(dask.delayed(_field)(p, which), shape=(n,), dtype=dtype, meta=np.empty(0, dtype))
            for p, n in zip(parts, self.row_counts)
        ]
        return da.concatenate(cols) if cols else da.empty((0,), dtype=dtype)

    @property
    def labels(self):
        """Labels as a dask array (float64) chunked like the partitions, or None."""
        return self._column(1, np.float64) if self.has_labels else None

    @property
    def qid(self):
        """Query ids as a dask array (int64), or None."""
        return self._column(2, np.int64) if self.has_qid else None

    def compute(self) -> tuple[sp.csr_matrix, np.ndarray | None, np.ndarray | None]:
        """All partitions as one in-memory ``(X_csr, y, qid)``: for small data and tests."""
        parts = dask.compute(*self.to_delayed())
        X = sp.vstack([p[0] for p in parts], format="csr") if parts else sp.csr_matrix((0, self.n_features))
        y = np.concatenate([p[1] for p in parts]) if self.has_labels else None
        q = np.concatenate([p[2] for p in parts]) if self.has_qid else None
        return X, y, q

    def __repr__(self):
        return (f"SparsePartitions({self.name!r}, n_rows={self.n_rows}, n_features={self.n_features}, "
                f"n_partitions={self.n_partitions}, labels={self.has_labels}, qid={self.has_qid})")


def _identity_of(fp, loader):
    """A file's identity when the fingerprint names one (path, size, mtime: svmlight), else None."""
    if isinstance(fp, dict) and {"path", "size", "mtime"} <= set(fp):
        return FileIdentity(fp["path"], getattr(loader, "storage_options", None), fp["size"], fp["mtime"])
    return None


def _load(loader, i, identity=None):
    part = loader(i)
    if identity is not None:
        identity.check()  # after the read: these rows came from the file the job started on
    return part


def _field(part, which):
    return part[which]


class _InMemory:
    def __init__(self, parts):
        self.parts = parts

    def __call__(self, i):
        return self.parts[i]


def from_sparse(X, y=None, *, block_rows=None):
    """In-memory SciPy sparse rows (and optional labels) as :class:`SparsePartitions`.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> src = from_sparse(sp.random(10, 4, density=0.5, format="csr", random_state=0), block_rows=4)
    >>> src.row_counts, src.row_offsets
    ((4, 4, 2), (0, 4, 8))
    """
    from ..blocks import row_bounds, validate_block

    # checked whole, before slicing: slicing a malformed matrix silently drops entries
    X = validate_block(sp.csr_matrix(X) if sp.issparse(X) else X)
    if not sp.issparse(X):
        X = sp.csr_matrix(X)
    n, d = X.shape
    rows = block_rows or max(1, min(n, 65536))
    if y is not None:
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != n:
            raise ValueError(f"{n} rows but {y.shape[0]} labels")
    digest = content_hash(*(np.ascontiguousarray(a).data for a in (X.data, X.indices, X.indptr)),
                          *(() if y is None else (y.data,)))
    parts = [(X[a:b], None if y is None else y[a:b], None) for a, b in (row_bounds(n, rows) or [(0, 0)])]
    fp = {"kind": "scipy-sparse", "shape": [n, d], "dtype": X.dtype.str, "nnz": int(X.nnz), "hash": digest}
    return SparsePartitions(
        _InMemory(parts), [p[0].shape[0] for p in parts], d, has_labels=y is not None, has_qid=False,
        fingerprint=fp, name="csr-" + digest,
    )
