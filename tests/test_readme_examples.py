"""The README's examples run as written.

Every ```python block of README.md runs in a fresh interpreter (``python -c``, as if pasted into
one: the package is imported first there, as a user's would be), in an empty folder. The bash
block of command lines runs in a folder holding the files it names (``X.npy``, ``y.npy``,
``new.npy``, ``job.toml``), small versions of a user's data. The quick start stays the two
commands ``make demo`` and ``make test``, first of the README's commands, and both are targets
of the Makefile (running them is the demo's and the suite's own business).
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "README.md")) as _f:
    README = _f.read()

#: ``(language, code)`` of every fenced block of the README, in order.
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.S | re.M)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
BASH = [code for lang, code in BLOCKS if lang == "bash"]
#: The bash block of ``dask-kernels`` command lines (the batch example).
CLI = [code for code in BASH if code.lstrip().startswith("dask-kernels ")]


def _commands(code):
    """The command lines of a bash block, comments and blank lines dropped."""
    lines = (line.split("#", 1)[0].strip() for line in code.splitlines())
    return [line for line in lines if line]


def _run(args, cwd, **kwargs):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, **kwargs)
    assert r.returncode == 0, f"{args[:2]} exited with {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    return r


def test_the_quick_start_is_make_demo_and_make_test_first():
    assert BASH and _commands(BASH[0]) == ["make demo", "make test"]
    first_code = next(code for lang, code in BLOCKS if lang in ("bash", "python"))
    assert first_code == BASH[0]
    with open(os.path.join(ROOT, "Makefile")) as f:
        targets = {m.group(1) for m in re.finditer(r"^([\w-]+):", f.read(), re.M)}
    assert {"demo", "test"} <= targets


def test_the_readme_has_its_examples():
    # one example each for the library and the cluster; one block of command lines
    assert len(PYTHON) >= 2 and len(CLI) == 1


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_python_example_runs(index, tmp_path):
    _run([sys.executable, "-c", PYTHON[index]], cwd=tmp_path)


@pytest.mark.slow
def test_command_line_example_runs(tmp_path):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    np.save(tmp_path / "X.npy", X[:1500])
    np.save(tmp_path / "y.npy", y[:1500])
    np.save(tmp_path / "new.npy", X[1500:])
    (tmp_path / "job.toml").write_text(
        '[input]\npath = "X.npy"\nlabels = "y.npy"\n\n'
        '[map]\nmethod = "gcws"\nparams = { n_components = 64, bits = 8 }\n\n'
        '[store]\npath = "job.zarr"\n\n'
        '[training]\noutput = "job.dk"\nepochs = 2\n\n'
        '[[outputs]]\ninput = "new.npy"\npath = "job_predictions.zarr"\n')
    commands = _commands(CLI[0])
    assert commands[-1] == "dask-kernels run job.toml"
    _run(["bash", "-e", "-c", "\n".join(commands)], cwd=tmp_path)
    # what the commands write: the README's store, model and predictions; the job file's
    for name in ("features.zarr", "model.dk", "predictions.zarr", "job.zarr", "job.dk", "job_predictions.zarr"):
        assert (tmp_path / name).exists(), name
