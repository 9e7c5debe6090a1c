"""Process-wide switches of dask_kernels, read from dask's configuration (``dask_kernels.*``).

Each is on by default and meant for measuring the code path it turns off (the benchmarks' A/B
rows) or for ruling it out when chasing a problem; results do not depend on them (each path
is tested bitwise against the one it replaces). Set them like any dask option::

    import dask
    with dask.config.set({"dask_kernels.sgd_fast": False}):
        ...

or ``DASK_DASK_KERNELS__SGD_FAST=False`` in the environment, or in a dask YAML file. The
documented list is in the training guide (Configuration).
"""

from __future__ import annotations

import dask.config

#: The switches and their defaults.
DEFAULTS = {
    # learn/sgd_fast.py: SGDClassifier's partial_fit through the Numba replica of its loop
    "sgd_fast": True,
    # learn/sgd_fast.py: the replica reads a step's kept rows in place instead of a gathered copy
    "sgd_fast_in_place": True,
    # pipeline: chunk checksums, done-record digests, input re-checks and leases on new store runs
    "integrity": True,
}


def switch(name: str) -> bool:
    """The value of ``dask_kernels.<name>`` in dask's configuration (default: :data:`DEFAULTS`)."""
    return bool(dask.config.get(f"dask_kernels.{name}", DEFAULTS[name]))
