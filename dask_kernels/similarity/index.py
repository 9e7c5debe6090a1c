"""A similarity index over codes held in memory: threshold queries and top-k, saved without pickle.

Saved format (a folder, version :data:`INDEX_FORMAT`): ``index.json`` holds ``{"format",
"n_rows", "n_hashes", "bits", "spec", "sidecar"}``, and ``codes.npz`` the codes (one member,
no pickle); ``sidecar`` is a :mod:`dask_kernels.sidecar` manifest of the codes (shape, dtype,
sha256), checked against the declared sizes before the codes are read and against their bytes
after. Loading refuses other versions and metadata over :data:`MAX_META_BYTES`, and allocates
only what the checked manifest declares.
"""

from __future__ import annotations

import json
import os

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._files import file_problem
from ..sidecar import SidecarError, check_manifest, manifest, read_npz, write_npz
from ._kernels import agreement, band_keys
from ._source import as_codes, check_bits
from .banding import WEIGHTS, check_bands, choose_bands
from .join import code_estimate

INDEX_FORMAT = "dk-similarity-index-1"
META, CODES = "index.json", "codes.npz"
MAX_META_BYTES = 1 << 20
#: Neighbours taken on each side of a query in each prefix tree of :meth:`SimilarityIndex.top_k`.
_TREES = 8
#: Candidates :meth:`SimilarityIndex.query` gathers at once (its queries are taken in batches of
#: about this many): a pair comes once per band it shares, so all at once they were up to
#: ``bands`` times the results (625 MB for 7 MB of them, 32 bands of equal rows).
_BATCH = 1 << 20


def _codes_array(codes, n_hashes=None, where="codes", bits=None):
    """``codes`` as a C-ordered array of unsigned codes, checked: 2-d, ``n_hashes`` wide, and
    (given ``bits``) every code below ``2**bits``: codes of another width than ``bits`` give
    estimates off by the other chance agreement, without a word."""
    c = np.asarray(codes)
    if c.ndim != 2 or c.dtype.kind != "u" or (n_hashes is not None and c.shape[1] != n_hashes) or not c.shape[1]:
        raise ValueError(f"{where}: expected unsigned integer codes of shape (rows, {n_hashes or 'hashes'}), got "
                         f"shape {c.shape} dtype {c.dtype}")
    if bits is not None and (8 * c.dtype.itemsize < bits or (c.size and int(c.max()) >> bits)):
        held = f"{c.dtype} codes" if 8 * c.dtype.itemsize < bits else f"a code of {int(c.max())}"
        raise ValueError(f"{where}: {held} cannot be {bits}-bit codes: give bits= of the GCWS map that made "
                         "them (its bits parameter)")
    return np.ascontiguousarray(c)


class SimilarityIndex:
    """Codes of ``n_rows`` rows, searchable by GMM similarity.

    Parameters
    ----------
    codes : ndarray (n_rows, n_hashes) of unsigned integers
    bits : int
        Code width of the map that made them.
    spec : dict, optional
        The map's spec (kept with the index, so queries can be featurized the same way).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import GCWS
    >>> from dask_kernels.similarity import SimilarityIndex
    >>> X = np.random.default_rng(0).random((300, 20))
    >>> gcws = GCWS(n_components=128, bits=8, seed=1).fit(X)
    >>> index = SimilarityIndex(gcws.transform(X), bits=8)
    >>> hits = index.query(gcws.transform(X[[7]]), 0.9)
    >>> hits[["query", "row"]].values.tolist()
    [[0, 7]]
    >>> index.top_k(gcws.transform(X[[7]]), 2)["row"].tolist()[0]
    7
    """

    def __init__(self, codes: npt.ArrayLike, bits: int, spec: dict | None = None) -> None:
        self.bits, self.spec = check_bits(bits), spec
        self.codes = _codes_array(codes, bits=self.bits)
        self._tables = {}

    @classmethod
    def from_source(cls, source: Any, bits: int | None = None) -> SimilarityIndex:
        """An index of all the codes of a store (path or opened) or an array (read into memory)."""
        c = as_codes(source, bits)
        return cls(c.array.compute(), c.bits, c.spec)

    @property
    def n_rows(self) -> int:
        return self.codes.shape[0]

    @property
    def n_hashes(self) -> int:
        return self.codes.shape[1]

    def _table(self, bands, rows):
        """Per band: the rows' keys sorted, and the rows in that order."""
        if (bands, rows) not in self._tables:
            keys = band_keys(self.codes, bands, rows)
            order = np.argsort(keys, axis=0, kind="stable")
            self._tables[(bands, rows)] = (np.take_along_axis(keys, order, axis=0), order)
        return self._tables[(bands, rows)]

    def _result(self, q, r, codes):
        """The distinct pairs ``(q, r)``, sorted, with their estimates."""
        if len(q):  # one int64 per pair: np.unique(axis=0) sorts rows of two columns many times slower
            q, r = np.divmod(np.unique(q.astype(np.int64) * self.n_rows + r), self.n_rows)
        else:
            q = r = np.empty(0, np.int64)
        est = code_estimate(agreement(codes, self.codes, q, r), self.n_hashes, self.bits)
        return pd.DataFrame({"query": q, "row": r, "estimate": est})

    def query(self, codes: npt.ArrayLike, threshold: float, bands: int | None = None, rows: int | None = None,
              weights: tuple[float, float] = WEIGHTS) -> pd.DataFrame:
        """Rows of the index at estimated GMM similarity >= ``threshold`` to each query row.

        ``codes``: the queries' codes, made by the same map; ``threshold`` in (0, 1); ``bands``
        and ``rows`` together, or neither (:func:`choose_bands`). Returns a DataFrame ``(query,
        row, estimate)`` sorted by query, then row.
        """
        codes = _codes_array(codes, self.n_hashes, "query codes", self.bits)
        threshold = float(threshold)
        if not 0.0 < threshold < 1.0:  # (with bands given, 1.5 or NaN found nothing, without a word)
            raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
        if bands is None and rows is None:
            bands, rows = choose_bands(threshold, self.n_hashes, self.bits, weights)
        elif bands is None or rows is None:
            raise ValueError("give both bands and rows, or neither")
        bands, rows = check_bands(bands, rows, self.n_hashes)
        keys, order = self._table(bands, rows)
        qk = band_keys(codes, bands, rows)
        lo = np.stack([np.searchsorted(keys[:, j], qk[:, j], side="left") for j in range(bands)])
        hi = np.stack([np.searchsorted(keys[:, j], qk[:, j], side="right") for j in range(bands)])
        ends = np.cumsum((hi - lo).sum(axis=0))  # candidates through each query
        parts, a = [], 0
        while a < len(codes) or not parts:
            b = max(a + 1, int(np.searchsorted(ends, (ends[a - 1] if a else 0) + _BATCH, side="right")))
            qs, rs = [], []
            for j in range(bands):
                q, at = _ranges(lo[j, a:b], hi[j, a:b])
                qs.append(q + a)
                rs.append(order[at, j])
            out = self._result(np.concatenate(qs), np.concatenate(rs), codes)
            parts.append(out[out["estimate"] >= threshold])
            a = b
        return pd.concat(parts, ignore_index=True)

    def _prefix_trees(self, trees):
        """Per tree: the rows sorted by their codes of that tree's slice (big-endian bytes, so byte
        order is numeric order), and those sorted byte strings."""
        if ("trees", trees) not in self._tables:
            width = self.n_hashes // trees
            out = []
            for t in range(trees):
                s = self._slice_bytes(self.codes, t, width)
                order = np.argsort(s, kind="stable")
                out.append((order, s[order]))
            self._tables[("trees", trees)] = out
        return self._tables[("trees", trees)]

    def _slice_bytes(self, codes, t, width):
        part = np.ascontiguousarray(codes[:, t * width:(t + 1) * width].astype(codes.dtype.newbyteorder(">")))
        return part.view(f"V{width * codes.dtype.itemsize}").ravel()

    def top_k(self, codes: npt.ArrayLike, k: int, candidates: int | None = None, trees: int = _TREES) -> pd.DataFrame:
        """The ``k`` rows of highest estimated similarity to each query row, found as in an LSH
        forest: in each of ``trees`` slices of the codes, the rows sorted next to the query (the
        longest shared prefixes) are candidates, ``candidates`` per side and tree (default
        ``4 k``); candidates are ranked on all their codes. Approximate: a larger ``candidates``
        finds more of the true top ``k`` (on digits at ``k = 1``, 86 % by default, 99 % at 64).

        Returns a DataFrame ``(query, row, estimate, rank)``; ties in the estimate go to the lower row.
        """
        codes = _codes_array(codes, self.n_hashes, "query codes", self.bits)
        for name, v in (("k", k), ("candidates", 1 if candidates is None else candidates), ("trees", trees)):
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        trees = min(int(trees), self.n_hashes)
        w = int(4 * k if candidates is None else candidates)
        width = self.n_hashes // trees
        qs, rs = [], []
        for t, (order, sorted_bytes) in enumerate(self._prefix_trees(trees)):
            pos = np.searchsorted(sorted_bytes, self._slice_bytes(codes, t, width))
            q, at = _ranges(np.maximum(pos - w, 0), np.minimum(pos + w, self.n_rows))
            qs.append(q)
            rs.append(order[at])
        out = self._result(np.concatenate(qs), np.concatenate(rs), codes)
        out = out.sort_values(["query", "estimate", "row"], ascending=[True, False, True], kind="stable")
        out = out.groupby("query", sort=True).head(int(k)).reset_index(drop=True)
        out["rank"] = out.groupby("query").cumcount()
        return out

    def save(self, path: str | os.PathLike) -> str:
        """Write the index as folder ``path`` (``index.json`` and ``codes.npz``; versioned, no
        pickle); returns the path. An existing ``path`` must be an index folder (it is replaced)
        or an empty folder."""
        path = os.fspath(path)
        if os.path.exists(path):
            if not os.path.isdir(path) or (os.listdir(path) and not os.path.exists(os.path.join(path, META))):
                raise ValueError(f"{path}: exists and is not a similarity index folder; refusing to write into it")
            _read_meta(path)  # ours (any damage short of that is replaced)
        meta = {"format": INDEX_FORMAT, "n_rows": self.n_rows, "n_hashes": self.n_hashes, "bits": self.bits,
                "spec": self.spec, "sidecar": manifest({"codes": self.codes})}
        try:  # before anything is written: a spec that is no JSON left a folder that no save or load took
            text = json.dumps(meta, sort_keys=True)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: the index's spec cannot be saved as JSON ({e})") from None
        os.makedirs(path, exist_ok=True)
        write_npz(os.path.join(path, CODES), {"codes": self.codes})
        tmp = os.path.join(path, f"{META}.tmp-{os.getpid()}")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(path, META))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> SimilarityIndex:
        """Read an index written by :meth:`save`, checking its version, sizes and checksum."""
        path = os.fspath(path)
        meta = _read_meta(path)
        where = os.path.join(path, META)
        for key in ("n_rows", "n_hashes", "bits"):
            v = meta.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "n_rows" else 1):
                kind = "nonnegative" if key == "n_rows" else "positive"
                raise ValueError(f"{where}: {key!r} is {v!r}, expected a {kind} integer")
        if not 1 <= meta["bits"] <= 16:
            raise ValueError(f"{where}: 'bits' is {meta['bits']}, expected 1 to 16")
        dtype = "|u1" if meta["bits"] <= 8 else "<u2"
        shape = (meta["n_rows"], meta["n_hashes"])
        try:
            man = check_manifest(meta.get("sidecar"), {"codes": (shape, dtype)}, where=f"{where}: 'sidecar'")
            codes = read_npz(os.path.join(path, CODES), man)["codes"]
        except SidecarError as e:
            raise ValueError(str(e)) from None
        return cls(codes, meta["bits"], meta.get("spec"))


def _ranges(lo, hi):
    """``(query, position)`` for every position in ``[lo[q], hi[q])`` of every query q."""
    counts = hi - lo
    q = np.repeat(np.arange(lo.size), counts)
    first = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    return q, first + np.arange(q.size)


def _read_meta(path):
    where = os.path.join(path, META)
    try:
        problem = file_problem(where, MAX_META_BYTES)  # a FIFO would block the read, a device never end it
    except (FileNotFoundError, NotADirectoryError):
        raise ValueError(f"{path}: not a similarity index (no {META})") from None
    if problem is not None:
        raise ValueError(f"{where} {problem}: not an index's metadata; refusing to read it")
    try:
        with open(where, "rb") as f:
            meta = json.loads(f.read().decode())
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{where}: not UTF-8 JSON ({type(e).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != INDEX_FORMAT:
        raise ValueError(f"{where}: format {meta.get('format') if isinstance(meta, dict) else None!r}, expected "
                         f"{INDEX_FORMAT!r} (written by another version?)")
    return meta
