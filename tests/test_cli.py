"""The command line: the quick-start demo runs end to end and reports both models."""

import re

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
