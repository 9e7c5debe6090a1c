"""One object in a Dask graph as ONE key, whatever the number of tasks that use it.

A fitted model's coefficients or a map's fitted arrays are tens of megabytes; embedded in a
function or argument of every task they make the graph that large, and distributed warns
"Sending large graph". :func:`shared_key` puts them in once: on an active distributed Client
the object is scattered (the graph holds only the future's key, and each worker receives it
once); otherwise it is one literal key that the local scheduler hands to every task.
"""

from __future__ import annotations

import sys
from typing import Any


def active_client():
    """The distributed Client dask computes on now, or None."""
    if "distributed" not in sys.modules:  # no Client without it: importing it costs a command 0.5 s
        return None
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _identity(x):
    return x


def shared_key(obj: Any, name: str):
    """``obj`` as one Delayed key named after ``name`` (scattered on an active Client).

    Examples
    --------
    >>> import dask
    >>> key = shared_key([1, 2, 3], "dk-example")
    >>> dask.compute(dask.delayed(sum)(key))[0]
    6
    """
    import dask

    client = active_client()
    if client is not None:
        [future] = client.scatter([obj], hash=False)
        return dask.delayed(future)
    return dask.delayed(_identity, pure=True)(obj, dask_key_name=name)
