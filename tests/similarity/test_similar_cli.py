"""``dask-kernels similar``: argument errors as one line, before any cluster starts."""

import numpy as np

import dask_kernels.maps.base  # noqa: F401
from dask_kernels import GCWS, featurize

from _cli import one_line_error


def _store(tmp_path):
    X = np.random.default_rng(0).random((30, 5))
    return featurize(X, GCWS(n_components=16, bits=8), store=str(tmp_path / "s.zarr"), progress=False).path


def test_errors_name_the_flag(tmp_path, capsys):
    store = _store(tmp_path)
    line = one_line_error(capsys, ["similar", str(tmp_path / "nope.zarr"), "--threshold", "0.8", "-o", "p.parquet"])
    assert "store" in line and "no such file" in line
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--bands", "4", "-o", "p.parquet"])
    assert "--bands and --rows" in line
    (tmp_path / "p.parquet").mkdir()
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "-o", str(tmp_path / "p.parquet")])
    assert "already exists" in line
    line = one_line_error(capsys, ["similar", store, "--threshold", "0", "-o", str(tmp_path / "q.parquet")])
    assert "--threshold" in line


def test_min_recall_and_raw_rows_are_checked_before_any_work(tmp_path, capsys):
    store = _store(tmp_path)
    out = str(tmp_path / "p.parquet")
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--min-recall", "0", "-o", out])
    assert "--min-recall" in line
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--min-recall", "0.9", "--bands", "4",
                                   "--rows", "4", "-o", out])
    assert "--min-recall" in line and "--bands" in line
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--raw", str(tmp_path / "no.npy"),
                                   "-o", out])
    assert "--raw" in line and "no such file" in line
    np.save(tmp_path / "short.npy", np.zeros((29, 5)))  # the store has 30 rows
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--raw", str(tmp_path / "short.npy"),
                                   "--workers", "1", "--no-progress", "-o", out])
    assert "--raw" in line and "short.npy" in line and "expected 30 rows" in line, line  # it said "X"
    np.save(tmp_path / "narrow.npy", np.zeros((30, 4)))
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--raw", str(tmp_path / "narrow.npy"),
                                   "--no-progress", "-o", out])
    assert line.startswith("dask-kernels similar: error: --raw ") and "rows of 4 columns" in line, line


def test_raw_rows_keep_pairs_on_exact_gmm_and_min_recall_reaches_the_join(tmp_path, monkeypatch):
    import pandas as pd

    import dask_kernels.similarity as similarity
    from dask_kernels.cli import main
    from dask_kernels.exact.gmm import gmm_kernel

    rng = np.random.default_rng(3)
    X = rng.random((60, 8))
    X[30:60] = X[:30] * rng.uniform(0.9, 1.1, (30, 8))  # 30 near copies, GMM about 0.9
    np.save(tmp_path / "X.npy", X)
    store = featurize(X, GCWS(n_components=128, bits=8, sampler="dart", scale=None, seed=2),
                      store=str(tmp_path / "s.zarr"), progress=False).path
    seen = []
    join = similarity.similarity_join
    monkeypatch.setattr(similarity, "similarity_join", lambda *a, **kw: seen.append(kw) or join(*a, **kw))
    argv = ["similar", store, "--threshold", "0.8", "--workers", "1", "--no-progress", "--min-recall", "0.99",
            "--raw", str(tmp_path / "X.npy"), "-o", str(tmp_path / "p.parquet")]
    assert main(argv) == 0
    assert seen[0]["min_recall"] == 0.99
    pairs = pd.read_parquet(tmp_path / "p.parquet")
    np.testing.assert_allclose(pairs["exact"], gmm_kernel(X, X)[pairs["i"], pairs["j"]])
    assert len(pairs) >= 25 and (pairs["exact"] >= 0.8).all()


def test_pass_memory_takes_a_size_and_refuses_bad_ones(tmp_path, capsys):
    import pytest

    from dask_kernels.cli import main
    from dask_kernels.cli._args import byte_size

    assert byte_size("256MiB") == 256 * 2**20 and byte_size("1GiB") == 2**30 and byte_size("64") == 64 * 2**20
    store = _store(tmp_path)
    out = str(tmp_path / "p.parquet")
    for bad, why in (("lots", "expected a size"), ("0", "positive"), ("-5MiB", "positive")):
        with pytest.raises(SystemExit) as info:  # argparse's type check: status 2, usage on stderr
            main(["similar", store, "--threshold", "0.8", f"--pass-memory={bad}", "-o", out])
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert "--pass-memory" in err and why in err, err
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.8", "--pass-memory", "512KiB", "-o", out])
    assert "--pass-memory" in line and "at least 1MiB" in line, line


def test_an_interrupted_join_leaves_no_pairs_at_the_output(tmp_path, monkeypatch):
    """The pairs were written straight to -o: an interrupted or failed join left a folder of some
    of them there, readable as if complete, which the re-run then refused as existing. They are
    written under a temporary name now, renamed to -o once all are written."""
    import os

    import dask_kernels._progress as progress
    from dask_kernels.cli import main

    store = _store(tmp_path)
    out = tmp_path / "p.parquet"

    def interrupted(futures, **kw):  # Ctrl-C once every part is written
        for f in futures:
            f.result()
        raise KeyboardInterrupt

    monkeypatch.setattr(progress, "wait_futures", interrupted)
    assert main(["similar", store, "--threshold", "0.5", "-o", str(out)]) == 130
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if "dk-tmp" in p]
    monkeypatch.undo()
    assert main(["similar", store, "--threshold", "0.5", "--no-progress", "-o", str(out)]) == 0
    assert out.is_dir() and not [p for p in os.listdir(tmp_path) if "dk-tmp" in p]


def test_overwrite_replaces_pairs_similar_wrote_and_nothing_else(tmp_path, capsys):
    """Re-running a search had no --overwrite (predict, train and featurize have one): the
    user deleted the folder by hand. Now it replaces a folder of pairs that similar wrote; a
    folder of predictions, one with a file of the user's, or one without the marker is refused."""
    import os

    import pandas as pd

    from dask_kernels.cli import main

    store = _store(tmp_path)
    out = tmp_path / "p.parquet"
    argv = ["similar", store, "--threshold", "0.5", "--no-progress", "-o", str(out)]
    assert main(argv) == 0
    first = pd.read_parquet(out)
    capsys.readouterr()  # the successful run's own lines
    line = one_line_error(capsys, argv)
    assert "already exists" in line and "--overwrite" in line
    assert main(argv + ["--overwrite"]) == 0  # replaced: the same pairs, no temporary or old folder left
    pd.testing.assert_frame_equal(pd.read_parquet(out), first)
    assert sorted(os.listdir(tmp_path)) == ["p.parquet", "s.zarr"]
    capsys.readouterr()
    (out / "notes.txt").write_text("mine")
    line = one_line_error(capsys, argv + ["--overwrite"])
    assert "notes.txt" in line and (out / "notes.txt").exists()
    mine = tmp_path / "mine.parquet"
    mine.mkdir()
    pd.DataFrame({"i": [0]}).to_parquet(mine / "part.0.parquet")
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.5", "--overwrite", "-o", str(mine)])
    assert "not written by dask-kernels similar" in line and (mine / "part.0.parquet").exists()
    predicted = tmp_path / "pred.parquet"
    np.save(tmp_path / "X.npy", np.random.default_rng(0).random((30, 5)))
    np.save(tmp_path / "y.npy", np.arange(30) % 2)
    assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "gcws",
                 "--n-components", "16", "--epochs", "1", "--no-progress", "-o", str(tmp_path / "m.dk")]) == 0
    assert main(["predict", str(tmp_path / "m.dk"), str(tmp_path / "X.npy"), "-o", str(predicted)]) == 0
    capsys.readouterr()
    line = one_line_error(capsys, ["similar", store, "--threshold", "0.5", "--overwrite", "-o", str(predicted)])
    assert "not written by dask-kernels similar" in line and predicted.is_dir()


def test_raw_rows_holding_nan_are_an_error_naming_the_file_and_row(tmp_path, capsys):
    from dask_kernels.cli import main

    store = _store(tmp_path)
    X = np.random.default_rng(0).random((30, 5))  # the store's rows
    X[7, 2] = np.nan
    np.save(tmp_path / "X.npy", X)
    assert main(["similar", store, "--threshold", "0.5", "--raw", str(tmp_path / "X.npy"), "--workers", "1",
                 "--no-progress", "-o", str(tmp_path / "p.parquet")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error: Input contains NaN or infinity (nan) in row 7 of " in err, err
    assert "X.npy, column 2" in err, err
    assert not (tmp_path / "p.parquet").exists()


def test_the_icws_warning_names_the_command_line_flags(tmp_path):
    # it named only the Python arguments (sampler='dart', X=), while featurize's default is ICWS
    from dask_kernels.cli import main

    import pytest

    store = _store(tmp_path)  # featurize's default sampler, ICWS
    with pytest.warns(UserWarning, match=r"lean high.*\(--param sampler=dart\).*similar --raw"):
        assert main(["similar", store, "--threshold", "0.5", "--workers", "1", "--no-progress", "-o",
                     str(tmp_path / "p.parquet")]) == 0


def test_the_summary_says_whether_pairs_were_kept_on_the_estimate_or_the_exact_gmm(tmp_path, capsys):
    # without --raw it said "pairs at GMM >= t" of pairs kept on their code estimate
    from dask_kernels.cli import main

    store = _store(tmp_path)
    np.save(tmp_path / "X.npy", np.random.default_rng(0).random((30, 5)))  # the store's rows
    base = ["similar", store, "--threshold", "0.5", "--workers", "1", "--no-progress"]
    assert main(base + ["-o", str(tmp_path / "a.parquet")]) == 0
    assert " pairs at estimated GMM >= 0.5 among 30 rows" in capsys.readouterr().out
    assert main(base + ["--raw", str(tmp_path / "X.npy"), "-o", str(tmp_path / "b.parquet")]) == 0
    assert " pairs at GMM >= 0.5 among 30 rows" in capsys.readouterr().out


def test_an_output_named_as_another_format_is_refused(tmp_path, capsys):
    # -o pairs.csv wrote a folder of Parquet files named pairs.csv
    store = _store(tmp_path)
    for name in ("pairs.csv", "pairs.npy", "pairs.CSV.gz"):
        line = one_line_error(capsys, ["similar", store, "--threshold", "0.5", "-o", str(tmp_path / name)])
        assert "Parquet dataset" in line and "NAME.parquet" in line, line
        assert not (tmp_path / name).exists()
