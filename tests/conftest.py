"""Fixtures shared by the test files (pytest finds them by name; nothing is imported by path).

* ``temporary_maps``: feature maps defined while it is active are registered only for the test
  (test-only maps never leak into the global registry that ``from_spec`` and the CLI use).
* ``float_identity``: a registered float identity map, a stand-in for Fourier-type features.
"""

import numpy as np
import pytest

from dask_kernels.maps import base


@pytest.fixture(scope="session", autouse=True)
def _no_test_map_stays_registered():
    """Fail the session if a test left a map in the registry (use ``temporary_maps``)."""
    before = set(base._REGISTRY)
    yield
    leaked = set(base._REGISTRY) - before
    assert not leaked, f"test-only feature maps left in the registry: {sorted(leaked)}"


@pytest.fixture
def temporary_maps():
    """Restore the feature-map registry after the test (maps defined in it are unregistered)."""
    before = dict(base._REGISTRY)
    try:
        yield
    finally:
        base._REGISTRY.clear()
        base._REGISTRY.update(before)


@pytest.fixture
def float_identity(temporary_maps):
    """A map that stores rows as float32 unchanged, registered as ``test-float-identity``."""

    class FloatIdentity(base.FeatureMap):
        method = "test-float-identity"
        _parameter_constraints = {}

        def __init__(self):
            pass

        @property
        def n_output_features_(self):
            return int(self.n_features_in_)

        @property
        def output_dtype_(self):
            return np.dtype(np.float32)

        def transform_block(self, X, row_offset=0):
            return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float32)

    return FloatIdentity



@pytest.fixture(scope="session")
def local_cluster():
    """Address of one LocalCluster (two single-threaded worker processes) shared by the whole run:
    starting one costs seconds. For tests that only need *a* cluster; tests that kill workers or
    count per-worker state start their own."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address
