"""WarmKernels: workers load a map's kernels at start, including workers that join later; the
CLI's cluster registers it for the command's map."""

import argparse
import json
import time

import numpy as np
import pytest

from dask_kernels.cli._cluster import client_for, warm_plugin, worker_start_method
from dask_kernels.warm import WarmKernels, warm_maps

distributed = pytest.importorskip("distributed")


def _warm_seconds(dask_worker):
    plugin = dask_worker.plugins.get(WarmKernels.name)
    return None if plugin is None else dict(plugin.seconds)


def test_warm_maps_runs_every_method_and_spec():
    from dask_kernels import GCWS

    spec = GCWS(n_components=16, sampler="dart").fit(np.ones((3, 5))).spec()
    seconds = warm_maps(["gcws", "fastfood"], [spec, json.dumps(spec)])
    assert set(seconds) == {"gcws", "fastfood", "spec:gcws"}
    assert all(s >= 0 for s in seconds.values())
    with pytest.raises(KeyError):
        warm_maps(["no-such-map"])


def test_every_registered_map_warms_and_a_failure_does_not_raise(caplog):
    from dask_kernels import registered_maps

    methods = sorted(m for m, cls in registered_maps().items() if cls.__module__.startswith("dask_kernels."))
    assert set(warm_maps(methods)) == set(methods)
    plugin = WarmKernels(methods=["no-such-map"])
    plugin.setup(worker=None)  # logged, not raised: the worker starts anyway
    assert plugin.seconds == {} and "no-such-map" in caplog.text


def test_workers_present_and_joining_later_are_warmed():
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as client:
            client.register_plugin(WarmKernels(methods=["gcws"]))
            first = client.run(_warm_seconds)
            assert [set(s) for s in first.values()] == [{"gcws"}]
            cluster.scale(2)  # a worker joining after the plugin was registered
            client.wait_for_workers(2, timeout=60)
            deadline = time.monotonic() + 60
            while True:
                seen = client.run(_warm_seconds)
                if len(seen) == 2 and all(s and "gcws" in s for s in seen.values()):
                    break
                assert time.monotonic() < deadline, seen
                time.sleep(0.2)
            assert set(seen) - set(first)  # the new worker ran the plugin too


def test_the_cli_registers_the_commands_map(tmp_path):
    args = argparse.Namespace(method="rff", spec=None, workers=1, threads_per_worker=1)
    assert warm_plugin(args).methods == ["rff"]
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"method": "fastfood", "params": {}}))
    assert warm_plugin(argparse.Namespace(method="gcws", spec=str(spec))).methods == ["fastfood"]
    spec.write_text("not json")
    assert warm_plugin(argparse.Namespace(method="gcws", spec=str(spec))) is None  # the command says why
    assert warm_plugin(argparse.Namespace(method="nope", spec=None)) is None
    assert warm_plugin(argparse.Namespace()) is None  # commands without a map
    with client_for(args) as client:
        seconds = client.run(_warm_seconds)
        methods = client.run(lambda: __import__("multiprocessing").get_start_method(allow_none=True))
    assert [set(s) for s in seconds.values()] == [{"rff"}]
    assert list(methods.values()) == [worker_start_method()]  # the worker was started that way


def test_featurize_without_a_method_warms_its_default_map():
    # featurize's map is GCWS unless --method/--spec say otherwise: its workers (and the forkserver,
    # which reads the same method) load GCWS's kernels; an append runs the store's map, not known yet
    from dask_kernels.cli import build_parser
    from dask_kernels.cli._cluster import _command_method

    args = build_parser().parse_args(["featurize", "x.npy", "out.zarr"])
    assert _command_method(args) == "gcws" and warm_plugin(args).methods == ["gcws"]
    args = build_parser().parse_args(["featurize", "x.npy", "out.zarr", "--method", "rff"])
    assert warm_plugin(args).methods == ["rff"]
    assert warm_plugin(build_parser().parse_args(["featurize", "x.npy", "out.zarr", "--append"])) is None


def test_workers_start_from_a_forkserver_unless_configured_otherwise():
    import multiprocessing

    import dask

    expect = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert worker_start_method() == expect
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        assert worker_start_method() == "fork"  # a user's explicit choice is kept


def test_prepare_runs_in_another_thread_and_its_failure_is_ignored():
    import threading

    from dask_kernels.cli._cluster import _run_beside

    ran = []
    wait = _run_beside(lambda: ran.append(threading.current_thread().name))
    wait()
    assert ran == ["dask-kernels-prepare"]  # done when the waiter returns, not in this thread

    def fail():
        raise RuntimeError("not loaded")

    _run_beside(fail)()  # no exception: what it loads is loaded (and reported) where it is used
    _run_beside(None)()


def test_what_the_command_and_the_workers_load_while_they_wait():
    """featurize's prepare loads Zarr and Numba's input check; WarmKernels.setup imports Zarr in
    a thread (in a fresh process: neither is imported by importing the modules)."""
    import subprocess
    import sys

    code = """if True:
        import sys, threading
        from dask_kernels.cli.featurize import _prepare_client
        from dask_kernels.warm import WarmKernels
        from dask_kernels import blocks
        assert "zarr" not in sys.modules and not blocks._first_bad_row.signatures
        WarmKernels().setup(worker=None)
        [t.join() for t in threading.enumerate() if t.name == "dask-kernels-imports"]
        assert "zarr.codecs" in sys.modules
        _prepare_client()
        assert blocks._first_bad_row.signatures  # Numba started: the fit's first check is ready
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr


def _loop_intervals(server):
    """Milliseconds between a server's event loop health ticks and between its system monitor's
    samples, and whether the monitor reads the host's disk counters."""
    return {"tick": server.periodic_callbacks["tick"].callback_time,
            "monitor": server.periodic_callbacks["monitor"].callback_time,
            "disk": server.monitor.monitor_disk_io}


def _worker_intervals(dask_worker):
    import dask

    return {**_loop_intervals(dask_worker), "profile": dask.config.get("distributed.worker.profile.enabled")}


def _scheduler_intervals(dask_scheduler):
    return _loop_intervals(dask_scheduler)


def test_the_commands_own_cluster_runs_without_dashboard_only_polling():
    # the scheduler (in this process) and the workers tick every 500 ms, not 20, and sample the
    # system every 5 s, without the host's disk counters (a running scheduler is left as it is)
    args = argparse.Namespace(method=None, spec=None, workers=1, threads_per_worker=1)
    expect = {"tick": 500, "monitor": 5000, "disk": False}
    with client_for(args) as client:
        assert list(client.run(_worker_intervals).values()) == [{**expect, "profile": False}]
        assert client.run_on_scheduler(_scheduler_intervals) == expect
        assert [_loop_intervals(n) for n in client.cluster.workers.values()] == [expect]  # the nannies
        # and results come straight from the workers, not through the scheduler in this process (a
        # second copy of each here while it passed on: a training step is 30 MB)
        assert client.direct_to_workers is True
