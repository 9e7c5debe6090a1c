"""Shared fixtures."""

import socket
import time

import pytest


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
