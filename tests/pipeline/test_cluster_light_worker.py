"""A worker of the CLI's LocalCluster featurizes GCWS blocks without importing scikit-learn: its
tasks run the map's kernel plan (dask_kernels.maps._plan), and its fork server preloads only
that. Every task function is used (a store from dense rows, a store from sparse partitions, the
lazy array), on one worker, and each gives the bytes of the map's own transform. The case runs
in a fresh process (the fork server is one per process)."""

import json
import os
import subprocess
import sys
import textwrap

import dask_kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(dask_kernels.__file__)))  # the package under test

SCRIPT = textwrap.dedent(
    """
    import argparse, json, sys
    import numpy as np, scipy.sparse as sp
    from dask_kernels.cli._cluster import client_for, start_worker_server

    def loaded():
        import sys
        return sorted(m for m in ("sklearn", "scipy.stats", "pandas", "dask_kernels.maps.base") if m in sys.modules)

    def ran():  # the plans this worker's tasks received (one per spec)
        slots = getattr(sys.modules["dask_kernels.pipeline.tasks"], "_plan_slot", None)
        return None if slots is None else slots.cache_info().currsize

    if __name__ == "__main__":
        args = argparse.Namespace(method="gcws", spec=None, scheduler=None, scheduler_file=None, workers=1,
                                  threads_per_worker=1, debug=False)
        start_worker_server(args)
        folder = sys.argv[1]
        rng = np.random.default_rng(0)
        X = rng.standard_normal((600, 12))
        X[rng.uniform(size=X.shape) < 0.5] = 0.0
        np.save(folder + "/X.npy", X)
        with client_for(args) as client:
            from dask_kernels import GCWS, featurize, read_npy
            from dask_kernels.io import from_sparse
            dense = GCWS(n_components=32, seed=3).fit(X[:1])
            centered = GCWS(n_components=16, center="mean").fit(X)
            out = {}
            a = featurize(read_npy(folder + "/X.npy", block_rows=200), dense, store=folder + "/a.zarr", progress=False)
            b = featurize(from_sparse(sp.csr_matrix(X), block_rows=150), centered, store=folder + "/b.zarr",
                          progress=False)
            out["dense"] = bool(np.array_equal(a.features.compute(), dense.transform(X)))
            out["sparse"] = bool(np.array_equal(b.features.compute(), centered.transform(X)))
            out["lazy"] = bool(np.array_equal(featurize(read_npy(folder + "/X.npy", block_rows=250), dense).compute(),
                               dense.transform(X)))
            out["loaded"] = list(client.run(loaded).values())
            out["plans"] = list(client.run(ran).values())
        print(json.dumps(out))
    """
)


def test_a_worker_featurizes_gcws_without_scikit_learn(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["loaded"] == [[]]  # the one worker ran every task: none of them imported these
    assert out["plans"] == [2]  # and it ran them through the two maps' plans
    assert (out["dense"], out["sparse"], out["lazy"]) == (True, True, True)
