"""A model's coefficients are one key of a prediction graph, not a copy per task. Before, a
26-class GCWS k=1024 model put its 26 MiB of coefficients into every ``predict`` graph
("Sending large graph of size 26 MiB")."""

import cloudpickle
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, KernelModel


def test_predict_graph_does_not_hold_the_coefficients():
    rng = np.random.default_rng(0)
    X = rng.random((400, 8))
    y = rng.integers(0, 20, 400)
    g = GCWS(n_components=512, bits=8).fit(X)
    model = KernelModel(g, SGDClassifier(loss="log_loss", max_iter=1, tol=None).fit(g.expand(g.transform(X)), y))
    coef_bytes = model.estimator.coef_.nbytes  # 20 x 131072 float64: 20 MiB
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, Client(cluster):
        for blocks in (4, 40):  # the graph does not grow with the blocks either
            result = model.predict(da.from_array(X, chunks=len(X) // blocks))
            graph_bytes = len(cloudpickle.dumps(dict(result.__dask_graph__())))
            assert graph_bytes < coef_bytes / 50, (blocks, graph_bytes)
            assert (result.compute() == model.predict(X)).all()
    # without a Client: one literal key, computed by the local scheduler
    result = model.predict_proba(da.from_array(X, chunks=100))
    # the same values as in memory (NaN included: scikit-learn 1.6.0's one-vs-rest proba divides 0 by 0 here)
    np.testing.assert_array_equal(result.compute(), model.predict_proba(X))
