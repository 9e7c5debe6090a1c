"""The command line: the quick-start demo runs end to end and reports both models; featurize reads
svmlight with either index base."""

import re

import numpy as np
import pytest

from dask_kernels.cli import build_parser, main


def test_subcommands_are_discovered():
    text = build_parser().format_help()
    assert {"demo", "featurize", "train"} <= set(text.split("{")[1].split("}")[0].split(","))


def test_demo_runs_on_a_local_cluster(capsys):
    assert main(["demo", "--n-components", "64", "--workers", "1", "--partitions", "3", "--epochs", "3"]) == 0
    out = capsys.readouterr().out
    accs = [float(a) for a in re.findall(r"(\d\.\d{4})\s*$", out, flags=re.M)]
    assert len(accs) == 2
    assert all(0.8 < a <= 1.0 for a in accs)  # digits is easy: both models are far above chance (0.1)
    assert "rows/s" in out


@pytest.mark.parametrize("zero_based", [False, True])
def test_featurize_reads_one_and_zero_based_svmlight(tmp_path, zero_based):
    from sklearn.datasets import dump_svmlight_file

    from dask_kernels.cli.featurize import read_input

    X = np.round(np.random.default_rng(0).random((30, 6)), 3) * (np.arange(6) != 5)  # column 0 used, 5 never
    path = str(tmp_path / "x.svm")
    dump_svmlight_file(X, np.arange(30) % 2, path, zero_based=zero_based)
    argv = ["featurize", path, str(tmp_path / "out.zarr"), "--n-features", "6"] + ["--zero-based"] * zero_based
    rows, labels, _ = read_input(build_parser().parse_args(argv))[0].compute()
    assert np.array_equal(rows.toarray(), X) and labels.tolist() == [i % 2 for i in range(30)]
