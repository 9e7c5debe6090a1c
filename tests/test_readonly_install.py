"""A read-only install works: Numba caches go to the user-wide cache, and a second process loads
the compiled kernels instead of compiling them again (item 5 of the pipeline issue)."""

import os
import shutil
import subprocess
import sys

import pytest

import dask_kernels

PROBE = """
import sys, numpy as np
from dask_kernels import GCWS
GCWS(n_components=8).fit(np.ones((2, 10))).transform(np.random.default_rng(0).random((5, 10)))
kernel = sys.modules["dask_kernels.maps.gcws"]._gcws_dense
print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
"""


@pytest.fixture
def read_only_package(tmp_path):
    src, ro = tmp_path / "src", tmp_path / "ro"
    ro.mkdir()
    shutil.copytree(os.path.dirname(dask_kernels.__file__), src / "dask_kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    mounted = subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True).returncode == 0
    if mounted:
        mounted = subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], capture_output=True).returncode == 0
        if not mounted:
            subprocess.run(["umount", str(ro)], check=True)
    if not mounted:
        pytest.skip("a read-only bind mount needs root (CAP_SYS_ADMIN) here")
    try:
        yield ro
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_read_only_install_compiles_once_into_the_user_cache(read_only_package, tmp_path):
    with pytest.raises(OSError):
        (read_only_package / "dask_kernels" / "probe").write_text("x")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(read_only_package))
    runs = [subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True,
                           cwd=tmp_path).stdout.split() for _ in range(2)]
    assert runs == [["0", "1"], ["1", "0"]], runs  # compiled by the first process only
    assert list((tmp_path / "home" / ".cache" / "numba").rglob("_gcws_kernels._gcws_dense-*.nbi"))
