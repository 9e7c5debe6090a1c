"""``dask-kernels info`` on a saved model (map, estimator, classes, history) and on an appended
store (each segment's own rows and block size). Before, a model was refused as "not a feature
store" and an appended store reported its first segment's block size for every block."""

import json

import numpy as np

from _cli import one_line_error
from dask_kernels.cli import main


def _info(capsys, path):
    assert main(["info", path, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_info_on_a_saved_model(tmp_path, local_cluster, capsys):
    rng = np.random.default_rng(0)
    X = rng.random((120, 4))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", np.where(X[:, 0] > 0.5, 3, 7))
    model = str(tmp_path / "m.dk")
    assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "gcws",
                 "--param", "n_components=16", "--epochs", "2", "-o", model, "--scheduler", local_cluster]) == 0
    capsys.readouterr()
    s = _info(capsys, model)
    assert (s["kind"], s["method"], s["n_features_in"]) == ("model", "gcws", 4)
    assert s["params"]["n_components"] == 16 and s["classes"] == [3, 7]
    assert len(s["history"]) >= 1 and s["estimator"]
    assert main(["info", model]) == 0
    text = capsys.readouterr().out
    assert "map: gcws(" in text and "classes: 2 (3, 7)" in text


def test_info_on_an_appended_store_shows_each_segments_blocks(tmp_path, local_cluster, capsys):
    rng = np.random.default_rng(1)
    store = str(tmp_path / "s.zarr")
    for day, (rows, block_rows) in enumerate([(100, 40), (30, 10)]):
        np.save(tmp_path / f"d{day}.npy", rng.random((rows, 3)))
        assert main(["featurize", str(tmp_path / f"d{day}.npy"), store, "--append", "--param", "n_components=8",
                     "--block-rows", str(block_rows), "--no-progress", "--scheduler", local_cluster]) == 0
    capsys.readouterr()
    s = _info(capsys, store)
    assert s["rows"] == 130 and s["blocks"] == 3 + 3
    assert s["segments"] == [{"rows": 100, "blocks": 3, "block_rows": 40}, {"rows": 30, "blocks": 3, "block_rows": 10}]


def test_info_on_something_else_says_what_it_reads(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    message = one_line_error(capsys, ["info", str(tmp_path / "notes")])
    assert "neither a dask_kernels feature store nor a saved model" in message


def test_info_says_what_the_map_learned_from_the_rows(tmp_path, capsys):
    rng = np.random.default_rng(2)
    X = rng.random((80, 3)) * [1.0, 100.0, 1e4]
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] > 0.5).astype(int))
    model = str(tmp_path / "m.dk")
    assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "rff",
                 "--n-components", "8", "--epochs", "1", "--no-progress", "-o", model]) == 0
    capsys.readouterr()
    s = _info(capsys, model)
    from dask_kernels import load_model

    assert s["learned"] == {"gamma": load_model(model).feature_map.gamma_, "scale": "minmax"}
    assert main(["info", model]) == 0
    assert "learned from the rows: gamma=" in capsys.readouterr().out
    store = str(tmp_path / "s.zarr")
    assert main(["featurize", str(tmp_path / "X.npy"), store, "--no-progress"]) == 0
    capsys.readouterr()
    assert _info(capsys, store)["learned"] == {"scale": "minmax"}  # GCWS's default scale


def test_info_says_the_rows_each_block_holds(tmp_path, capsys):
    # a 500-row segment of block_rows 1500 read "1 block of 1500 rows"
    rng = np.random.default_rng(2)
    store = str(tmp_path / "s.zarr")
    for day, (rows, block_rows) in enumerate([(100, 40), (30, 1500)]):
        np.save(tmp_path / f"d{day}.npy", rng.random((rows, 3)))
        assert main(["featurize", str(tmp_path / f"d{day}.npy"), store, "--append", "--param", "n_components=8",
                     "--block-rows", str(block_rows), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["info", store]) == 0
    out = capsys.readouterr().out
    assert "segment 0: 100 rows, 3 blocks of 40 rows (the last 20)" in out
    assert "segment 1: 30 rows, 1 block of 30 rows" in out
    np.save(tmp_path / "even.npy", rng.random((80, 3)))
    assert main(["featurize", str(tmp_path / "even.npy"), str(tmp_path / "e.zarr"), "--param", "n_components=8",
                 "--block-rows", "40", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["info", str(tmp_path / "e.zarr")]) == 0
    assert "blocks: 2 blocks of 40 rows, 2 done" in capsys.readouterr().out
