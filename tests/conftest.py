"""Fixtures shared by the test files (pytest finds them by name; nothing is imported by path).

* ``temporary_maps``: feature maps defined while it is active are registered only for the test
  (test-only maps never leak into the global registry that ``from_spec`` and the CLI use).
* ``float_identity``: a registered float identity map, a stand-in for Fourier-type features.
* ``local_cluster``: one LocalCluster for the whole run.
* ``s3``: a local S3 API (moto's server) with a fresh bucket.
"""

import socket
import time

import numpy as np
import pytest

from dask_kernels.maps import base, spec

spec.registered_maps()  # every map of the package registered (imported) before any test runs


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


# -- s3: a local S3 API (moto's server), for tests/test_s3*.py and test_model_s3.py ----------
def _s3_free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3():
    """``(storage_options, s3fs filesystem)`` of a fresh bucket on a local moto server."""
    import logging

    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    port = _s3_free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        opts = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": url, "region_name": "us-east-1"}}
        import boto3

        boto3.client("s3", endpoint_url=url, aws_access_key_id="testing", aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket="dk-test")
        fs = s3fs.S3FileSystem(**opts)
        yield opts, fs
    finally:
        server.stop()
