"""Gathering a training step's rows from a window's blocks, in the learner's dtype, in one pass.

A step's rows are scattered over every block of its shuffle window (:mod:`.shuffle`). NumPy
needs three passes to assemble them in float64 from float32 blocks (a fancy-indexed copy per
block, a masked scatter into the step, a dtype conversion); :func:`gather_rows` reads each row
once and writes it once, converting on the way (the same values as ``astype``: float32 ->
float64 is exact). GCWS codes (uint8, uint16) are gathered the same way, as stored.

Where the learner can read rows in place (the SGD fast path, :mod:`.sgd_fast`), a step is not
gathered at all: :class:`StepRows` names its rows in the array that keeps them.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _gather(src, rows, at, out):
    for i in range(rows.size):
        r, o = rows[i], at[i]
        for j in range(src.shape[1]):
            out[o, j] = src[r, j]


def gather_rows(parts: list[np.ndarray], starts: np.ndarray, rows: np.ndarray,
                dtype: np.dtype | None = None) -> np.ndarray:
    """``concatenate(parts)[rows]`` as a C-ordered array of ``dtype``, without concatenating.

    Parameters
    ----------
    parts : list of 2-D ndarray
        The blocks, all of one dtype and width.
    starts : ndarray of int64
        Offset of each part in the concatenation (``len(parts) + 1`` entries, the last the total).
    rows : ndarray of int
        Rows of the concatenation, in the order wanted.
    dtype : dtype, optional
        Of the result (default: the parts').

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.arange(4, dtype=np.float32).reshape(2, 2), np.full((1, 2), 9, np.float32)
    >>> gather_rows([a, b], np.array([0, 2, 3]), np.array([2, 0]), np.float64)
    array([[9., 9.],
           [0., 1.]])
    """
    first = parts[0]
    out = np.empty((rows.size, first.shape[1]), dtype=first.dtype if dtype is None else dtype)
    rows = np.asarray(rows, dtype=np.int64)
    owner = np.searchsorted(starts, rows, side="right") - 1
    for j, part in enumerate(parts):
        at = np.flatnonzero(owner == j)
        if at.size:
            _gather(np.ascontiguousarray(part), rows[at] - starts[j], at, out)
    return out


class StepRows:
    """A step's rows where they are kept, not gathered: row ``i`` of the step is row ``at[i]``
    of ``src`` (read in ``dtype``, the learner's).

    The SGD fast path (:mod:`.sgd_fast`) reads them in place, converting each value as it reads
    it (float32 -> float64 is exact: the same values as :meth:`gather`'s); every other learner
    receives :meth:`gather`'s array.

    Parameters
    ----------
    src : 2-D ndarray
        Dense float rows, C-ordered (e.g. the rows kept for a run).
    at : 1-D ndarray of int64
        The step's rows in ``src``, in step order.
    dtype : dtype
        Of the rows as the learner sees them.

    Examples
    --------
    >>> import numpy as np
    >>> rows = StepRows(np.arange(6, dtype=np.float32).reshape(3, 2), np.array([2, 0]), np.float64)
    >>> rows.shape, rows.gather()
    ((2, 2), array([[4., 5.],
           [0., 1.]]))
    """

    def __init__(self, src: np.ndarray, at: np.ndarray, dtype: np.dtype) -> None:
        self.src, self.at, self.dtype = src, np.asarray(at, dtype=np.int64), np.dtype(dtype)
        self.shape = (self.at.size, src.shape[1])
        self.size = self.shape[0] * self.shape[1]

    def gather(self) -> np.ndarray:
        """The rows as one C-ordered array of ``dtype`` (:func:`gather_rows`)."""
        return gather_rows([self.src], np.array([0, self.src.shape[0]], dtype=np.int64), self.at, self.dtype)
