"""Valid input is not refused: an svmlight file whose first partitions hold no rows (a long
comment header) trains with an unfitted map, which is fitted on the first non-empty block.
Before: "Found array with 0 sample(s)"."""

import numpy as np
from sklearn.datasets import dump_svmlight_file
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, fit_incremental, load_model, read_svmlight
from dask_kernels.cli import main


def _file(tmp_path):
    rng = np.random.default_rng(0)
    X = np.round(rng.random((300, 6)), 4)
    y = (X[:, 0] > 0.5).astype(int)
    body = tmp_path / "body.svm"
    dump_svmlight_file(X, y, str(body), zero_based=False)
    path = tmp_path / "d.svm"
    header = "".join(f"# provenance line {i}: {'x' * 60}\n" for i in range(200))  # ~15 kB of comments
    path.write_text(header + body.read_text())
    return str(path), X, y


def test_unfitted_map_fits_on_the_first_nonempty_partition(tmp_path):
    path, X, y = _file(tmp_path)
    src = read_svmlight(path, blocksize=4096)
    assert src.row_counts[0] == 0 and src.row_counts[1] == 0 and src.n_rows == 300
    gcws = GCWS(n_components=32, seed=0, scale=None)  # a map fitted on the first rows
    model = fit_incremental(SGDClassifier(random_state=0), src, feature_map=gcws, epochs=2, progress=False)
    assert model.feature_map.n_features_in_ == 6 and len(model.history) == 2
    # fitted on the first rows: the same map as one fitted on them directly
    first = next(i for i, n in enumerate(src.row_counts) if n)
    ref = GCWS(n_components=32, seed=0, scale=None).fit(src.loader(first)[0])
    assert model.feature_map.spec() == ref.spec()
    assert model.score(X, y) > 0.7


def test_cli_train_on_a_file_with_a_long_comment_header(tmp_path, capsys):
    path, X, y = _file(tmp_path)
    # the default eta0 comes from the first block that has rows (not NaN from an empty one)
    assert main(["train", path, "--method", "gcws", "--n-components", "32", "--epochs", "2", "--blocksize", "4096",
                 "-o", str(tmp_path / "m.dk")]) == 0
    model = load_model(tmp_path / "m.dk")
    assert np.isfinite(model.estimator.eta0) and model.estimator.eta0 > 0
