"""``dask-kernels train`` while it runs: progress and each epoch's row as soon as the epoch ends
(also into a pipe), the schedule's metric chosen with ``--metric`` and shown, ``--min-epochs``,
``--checkpoint-interval``, and the same options in a job file."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _schedule import check_history

from dask_kernels import load_model
from dask_kernels.cli import main
from dask_kernels.cli.train import METRICS
from dask_kernels.learn.metrics import LOWER_IS_BETTER
from dask_kernels.learn.report import header, row

# each epoch announces itself on stderr before it trains; steps' lines after every step
CHILD = textwrap.dedent("""
    import sys
    from dask_kernels.learn import incremental

    begin = incremental._Run.begin_epoch

    def announced(run):
        print(f"BEGIN {run.state.epoch + 1}", file=sys.stderr, flush=True)
        begin(run)

    incremental._Run.begin_epoch = announced
    incremental.PROGRESS_SECONDS = 0.0
    from dask_kernels.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.fixture
def rows(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 6))
    y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(np.int64) + (X[:, 3] > 1)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    return [str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--block-rows", "200"]


def test_each_epoch_row_reaches_a_pipe_before_the_next_epoch_starts(rows, tmp_path):
    out = subprocess.run([sys.executable, "-c", CHILD, "train", *rows, "--epochs", "3", "--eta0", "0.05",
                          "--validation-fraction", "0.1", "-o", str(tmp_path / "m.dk")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    lines = out.stdout.splitlines()
    begins = [lines.index(f"BEGIN {e}") for e in (1, 2, 3)]
    history = load_model(tmp_path / "m.dk").history
    for e in (1, 2):  # the row of epoch e, and lines within it, come before epoch e + 1 begins
        first_row = lines.index(row(history[e - 1]))
        assert begins[e - 1] < first_row < begins[e], lines
        assert any(ln.startswith(f"epoch {e}  step ") for ln in lines[begins[e - 1]:first_row])
    assert lines.index(header(history[0])) < lines.index(row(history[0]))
    assert any(ln.startswith("the schedule decides on held-out erp") for ln in lines[:begins[1]])


def test_metric_chooses_what_decides_and_the_table_shows_it(rows, tmp_path, capsys):
    for metric in ("log_loss", "accuracy"):
        out = tmp_path / f"{metric}.dk"
        assert main(["train", *rows, "--epochs", "6", "--eta0", "2", "--metric", metric,
                     "--n-iter-no-change", "2", "--min-epochs", "3", "-o", str(out)]) == 0
        std = capsys.readouterr()
        history = load_model(out).history
        assert history[0]["metric"] == metric
        check_history(history, n_iter_no_change=2, min_epochs=3)
        table = std.out.splitlines()[-len(history) - 2:-1]  # then the "saved ..." line
        assert table == [header(history[0])] + [row(r) for r in history]
        assert table[0].split()[-4] == metric
        assert f"decides on held-out {metric} ({'lower' if LOWER_IS_BETTER[metric] else 'higher'} is better)" in std.err


def test_the_metric_choices_are_the_schedule_metrics():
    assert set(METRICS) == {"auto", *LOWER_IS_BETTER}


def test_an_unknown_metric_is_refused(rows, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["train", *rows, "--metric", "f1", "-o", str(tmp_path / "m.dk")])
    assert "--metric: invalid choice: 'f1'" in capsys.readouterr().err


def test_checkpoint_interval_checkpoints_within_epochs(rows, tmp_path, monkeypatch):
    from dask_kernels.learn.checkpointer import Checkpointer

    saved = []
    save = Checkpointer.save
    monkeypatch.setattr(Checkpointer, "save", lambda self, e, snap, st: (saved.append(st.position),
                                                                         save(self, e, snap, st)))
    ck = tmp_path / "run.ckpt"
    assert main(["train", *rows, "--epochs", "2", "--checkpoint", str(ck), "--checkpoint-interval", "1e-9",
                 "-o", str(tmp_path / "m.dk")]) == 0
    # 6 blocks: a checkpoint after each of steps 1 to 5 (the interval has always passed), then the epoch's end
    assert saved == [1, 2, 3, 4, 5, 0] * 2


def test_a_job_file_passes_metric_min_epochs_and_checkpoint_interval(tmp_path, capsys):
    np.save(tmp_path / "X.npy", np.random.default_rng(0).random((300, 4)))
    np.save(tmp_path / "y.npy", np.arange(300) % 2)
    (tmp_path / "job.toml").write_text(textwrap.dedent("""
        [input]
        path = "X.npy"
        labels = "y.npy"
        [map]
        method = "gcws"
        [store]
        path = "f.zarr"
        [training]
        output = "m.dk"
        metric = "log_loss"
        min_epochs = 2
        checkpoint = "run.ckpt"
        checkpoint_interval = 30
        progress = false
    """))
    assert main(["run", str(tmp_path / "job.toml"), "--dry-run"]) == 0
    train = capsys.readouterr().out.splitlines()[1]
    assert "--metric log_loss" in train and "--min-epochs 2" in train and "--checkpoint-interval 30" in train
    assert "--no-progress" in train


def test_no_progress_leaves_stderr_quiet_and_the_table_on_stdout(rows, tmp_path, capsys):
    assert main(["train", *rows, "--epochs", "2", "--no-progress", "-o", str(tmp_path / "m.dk")]) == 0
    std = capsys.readouterr()
    assert std.err == ""
    assert row(load_model(tmp_path / "m.dk").history[-1]) in std.out.splitlines()


def test_the_table_is_shown_once_where_stdout_and_stderr_meet(rows, tmp_path):
    """Into one file (``> log 2>&1``, or one terminal) the progress has already shown the epoch
    table: it is not repeated; with stdout elsewhere, stdout gets the whole table."""
    def run(name, **streams):
        out = subprocess.run([sys.executable, "-m", "dask_kernels.cli", "train", *rows, "--epochs", "2",
                              "-o", str(tmp_path / f"{name}.dk")], timeout=300, cwd=tmp_path, **streams)
        assert out.returncode == 0
        return load_model(tmp_path / f"{name}.dk").history

    with open(tmp_path / "log", "w") as log:
        history = run("one", stdout=log, stderr=subprocess.STDOUT)
    lines = (tmp_path / "log").read_text().splitlines()
    assert lines.count(header(history[0])) == 1 and lines.count(row(history[-1])) == 1, lines
    assert lines[-1].startswith("saved KernelModel(")
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        history = run("two", stdout=out, stderr=err)
    for name in ("out", "err"):
        lines = (tmp_path / name).read_text().splitlines()
        assert lines.count(header(history[0])) == 1 and lines.count(row(history[-1])) == 1, (name, lines)
    assert "in 6 blocks" in (tmp_path / "out").read_text()
