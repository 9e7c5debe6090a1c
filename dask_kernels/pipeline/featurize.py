"""Featurize row-partitioned input on Dask, lazily or into a resumable Zarr store.

:func:`featurize` prepares the job on the client: the source of rows, the fitted map, its spec
and kernel plan, and the store (created, or checked and resumed); its tasks, which carry only
the spec's text and the plan, run :mod:`dask_kernels.pipeline.tasks` on the workers. This
module imports neither scikit-learn nor the map classes at module level.
"""

from __future__ import annotations

import uuid
import warnings
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from .._progress import local_progress, wait_futures
from ..blocks import InputValueError, row_bounds, validate_block
from .._config import switch
from .._graph import active_client, shared_key
from ..io.dense import MappedFile, file_identity, from_array, mapped, read_mapped, refuse_no_columns
from ..io.sparse import SparsePartitions, from_sparse
from ..sidecar import graph_arrays, map_arrays, write_group
from ..io._layers import name_input_error, read_together, row_label_pairs
from ..io.tabular import as_rows, column_names
from ..labels import Encoded, encode, is_class_names
from ._digest import digest
from .layout import MAX_SHARD_BLOCKS
from .leases import check_lease
from .plan import appended_part, plan_run
from .location import open_group, refuse_link, refuse_nesting
from .records import FIELD, mark_complete, set_incomplete
from .segments import add_segment, segment_path
from .store import BlockReader, open_store
from .append import append_target
from .fingerprint import check_feature_names, fingerprint_hash, input_fingerprint, job_fingerprint, job_key
from .tasks import (_assemble, _input_digest, featurize_dense_chunk, transform_chunk, transform_part, verify_block,
                    write_blocks, write_dense_chunk, write_shard)

if TYPE_CHECKING:  # names used only in annotations
    from ..maps.base import FeatureMap
    from ..pipeline.store import FeatureStore


# -- input normalization -------------------------------------------------------------------------
def _as_source(X, block_rows, lazy=False):
    """("dense", dask array chunked along rows only) or ("sparse", SparsePartitions); ``lazy``:
    dense row chunks of unknown sizes are taken (a lazy result needs no row offsets)."""
    if isinstance(X, SparsePartitions):
        refuse_no_columns(X.shape, "X")
        return "sparse", X
    if sp.issparse(X):  # checked whole: slicing a malformed matrix silently drops entries
        refuse_no_columns(X.shape, "X")
        return "sparse", from_sparse(validate_block(X), block_rows=block_rows)
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"expected 2-d rows, got shape {X.shape}")
        refuse_no_columns(X.shape, "X")
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        if not lazy and (np.isnan(X.shape[0]) or any(np.isnan(c) for c in X.chunks[0])):
            raise ValueError("row chunk sizes are unknown; call X.compute_chunk_sizes() first")
        return "dense", X
    return "dense", from_array(X, block_rows=block_rows)  # a mapped file stays a file: read per block


def _first_block(kind, src):
    """The first block of rows that has any (a leading partition may have none, e.g. an svmlight
    byte range holding only comments)."""
    if kind == "sparse":
        for i, n in enumerate(src.row_counts):
            if n:
                return src.loader(i)[0]
        return src.loader(0)[0] if src.n_partitions else None
    for i, n in enumerate(src.chunks[0]):
        if n:
            return src.blocks[i].compute()
    return src.blocks[0].compute() if src.numblocks[0] else None


def _fitted(feature_map, kind, src):
    from ..maps.base import ensure_fitted  # here: a worker importing this package need not load the map classes

    fmap = ensure_fitted(feature_map, lambda: _first_block(kind, src), src)
    d = src.shape[1]
    if fmap.n_features_in_ != d:
        raise ValueError(f"input has {d} features, the map was fitted on {fmap.n_features_in_}")
    return fmap


def _as_column(values, name, n_rows, held, dtype=None):
    """Labels or row ids, checked: a dask array or a :class:`~dask_kernels.io.dense.MappedFile`
    (a file NumPy maps: read per block by the tasks). An in-memory array becomes one shared key
    (scattered once on an active Client), sliced per block; the key is appended to ``held``,
    which the caller keeps until the tasks ran (a scattered future lives as long as its key)."""
    if values is None:
        return None
    if not isinstance(values, (da.Array, MappedFile)):
        values = mapped(values) or np.asarray(values, dtype=dtype)
    if values.ndim != 1 or values.shape[0] != n_rows:
        raise ValueError(f"{name} has shape {values.shape}, expected ({n_rows},)")
    if isinstance(values, np.ndarray):
        held.append(shared_key(values, f"dk-{name}-{dask.base.tokenize(values)}"))
        values = da.from_delayed(held[-1], values.shape, dtype=values.dtype, meta=np.empty((0,), values.dtype))
    return values


def _column_array(values, name, chunks):
    """A column of :func:`_as_column` as a dask array in row chunks ``chunks``: a mapped file
    read (a slice) by each task (row ids as int64, as an in-memory array's), or rechunked."""
    if isinstance(values, MappedFile):
        values = read_mapped(values, (chunks,))
        if name == "row_ids":
            values = values.astype(np.int64)
    return values.rechunk((chunks,))


# -- running -------------------------------------------------------------------------------------
def run_tasks(tasks, progress=True):
    """Compute delayed tasks on the active scheduler with a progress bar; returns their results.

    A distributed Client, if one is active, computes them; otherwise dask's default (threaded)
    scheduler. Progress is shown as :mod:`dask_kernels._progress` decides.
    """
    if not tasks:
        return []
    client = active_client()
    if client is not None:
        futures = client.compute(tasks)
        try:
            if progress:
                wait_futures(futures, label="featurize")  # displayed in Jupyter, plain lines in logs
            return client.gather(futures)
        except BaseException:
            client.cancel(futures)
            raise
    if progress:
        with local_progress(label="featurize"):
            return list(dask.compute(*tasks))
    return list(dask.compute(*tasks))


#: "auto" shards stores of more blocks than this (fewer objects for object stores and file systems)
AUTO_SHARD_MIN_BLOCKS = 1024
#: ... with up to this many blocks per shard, and shards of at most about this many bytes
AUTO_SHARD_BLOCKS, AUTO_SHARD_BYTES = 64, 256 * 2**20


def shard_blocks(shards, n_blocks, block_bytes):
    """Blocks per shard for the ``shards`` argument of :func:`featurize` (1: no sharding)."""
    if shards is None or shards is False:
        return 1
    if isinstance(shards, str):
        if shards != "auto":
            raise ValueError(f"shards must be 'auto', None or an int >= 1, got {shards!r}")
        if n_blocks <= AUTO_SHARD_MIN_BLOCKS:
            return 1
        return int(max(1, min(AUTO_SHARD_BLOCKS, AUTO_SHARD_BYTES // max(1, block_bytes))))
    if isinstance(shards, bool) or not isinstance(shards, (int, np.integer)) or not \
            1 <= shards <= MAX_SHARD_BLOCKS:
        raise ValueError(f"shards must be 'auto', None or an int in [1, {MAX_SHARD_BLOCKS}], got {shards!r}")
    return int(shards)


_UNSET = object()


def featurize(X: Any, feature_map: FeatureMap, *, labels: Any = None, row_ids: Any = None, store: str | None = None,
              block_rows: int | None = None, compressors: Any = "auto", overwrite: bool = False, progress: bool = True,
              storage_options: dict | None = None, shards: int | str | None = "auto", mode: str = "write",
              feature_names: Any = None, chunks: int | None = _UNSET) -> da.Array | FeatureStore:
    """Featurize rows on Dask: a lazy dask array, or a resumable Zarr feature store.

    Parameters
    ----------
    X : dask array, dask DataFrame, ndarray, SciPy sparse matrix or :class:`~dask_kernels.io.SparsePartitions`
        Rows to featurize. Dask arrays are used as chunked (along rows; column chunks are
        merged); a dask DataFrame's numeric columns are used partition by partition (into a
        store, their lengths computed once; :func:`~dask_kernels.read_parquet` knows them from
        the metadata; without a store nothing is read and the row chunks are of unknown size);
        NumPy/SciPy input is split into blocks of ``block_rows`` rows. A file NumPy maps
        (``np.load(path, mmap_mode="r")``) is read block by block by the tasks at its path, which
        every worker must be able to read, like :func:`~dask_kernels.read_npy`'s; on a
        distributed Client NumPy rows in memory are scattered block by block, each block to one
        worker (a worker lost meanwhile loses its blocks: the job stops, and running it again
        resumes it); SciPy rows in memory travel in the graph.
    feature_map : FeatureMap
        A fitted map. An unfitted one is fitted, as a clone, on the first block that has rows
        (enough for maps that learn just the input dimension, like GCWS without centering);
        fit maps that learn from data (centering, Nystroem) yourself.
    labels : array-like, dask array or dask Series of shape (n_rows,), optional
        Stored next to the features: numbers, or class names (strings; stored as codes, read
        back as names, see :mod:`dask_kernels.labels`). Sparse sources with labels (svmlight)
        supply their own. A file NumPy maps (``np.load(path, mmap_mode="r")``) is read block by
        block by the tasks; an in-memory array is one key of the graph (scattered once on a
        distributed Client), never a copy per task.
    row_ids : array-like of int of shape (n_rows,), optional
        Stored as ``row_ids``; read like ``labels``.
    store : str, optional
        Path or fsspec URL of a Zarr v3 store to write. Without it, nothing is computed. It must
        be absent, an empty folder, or a feature store: anything else (user files, another Zarr
        group, a file) is refused and left untouched, with or without ``overwrite``.
    block_rows : int, optional
        Rows per stored block (and per task). Default: the input's row chunk (dense dask input),
        about 32 MiB of float64 input per block (NumPy), or the mean partition size (sparse).
    compressors : Zarr compressors, default "auto"
        Raw bytes for float arrays (RFF, NRFF, Fastfood, Nystroem features: Zstandard saves
        about 10% of them and makes reading them several times slower), Zarr's default
        (Zstandard) for the others (GCWS codes, labels, ids); see
        :func:`~dask_kernels.pipeline.creation.auto_compressors`. ``None`` stores raw bytes.
        A resumed store keeps the codecs it was created with.
    overwrite : bool, default False
        Replace an existing feature store of another job (only a feature store). A store of the
        same job is resumed, with or without it: finished blocks whose stored chunks still match
        their done records are kept, damaged or missing ones are rewritten, and when only the
        input's content changed (same shape, dtype and path, e.g. a fixed row) only the blocks
        whose input rows changed are recomputed; so a re-run after a crash keeps the finished
        blocks. Without ``overwrite``, a store of another job (map, block size, columns, input
        shape) is refused naming what differs. With it, a store of the same job is replaced
        too when it holds appended segments, or when ``compressors`` is not "auto" or
        ``shards`` gives it another layout. A job whose store is replaced by another job while
        it runs stops with :class:`~dask_kernels.pipeline.leases.LeaseLostError`.
    progress : bool, default True
        Show progress (see :mod:`dask_kernels._progress`): distributed's widget in Jupyter, a
        text bar on a terminal, a plain line every few seconds in logs.
    storage_options : dict, optional
        fsspec options for ``store``.
    shards : "auto", int or None, default "auto"
        Blocks per Zarr v3 shard of a new store: ``k`` consecutive blocks of each array share
        one object (``k`` times fewer objects), featurized and written by one task; checksums
        and done records stay per block, and reading is unchanged. "auto" shards stores of more
        than 1024 blocks (up to 64 blocks, about 256 MiB of output, per shard); None or 1 writes
        one object per block. A resumed store keeps its layout.
    mode : {"write", "append"}, default "write"
        "append" adds the rows of ``X`` to the store at ``store`` as a new *segment* (created
        by the first call if there is no store yet): a store of its own under
        ``store/segments/``, named by its job fingerprint, so a re-run of the same append
        resumes (or skips) it instead of adding the rows twice. The map's spec and the columns
        must be those of the store (refused, naming what differs). :func:`open_store` and
        training see the rows of every finished segment after the first rows, in the order
        they were appended. A changed input file is a new input: a new segment.
    feature_names : sequence of str, optional
        Names of the input's columns, in order, kept by the store (``FeatureStore.feature_names``)
        and by the models trained on it, which then read a table's columns by name. Default: a
        pandas or dask DataFrame's columns, else none. Appending rows named otherwise is refused.
    chunks : int, optional
        Deprecated alias of ``block_rows`` (FutureWarning; removed in the next release).

    Returns
    -------
    dask.array.Array or FeatureStore
        Without ``store``: a lazy array of shape ``(n_rows, feature_map.n_output_features_)``, of
        the map's output dtype (e.g. uint8 GCWS codes), chunked along rows like the input. With
        ``store``: the opened, complete store; ``store.run_stats`` counts the blocks computed
        and skipped by this call.

    Raises
    ------
    StoreError
        The path is not a feature store, or the store's attributes are damaged or edited.
    ValueError
        The store holds another job, or an input row is invalid (naming the row).
    InputChangedError
        An input file changed while the job read it (naming the file).
    LeaseLostError
        Another job replaced the store while this one was writing it.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from dask_kernels import GCWS, featurize
    >>> X = da.random.default_rng(0).random((1000, 20), chunks=(250, 20))
    >>> codes = featurize(X, GCWS(n_components=64).fit(np.zeros((1, 20))))
    >>> codes.dtype, codes.chunks[0]
    (dtype('uint8'), (250, 250, 250, 250))
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "f.zarr")
    >>> store = featurize(X, GCWS(n_components=64).fit(np.zeros((1, 20))), store=path, progress=False)
    >>> store.run_stats
    {'computed': 4, 'skipped': 0}
    """
    if chunks is not _UNSET:
        if block_rows is not None:
            raise TypeError("featurize got both block_rows and its deprecated alias chunks: pass block_rows only")
        warnings.warn("featurize(chunks=) is deprecated and will be removed in the next release: use "
                      "block_rows=", FutureWarning, stacklevel=2)
        block_rows = chunks
    from ..maps.base import FeatureMap

    if not isinstance(feature_map, FeatureMap):
        raise TypeError(f"feature_map must be a dask_kernels feature map (GCWS, RFF, NRFF, Fastfood, Nystroem, "
                        f"CoRE), got {type(feature_map).__name__}")
    if hasattr(X, "features") and hasattr(X, "feature_map"):  # np.asarray of it said "found shape ()"
        raise TypeError("X is a feature store, whose rows are featurized already: train on it with "
                        "fit_incremental(estimator, store), or featurize the raw rows it was made from")
    if store is not None:  # before any work: what is at the path, and what it is inside
        refuse_link(store)
        refuse_nesting(store, storage_options)
    # dask DataFrames: partitions as blocks; their lengths are computed (one pass) only for a
    # store, which needs row offsets, or an unfitted map to fit on all rows (with their row numbers)
    from ..maps.base import fits_on_all_rows

    lazy = store is None and not fits_on_all_rows(feature_map)
    if feature_names is None:
        feature_names = column_names(X)
    X, labels = as_rows(X, None if store is None else labels, lengths=not lazy)
    kind, src = _as_source(X, block_rows, lazy=lazy)
    fmap = _fitted(feature_map, kind, src)
    spec_json = fmap.spec_json()
    width, out_dtype = int(fmap.n_output_features_), np.dtype(fmap.output_dtype_)
    arrays = graph_arrays(fmap)  # fitted arrays (Nystroem): one shared key, None for other maps
    kernel_plan = fmap.kernel_plan()  # None: the tasks rebuild the map from spec_json
    if store is None:
        return _lazy(kind, src, spec_json, width, out_dtype, arrays, kernel_plan)
    n_rows = int(src.shape[0])
    feature_names = check_feature_names(feature_names, int(src.shape[1]), "featurize")

    columns, classes, held = {}, None, []  # held: in-memory columns' shared keys, kept until the tasks ran
    from_source = kind == "sparse" and labels is None and src.has_labels
    if from_source:
        columns["labels"] = "float64"
    elif labels is not None:
        if isinstance(labels, Encoded):  # an appended segment's, listed by the call that appends it
            labels, classes = labels
        else:
            labels = _as_column(labels, "labels", n_rows, held)
            if is_class_names(labels.dtype):  # stored as codes into the sorted names (one pass to list them)
                labels, classes = encode(labels if isinstance(labels, da.Array) else read_mapped(labels, "auto"))
        columns["labels"] = labels.dtype.str
    if kind == "sparse" and src.has_qid:
        columns["qid"] = "int64"
    if row_ids is not None:
        row_ids = _as_column(row_ids, "row_ids", n_rows, held, dtype=np.int64)
        columns["row_ids"] = (np.dtype(np.int64) if isinstance(row_ids, MappedFile) else row_ids.dtype).str

    if mode not in ("write", "append"):
        raise ValueError(f"mode must be 'write' or 'append', got {mode!r}")
    root = None
    if mode == "append":
        if overwrite:
            raise ValueError("mode='append' adds rows to a store: it cannot be combined with overwrite=True")
        root = append_target(store, storage_options, fmap, columns, classes, feature_names)
        if root is not None and block_rows is None:
            block_rows = root["block_rows"]  # the segments' blocks are like the first ones
    if block_rows is None:
        if kind == "dense":
            block_rows = max(src.chunks[0]) if src.chunks[0] else 1
        else:
            block_rows = -(-n_rows // max(1, src.n_partitions)) if n_rows else 1
    block_rows = max(1, int(block_rows))
    fp = job_fingerprint(fmap.spec(), input_fingerprint(kind, src), block_rows, columns, classes, feature_names)
    fp_sha = fingerprint_hash(fp)
    from .._version import __version__
    from ..rng import RNG_SCHEME

    info = {"spec": fmap.spec(), "rng_scheme": RNG_SCHEME, "fingerprint": fp, "fingerprint_sha256": fp_sha,
            "package_version": __version__}

    # the same rows appended before under another identity (a file rewritten with the same bytes,
    # or touched: a new modification time) are that part again, resumed, not appended twice
    same = None if root is None or root["fingerprint_sha256"] == fp_sha else appended_part(
        store, storage_options, root, fp, lambda: _row_digests(kind, src, block_rows, n_rows, from_source))
    if root is not None and root["fingerprint_sha256"] != fp_sha and same != "":  # a new input: a new segment
        name = same or "seg-" + fp_sha[:16]
        seg = segment_path(store, name, storage_options, create=True)
        part = featurize(X, fmap, labels=labels if classes is None else Encoded(labels, classes), row_ids=row_ids, store=seg, block_rows=block_rows,
                         compressors=compressors, progress=progress, storage_options=storage_options, shards=shards,
                         feature_names=feature_names)
        add_segment(store, storage_options, root["lease"], name)
        fs = open_store(store, storage_options=storage_options)
        fs.run_stats = dict(part.run_stats, segment=seg)
        return fs

    checks = switch("integrity")  # dask config dask_kernels.integrity (benchmarks turn it off)
    n_blocks = -(-n_rows // block_rows)
    k = shard_blocks(shards, n_blocks, block_rows * width * out_dtype.itemsize)
    plan = plan_run(store, storage_options, overwrite, fp, checks, n_rows=n_rows, block_rows=block_rows, width=width,
                    dtype=out_dtype, columns=columns, compressors=compressors, info=info, shard_blocks=k)
    if arrays is not None:  # the store keeps the map's fitted arrays (subgroup "fitted")
        write_group(open_group(store, "r+", storage_options), map_arrays(fmap))
    if plan["info"] is not None:  # resumed: the store's own layout
        k = int(plan["info"].get("shard_blocks", 1))
    done, expect, job_columns = plan["done"], {}, {}
    if checks and done.any():  # resuming: a done block whose chunks do not match its record is rewritten
        reader = BlockReader(store, storage_options, plan["info"])
        names = ["features", *sorted(columns)]
        kept = np.flatnonzero(done)
        ok = run_tasks([dask.delayed(verify_block, pure=False)(reader, int(i), names) for i in kept], progress)
        done[kept[~np.asarray(ok, dtype=bool)]] = False
    if checks and done.any():  # labels or row ids given beside the rows may have changed alone
        given = {"labels": labels, "row_ids": row_ids}
        _columns_as_given(done, {k: v for k, v in given.items() if v is not None}, plan["records"], block_rows,
                          open_group(store, "r", storage_options))
    if plan["input_changed"]:  # rewrite only the done blocks whose input rows (and columns) changed
        expect = {int(i): int(plan["records"][i, FIELD["input"]]) for i in np.flatnonzero(done)}
        job_columns = {int(i): {c: int(plan["records"][i, FIELD[c]]) for c in columns} for i in np.flatnonzero(done)}
        pending = list(range(n_blocks))
    else:
        pending = [i for i in range(n_blocks) if not done[i]]
    if pending and plan["resumed"]:
        set_incomplete(store, storage_options, plan["lease"])
    pending_shards = sorted({i // k for i in pending})  # a shard is written whole
    run = uuid.uuid4().hex[:12]  # side-effecting tasks: never share keys with another run
    job = {"path": store, "storage_options": storage_options, "spec_json": spec_json, "block_rows": block_rows,
           "n_rows": n_rows, "columns": sorted(columns), "run": run, "lease": plan["lease"], "key": job_key(fp),
           "checks": checks, "expect": expect, "expect_columns": job_columns,
           "input_check": _input_identity(kind, src) if checks else None,
           "shard_blocks": k, "arrays": arrays, "plan": kernel_plan}
    if kind == "dense":
        tasks = _dense_writes(src, job, labels, row_ids, pending_shards, run)
    else:
        pieces = _block_pieces(src, block_rows, n_rows, labels, row_ids, from_source)
        tasks = [dask.delayed(write_blocks, pure=False)(
                     job, [(i, pieces(i)) for i in range(s * k, min((s + 1) * k, n_blocks))],
                     dask_key_name=f"dk-write-{run}-{s}")
                 for s in pending_shards]
    try:
        computed = int(sum(np.sum(r) for r in run_tasks(tasks, progress)))
    except InputValueError as e:  # a Parquet dataset's row: name its file and its row there
        raise name_input_error(e, X) from None
    mark_complete(store, storage_options, plan["lease"], checks,
                  info=info if plan["input_changed"] else None)
    fs = open_store(store, storage_options=storage_options)
    if fs.lease != plan["lease"]:
        check_lease(store, storage_options, plan["lease"], "opening the finished store")
    fs.run_stats = {"computed": int(computed), "skipped": n_blocks - int(computed)}
    return fs


def _columns_as_given(done, given, records, block_rows, group):
    """Mark not done (in place) the done blocks whose stored labels or row ids (``given``: name ->
    the column given beside the rows) differ from the given ones: a labels file changed while the
    rows did not leaves the rows' fingerprint as it was. Reads the columns only."""
    kept = np.flatnonzero(done)
    for name, col in given.items():
        dtype = group[name].dtype

        def block_digest(b, dtype=dtype):
            return np.array([digest(np.ascontiguousarray(b, dtype=dtype))], dtype=np.uint64)

        blocks = _column_array(col, name, block_rows)
        got = blocks.map_blocks(block_digest, chunks=((1,) * blocks.numblocks[0],), dtype=np.uint64).compute()
        done[kept[got[kept] != records[kept, FIELD[name]]]] = False


def _input_identity(kind, src):
    """The input file's identity (re-checked as each block is featurized), or None."""
    if kind == "sparse":
        return src.identity
    return file_identity(src)


def _lazy(kind, src, spec_json, width, out_dtype, arrays=None, plan=None):
    meta = np.empty((0, 0), dtype=out_dtype)
    if kind == "dense":
        return src.map_blocks(transform_chunk, spec_json, arrays, plan, dtype=out_dtype,
                              chunks=(src.chunks[0], (width,)), meta=meta)
    parts = src.to_delayed()
    blocks = [
        da.from_delayed(dask.delayed(transform_part, pure=True)(p, spec_json, off, arrays, plan), shape=(n, width),
                        dtype=out_dtype, meta=meta)
        for p, n, off in zip(parts, src.row_counts, src.row_offsets)
    ]
    return da.concatenate(blocks) if blocks else da.empty((0, width), dtype=out_dtype)


def _dense_writes(X, job, labels, row_ids, pending, run):
    """The write tasks of dense rows (a 1-element list): one fused read-featurize-write task per
    pending block; for a sharded store, one fused read-featurize task per block of the pending
    shards and one write task per shard (see :func:`_shard_writes`)."""
    if not pending:
        return []
    k, rows = job["shard_blocks"], job["block_rows"]
    split = k > 1 and not job["expect"]  # resuming a changed input: whole-shard tasks (see write_blocks)
    chunks = da.core.normalize_chunks((rows if split else rows * k, -1), X.shape)
    labels, row_ids = (c if not isinstance(c, MappedFile) else _column_array(c, n, chunks[0])
                       for n, c in (("labels", labels), ("row_ids", row_ids)))
    # a Parquet partition's rows and labels: one read, in the write task itself when the
    # partitions are the tasks' blocks (the task's block is then the pair; see tasks._pieces)
    joint = row_label_pairs(X, labels) if labels is not None and X.chunks == chunks else None
    if joint is None:
        X, labels = read_together(X, labels)
        X = X.rechunk(chunks)
    args, names = [X if joint is None else joint], []
    for name, col in (("labels", labels), ("row_ids", row_ids)):
        if col is not None:
            names.append(name)
            if joint is None or name != "labels":
                args.append(col.rechunk((X.chunks[0],))[:, None])
    if split:
        return _each_block(_shard_writes(args, job, tuple(names), pending, run))
    # a (1, 1) status per block, not drop_axis=1: dropping an axis makes dask concatenate along it,
    # which copies every block of rows (one chunk or not) before this task sees it
    status = da.map_blocks(write_dense_chunk, *args, job=job, names=tuple(names), dtype=np.int64,
                           chunks=((1,) * X.numblocks[0], (1,)), meta=np.empty((0, 0), np.int64),
                           name=f"dk-write-{run}")
    return _each_block(status, pending)


def _each_block(status, which=None):
    """The blocks ``which`` (all by default) of a (n, 1) status array, as one Delayed each: the
    write tasks themselves. Selecting them with ``status.blocks[...]`` instead adds a task per
    block after its write, which takes the worker's second slot in the scheduler's queue
    (``worker-saturation``): the next write then waited for a round trip to the scheduler, 5.2
    against 1.6-2.6 ms between two tasks on a worker (measured, 2 single-threaded workers)."""
    blocks = status.to_delayed().ravel()
    return list(blocks if which is None else blocks[np.asarray(which)])


def _shard_writes(args, job, names, pending, run):
    """A (1, 1) status per pending shard: each shard's blocks are featurized by one task per block
    (fused with the read of its rows), then written by one task. One task per shard for all of
    it would need the shard's rows as one chunk (dask's rechunk copies them: 7-9 CPU-ms per block) and
    leave coarse tasks, 8x longer, so a worker slowed down by other load finishes a whole shard
    after the other (what made the cost of sharding vary between runs)."""
    from .._compat import HighLevelGraph

    n_blocks = args[0].numblocks[0]
    blocks = da.map_blocks(featurize_dense_chunk, *args, job=job, names=names, dtype=object,
                           chunks=((1,) * n_blocks, (1,)), meta=np.empty((0, 0), object),
                           name=f"dk-featurize-{run}")
    k, name = job["shard_blocks"], f"dk-write-{run}"
    writer = dict(job, arrays=None, plan=None)  # the writer featurizes nothing
    dsk = {(name, j, 0): (write_shard, writer, [(blocks.name, i, 0) for i in range(s * k, min(s * k + k, n_blocks))])
           for j, s in enumerate(pending)}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[blocks])
    return da.Array(graph, name, ((1,) * len(pending), (1,)), meta=np.empty((0, 0), np.int64))


def _block_pieces(src, block_rows, n_rows, labels, row_ids, labels_from_source):
    """``pieces(i)``: the (X, y, qid, row_ids, lo, hi) partition slices that make store block i.

    Partitions of a sparse source have their own sizes (e.g. svmlight byte ranges), so a store
    block may take rows from two or more partitions; each partition is parsed once.
    """
    parts = src.to_delayed()
    part_rows = row_bounds(sizes=src.row_counts)
    extra = {}
    for name, col in (("labels", labels), ("row_ids", row_ids)):
        if col is not None:
            extra[name] = _column_array(col, name, src.row_counts).to_delayed().ravel()

    def piece(p, lo, hi):
        part = parts[p]
        y = extra["labels"][p] if "labels" in extra else part[1] if labels_from_source else None
        r = extra["row_ids"][p] if "row_ids" in extra else None
        return (part[0], y, part[2], r, lo, hi)

    def pieces(i):
        start, stop = i * block_rows, min((i + 1) * block_rows, n_rows)
        return [piece(p, max(start, a) - a, min(stop, b) - a) for p, (a, b) in enumerate(part_rows)
                if b > start and a < stop and b > a]

    return pieces


def _row_digests(kind, src, block_rows, n_rows, from_source):
    """The digest of each store block's input rows (as the tasks record it), read on the cluster."""
    if kind == "dense":
        X = src.rechunk(da.core.normalize_chunks((block_rows, -1), src.shape))
        return X.map_blocks(lambda b: np.array([[_input_digest(b)]], dtype=np.uint64), dtype=np.uint64,
                            chunks=((1,) * X.numblocks[0], (1,))).compute()[:, 0]
    pieces = _block_pieces(src, block_rows, n_rows, None, None, from_source)
    tasks = [dask.delayed(lambda p: _input_digest(_assemble(p)[0]))(pieces(i)) for i in range(-(-n_rows // block_rows))]
    return np.array(dask.compute(*tasks), dtype=np.uint64)
