"""Class names as labels: checked once where they enter, stored as integer codes.

Labels are numbers (kept as they are) or *class names*: strings, as a NumPy ``<U`` array, an
object array of ``str`` (what pandas and Parquet string columns give) or a dask array of
either. A feature store keeps class names as ``int32`` codes into the sorted list of its
distinct names, stored once in its metadata (:func:`encode`); reading the store gives the
names back. Models keep them as a ``<U`` ``classes_`` array (no pickle).

What a label input can make us allocate is bounded (:data:`MAX_CLASSES`,
:data:`MAX_CLASS_CHARS`): the class list is JSON in the store's attributes, read on every
open, and a ``<U`` array of width w costs 4 w bytes per value.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

#: Distinct class names a label column may hold: the store keeps the sorted list in its JSON
#: attributes (read on every open) and a classifier one coefficient row per class.
MAX_CLASSES = 2**14
#: Characters of one class name: a ``<U`` array of width w costs 4 w bytes per label, so a
#: single long name would make every decoded block as wide.
MAX_CLASS_CHARS = 256
#: dtype of the stored codes
CODE_DTYPE = np.dtype(np.int32)


def is_class_names(dtype: Any) -> bool:
    """Whether labels of ``dtype`` are class names (strings, or objects that must be strings)."""
    return np.dtype(dtype).kind in "USO"


def names(block: Any, offset: int = 0, where: str = "labels") -> np.ndarray:
    """``block`` as a ``<U`` array of class names, checked: every value a ``str`` (object
    input) of at most :data:`MAX_CLASS_CHARS` characters. Errors name the row
    (``offset`` + position) and the bound."""
    a = np.asarray(block)
    if a.dtype.kind == "O":
        bad = next((i for i, v in enumerate(a.ravel()) if not isinstance(v, str)), None)
        if bad is not None:
            v = a.ravel()[bad]
            raise ValueError(f"{where}: row {offset + bad} holds {v!r} ({type(v).__name__}), not a class name; "
                             "labels are either all numbers or all strings (a missing label is not allowed)")
        lengths = np.fromiter(map(len, a.ravel()), dtype=np.int64, count=a.size)
    elif a.dtype.kind == "S":
        raise ValueError(f"{where}: labels of bytes (dtype {a.dtype}) are not class names; decode them to str "
                         "(numpy: y.astype(str))")
    elif a.dtype.kind == "U":
        if a.dtype.itemsize // 4 <= MAX_CLASS_CHARS:
            return a
        lengths = np.char.str_len(a)
    else:
        raise ValueError(f"{where}: dtype {a.dtype} is not a string dtype")
    if lengths.size and lengths.max() > MAX_CLASS_CHARS:
        i = int(np.argmax(lengths > MAX_CLASS_CHARS))
        raise ValueError(f"{where}: row {offset + i} holds a class name of {int(lengths[i]):,} characters, more "
                         f"than MAX_CLASS_CHARS = {MAX_CLASS_CHARS} (dask_kernels.labels); use shorter class "
                         "names")
    return a.astype(f"<U{max(1, int(lengths.max()) if lengths.size else 1)}")


def check_finite(y: np.ndarray, start: int = 0, where: str = "labels") -> None:
    """Refuse a missing (NaN) or infinite label of a block whose first row is ``start``, naming
    its row: stored or trained, it would be a class of its own to a classifier ("y contains
    labels not in classes_ [0.0, 1.0, nan]"), or a regressor's NaN loss.

    Examples
    --------
    >>> import numpy as np
    >>> check_finite(np.array([1.0, np.nan]), start=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: labels: row 11 is missing (NaN); every row needs a label: ...
    """
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        i = int(np.flatnonzero(~np.isfinite(y))[0])
        what = "missing (NaN)" if np.isnan(y[i]) else f"{y[i]}, not a finite number"
        raise ValueError(f"{where}: row {start + i} is {what}; every row needs a label: drop the rows without one "
                         "or fill them in first")


def check_count(n: int, where: str = "labels") -> None:
    """Refuse more than :data:`MAX_CLASSES` distinct class names, naming the bound."""
    if n > MAX_CLASSES:
        raise ValueError(f"{where}: more than MAX_CLASSES = {MAX_CLASSES:,} distinct class names "
                         f"(dask_kernels.labels; found {n:,} at least); labels with that many values are "
                         "not classes: give numbers (a regression target) or fewer classes")


def _block_classes(block, offset, where):
    found = np.unique(names(block, offset, where))
    check_count(found.size, where)
    return found


def _row_offsets(chunks):
    return np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(int).tolist() if chunks else []


def classes_of(labels: Any, where: str = "labels") -> np.ndarray:
    """The sorted distinct class names of ``labels`` (NumPy, or dask: one pass, block by
    block on the active scheduler), checked and bounded."""
    import dask

    if hasattr(labels, "dask") and hasattr(labels, "to_delayed"):
        parts = labels.to_delayed().ravel()
        found = dask.compute(*[dask.delayed(_block_classes)(p, off, where)
                               for p, off in zip(parts, _row_offsets(labels.chunks[0]))])
        found = [f for f in found if f.size]
        classes = np.unique(np.concatenate(found)) if found else np.array([], dtype="<U1")
    else:
        classes = _block_classes(labels, 0, where)
    check_count(classes.size, where)
    return classes


def _encode_block(block, classes, where="labels", block_info=None):
    offset = block_info[0]["array-location"][0][0] if block_info else 0
    a = names(block, offset, where)
    codes = np.searchsorted(classes, a).astype(CODE_DTYPE)
    if a.size and (codes.max() >= classes.size or np.any(classes[np.minimum(codes, classes.size - 1)] != a)):
        bad = np.flatnonzero((codes >= classes.size) | (classes[np.minimum(codes, classes.size - 1)] != a))[0]
        raise ValueError(f"{where}: row {offset + bad} holds class {str(a[bad])!r}, which was not among the "
                         "labels' classes when they were listed (the labels changed while being read)")
    return codes


class Encoded(NamedTuple):
    """Labels :func:`encode` has made: codes and their classes (passed on as they are)."""

    codes: Any
    classes: np.ndarray


def encode(labels: Any, where: str = "labels") -> tuple[Any, np.ndarray]:
    """``(codes, classes)``: ``int32`` codes into the sorted distinct class names ``classes``
    (a dask array stays lazy: only the classes are computed, in one pass over the labels).

    Examples
    --------
    >>> codes, classes = encode(np.array(["dog", "cat", "dog"]))
    >>> codes.tolist(), classes.tolist()
    ([1, 0, 1], ['cat', 'dog'])
    """
    classes = classes_of(labels, where)
    if hasattr(labels, "map_blocks"):
        return labels.map_blocks(_encode_block, classes, where, dtype=CODE_DTYPE), classes
    return _encode_block(labels, classes, where), classes


def check_classes(value: Any, where: str) -> np.ndarray:
    """A stored class list (JSON list, or a ``classes_`` array) as a ``<U`` array, or
    ``ValueError`` naming ``where`` unless it is at most :data:`MAX_CLASSES` distinct sorted
    strings of at most :data:`MAX_CLASS_CHARS` characters."""
    if isinstance(value, np.ndarray):
        ok = value.ndim == 1 and value.dtype.kind == "U"
        items = value.tolist() if ok else []
    else:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        items = value if ok else []
    if not ok or len(items) > MAX_CLASSES or any(len(v) > MAX_CLASS_CHARS for v in items) \
            or any(a >= b for a, b in zip(items, items[1:])):
        raise ValueError(f"{where}: must be at most MAX_CLASSES = {MAX_CLASSES:,} distinct sorted class names "
                         f"of at most MAX_CLASS_CHARS = {MAX_CLASS_CHARS} characters each")
    return np.array(items, dtype=f"<U{max([1, *map(len, items)])}")


def decode(codes: np.ndarray, classes: np.ndarray, where: str = "labels") -> np.ndarray:
    """Class names of stored ``codes`` (refusing a code outside the class list)."""
    codes = np.asarray(codes)
    if codes.size and (codes.min() < 0 or codes.max() >= classes.size):
        raise ValueError(f"{where}: a stored label code is outside the store's {classes.size} classes "
                         "(damaged or edited store)")
    return classes[codes]
