"""The CLI starts its LocalCluster's forkserver first, preloaded with the command's map warm: the
workers fork from it with the package, the map's Numba kernels and what a store write runs (Zarr,
the digest kernel) loaded, before any task or warm-up plugin runs. Each case runs in a fresh
process (the forkserver is one per process)."""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent(
    """
    import argparse, json, os, sys
    from dask_kernels.cli._cluster import start_worker_server, worker_start_method
    from dask_kernels.cli._forkserver import WARM_METHODS_ENV

    def state():
        import sys
        gcws = sys.modules.get("dask_kernels.maps._gcws_kernels")  # GCWS's kernels (its class is not needed)
        kernel = getattr(gcws, "_gcws_dense", None)
        from dask_kernels.pipeline._digest import _hash
        return {"pipeline": "dask_kernels.pipeline.tasks" in sys.modules,
                "gcws_compiled": bool(kernel is not None and kernel.signatures),
                "writer": "zarr.codecs" in sys.modules and bool(_hash.signatures)}

    if __name__ == "__main__":
        method = sys.argv[1]
        start_worker_server(argparse.Namespace(method=method, spec=None, scheduler=None, scheduler_file=None))
        assert WARM_METHODS_ENV not in os.environ  # restored in the command's own environment
        import dask
        from distributed import Client, LocalCluster
        with dask.config.set({"distributed.worker.multiprocessing-method": worker_start_method()}):
            cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0")
        with cluster, Client(cluster) as client:  # no warm-up plugin registered
            print(json.dumps(list(client.run(state).values())[0]))
    """
)


def _worker_state(method):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, method], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr
    import json

    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_workers_fork_from_a_server_with_the_commands_map_loaded():
    assert _worker_state("gcws") == {"pipeline": True, "gcws_compiled": True, "writer": True}


def test_an_unknown_method_still_starts_workers():
    # the command reports the unknown map itself; the server must not fail its workers over it
    state = _worker_state("no-such-map")
    assert state["pipeline"] is True and state["writer"] is True
