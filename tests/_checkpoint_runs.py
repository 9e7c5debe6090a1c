"""The small checkpointed training run that the checkpoint tests interrupt and resume, on local
files (tests/faults/test_model_checkpoint.py) and on S3 (tests/test_s3_checkpoint.py)."""

from sklearn.linear_model import SGDClassifier

from dask_kernels import fit_incremental


def checkpointed_fit(X, y, feature_map, checkpoint, **kw):
    """``fit_incremental`` of a seeded SGD model, 3 epochs of 100-row blocks, a checkpoint every
    2 blocks at ``checkpoint``; ``kw`` overrides any of these."""
    args = dict(feature_map=feature_map, block_rows=100, epochs=3, seed=0, checkpoint=checkpoint,
                checkpoint_every=2, early_stopping=False, progress=False)
    args.update(kw)
    return fit_incremental(SGDClassifier(learning_rate="constant", eta0=0.1, random_state=0), X, y, **args)


class Stop(Exception):
    """Raised by a run's callback to interrupt it."""
