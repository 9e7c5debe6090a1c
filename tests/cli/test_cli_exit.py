"""``dask-kernels`` run as a program ends without interpreter teardown (``cli/_exit.py``): every
exit handler still runs, the output is complete and the exit status is the command's; objects
left to finalization are not finalized. ``main(argv)`` in a Python session returns as before."""

import os
import subprocess
import sys
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = textwrap.dedent(
    """
    import atexit, sys
    from dask_kernels.cli import main

    class Finalized:
        def __del__(self):
            print("finalized", flush=True)

    kept = Finalized()  # a module global: freed only by interpreter teardown
    atexit.register(print, "later exit handler ran")  # registered after the CLI's: runs before it
    sys.argv = ["dask-kernels", *sys.argv[1:]]
    if __name__ == "__main__":
        sys.exit(main(None if sys.argv[1] != "--in-session" else sys.argv[2:]))
    """
)


def _run(*args):
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})


def _store(tmp_path):
    from dask_kernels import GCWS, featurize

    X = np.random.default_rng(0).random((40, 5))
    path = str(tmp_path / "f.zarr")
    featurize(X, GCWS(n_components=8).fit(X), store=path, progress=False)
    return path


def test_a_command_ends_with_its_output_status_and_exit_handlers_but_no_teardown(tmp_path):
    r = _run("info", _store(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "rows: 40 x 8 uint8" in r.stdout  # flushed before the process ended
    assert "later exit handler ran" in r.stdout
    assert "finalized" not in r.stdout


def test_a_failing_command_keeps_its_status_and_message(tmp_path):
    r = _run("info", str(tmp_path / "missing.zarr"))
    assert r.returncode == 1
    assert r.stderr.startswith("dask-kernels info: error:") and "missing.zarr" in r.stderr
    assert "later exit handler ran" in r.stdout
    assert "finalized" not in r.stdout


def test_main_with_arguments_in_a_session_returns_and_the_interpreter_ends_as_usual(tmp_path):
    r = _run("--in-session", "info", _store(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "rows: 40 x 8 uint8" in r.stdout and "later exit handler ran" in r.stdout
    assert "finalized" in r.stdout


def test_a_reader_that_left_is_no_error(tmp_path):
    # `dask-kernels info m.dk | head -1`: once head has its line, the next write meets a pipe with
    # no reader; a shell reports 141 (SIGPIPE) for such a writer, and it prints no error
    store = _store(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the first line was written
    try:
        r = subprocess.run([sys.executable, "-c", "import sys; from dask_kernels.cli import main; sys.exit(main())",
                            "info", store], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": ROOT})
    finally:
        os.close(write_end)
    assert r.returncode == 141 and r.stderr == "", r.stderr


def test_sigterm_stops_a_command_as_ctrl_c_does(tmp_path):
    # cron's `timeout`, systemd and Kubernetes stop a job with SIGTERM: it ended the process on the
    # spot (no line in the log, temporary outputs left, status -15), unlike Ctrl-C
    import signal
    import time

    job = tmp_path / "job.toml"
    np.save(tmp_path / "X.npy", np.ones((10, 3)))
    job.write_text('[input]\npath = "X.npy"\n[map]\nmethod = "gcws"\n[store]\npath = "f.zarr"\n'
                   '[cluster]\nscheduler_file = "never.json"\nscheduler_file_timeout = 120\n')
    p = subprocess.Popen([sys.executable, "-m", "dask_kernels.cli", "run", str(job)], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert p.stdout.readline().startswith("== [input]/[map]/[store]: ")  # the step started
    time.sleep(1)  # and waits for its scheduler file
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143, (p.returncode, err)
    assert err.strip().splitlines()[-1] == ("dask-kernels run: terminated; a store keeps its finished blocks: "
                                            "re-run the same job to resume"), err
