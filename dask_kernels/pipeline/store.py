"""Zarr v3 feature stores: layout, creation, resume checks and the reader.

Layout of one store (a Zarr v3 group)::

    features   (n_rows, width)  stored dtype (codes or floats), chunks (block_rows, width)
    labels     (n_rows,)        when the input had labels, chunks (block_rows,)
    qid        (n_rows,)        when the input had query ids
    row_ids    (n_rows,)        when the caller gave row ids
    done       (n_blocks,)      uint8, one chunk per block: 1 once the block is fully written

    attrs["dask_kernels"] = {format, spec, rng_scheme, fingerprint, fingerprint_sha256,
                             package_version, n_rows, block_rows, n_blocks}
    attrs["complete"]     = False until every block is done (written last), then metadata is
                            consolidated.

Block i is rows ``[i * block_rows, min((i + 1) * block_rows, n_rows))``: exactly one chunk of
every array, written by exactly one task, which writes ``done[i]`` after its data. A block whose
``done`` chunk exists is finished; anything else is recomputed on resume (a task killed while
writing leaves ``done[i]`` unset, and the rewrite gives identical bytes).
"""

import warnings

import dask.array as da
import numpy as np

STORE_FORMAT = 1


def _storage_kwargs(storage_options):
    return {"storage_options": storage_options} if storage_options else {}


def open_group(path, mode, storage_options=None, consolidated=False):
    import zarr

    if str(path).startswith("file://"):  # fsspec's local files do not create parent folders by default
        storage_options = {"auto_mkdir": True, **(storage_options or {})}

    return zarr.open_group(path, mode=mode, use_consolidated=consolidated, zarr_format=3,
                           **_storage_kwargs(storage_options))


def create_store(path, *, storage_options, n_rows, block_rows, width, dtype, columns, compressors, info):
    """Create the group and every array (no data yet) and write the attributes."""
    g = open_group(path, "w", storage_options)
    n_blocks = -(-n_rows // block_rows)
    g.create_array("features", shape=(n_rows, width), chunks=(block_rows, width), dtype=dtype,
                   compressors=compressors, fill_value=0, dimension_names=("row", "feature"))
    for name, col_dtype in columns.items():
        g.create_array(name, shape=(n_rows,), chunks=(block_rows,), dtype=col_dtype, compressors=compressors,
                       fill_value=0, dimension_names=("row",))
    g.create_array("done", shape=(n_blocks,), chunks=(1,), dtype="uint8", fill_value=0, compressors=None,
                   dimension_names=("block",))
    g.attrs.update({"dask_kernels": dict(info, format=STORE_FORMAT, n_rows=int(n_rows),
                                         block_rows=int(block_rows), n_blocks=int(n_blocks)),
                    "complete": False})
    return g


def mark_complete(path, storage_options=None):
    """Write the completion marker (last), then consolidate the metadata."""
    import zarr

    g = open_group(path, "r+", storage_options)
    done = g["done"][:]
    if not np.all(done == 1):
        raise RuntimeError(f"{path}: blocks {np.flatnonzero(done != 1)[:10].tolist()} are not written")
    g.attrs["complete"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "consolidated metadata is not part of the v3 spec yet"
        zarr.consolidate_metadata(g.store, path=g.path or None)


class FeatureStore:
    """An opened feature store (see the module docstring for the layout).

    Attributes
    ----------
    path : str
    features : dask.array.Array of shape (n_rows, width), chunked exactly as stored.
    labels, qid, row_ids : dask.array.Array of shape (n_rows,) or None
    spec : dict
        Spec of the map that wrote the store; ``feature_map`` rebuilds it.
    complete : bool
        Whether every block was written and the completion marker set.
    n_rows, n_blocks, block_rows : int
    fingerprint : dict
    run_stats : dict or None
        Set by :func:`~dask_kernels.featurize`: ``{"computed": blocks written by this run,
        "skipped": blocks already done}``.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from dask_kernels import GCWS, featurize
    >>> X = np.random.default_rng(0).random((100, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "f.zarr")
    >>> _ = featurize(X, GCWS(n_components=16).fit(X), store=path, chunks=40, progress=False)
    >>> store = open_store(path)
    >>> store.complete, store.features.shape, store.features.dtype
    (True, (100, 16), dtype('uint8'))
    >>> list(store.blocks())
    [(0, 40), (40, 80), (80, 100)]
    """

    def __init__(self, path, storage_options=None):
        self.path = path
        self.storage_options = storage_options
        try:
            g = open_group(path, "r", storage_options, consolidated=None)
        except FileNotFoundError:
            raise FileNotFoundError(f"no feature store at {path}") from None
        info = g.attrs.get("dask_kernels")
        if info is None:
            raise ValueError(f"{path} is a Zarr group but not a dask_kernels feature store")
        self.group = g
        self.info = dict(info)
        self.complete = bool(g.attrs.get("complete", False))
        self.spec = self.info["spec"]
        self.fingerprint = self.info["fingerprint"]
        self.n_rows = int(self.info["n_rows"])
        self.block_rows = int(self.info["block_rows"])
        self.n_blocks = int(self.info["n_blocks"])
        self.package_version = self.info.get("package_version")
        self.run_stats = None
        tag = self.info["fingerprint_sha256"][:16]
        if not self.complete:  # contents still change: never let dask reuse a cached result
            import uuid

            tag += "-" + uuid.uuid4().hex[:8]
        self.features = self._array("features", tag)
        self.labels = self._array("labels", tag)
        self.qid = self._array("qid", tag)
        self.row_ids = self._array("row_ids", tag)

    def _array(self, name, tag):
        if name not in self.group.array_keys():
            return None
        arr = self.group[name]
        meta = np.empty((0,) * arr.ndim, dtype=arr.dtype)
        return da.from_array(arr, chunks=arr.chunks, name=f"dk-store-{name}-{tag}", meta=meta)

    @property
    def feature_map(self):
        """The feature map that wrote the store, rebuilt from its spec."""
        from ..maps import from_spec
        from ..sidecar import store_arrays

        return from_spec(self.spec, arrays=store_arrays(self.group))  # nystroem: fitted arrays

    @property
    def done(self):
        """Boolean mask of finished blocks."""
        return np.asarray(self.group["done"][:]) == 1

    def blocks(self):
        """Iterate over ``(start, stop)`` row bounds of the stored blocks, in order."""
        for i in range(self.n_blocks):
            yield i * self.block_rows, min((i + 1) * self.block_rows, self.n_rows)

    def __repr__(self):
        return (f"FeatureStore({self.path!r}, method={self.spec['method']!r}, n_rows={self.n_rows}, "
                f"width={self.features.shape[1]}, dtype={self.features.dtype}, n_blocks={self.n_blocks}, "
                f"complete={self.complete})")


def open_store(path, *, storage_options=None):
    """Open a feature store written by :func:`~dask_kernels.featurize`.

    Parameters
    ----------
    path : str
        Local path or fsspec URL of the store.
    storage_options : dict, optional

    Returns
    -------
    FeatureStore
        Opening an unfinished store works; its ``complete`` is False.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from dask_kernels import GCWS, featurize
    >>> X = np.random.default_rng(0).random((50, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "f.zarr")
    >>> _ = featurize(X[:40], GCWS(n_components=16).fit(X), store=path, progress=False)
    >>> store = open_store(path)
    >>> new = store.feature_map.transform(X[40:])        # new rows, featurized consistently
    >>> new.shape
    (10, 16)
    """
    return FeatureStore(path, storage_options)
