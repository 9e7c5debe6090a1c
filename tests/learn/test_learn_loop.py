"""The loop's pieces on their own: the schedule's rule and the checkpoint format version."""

import io
import json
import zipfile

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import fit_incremental
from dask_kernels.learn.loop import LoopState, Schedule


def test_schedule_halves_on_small_gains_and_reverts_on_losses():
    rule = Schedule(min_improvement=0.01, halve=True, revert=True, n_iter_no_change=2)
    s = LoopState(eta0=1.0)
    assert rule.step(s, 1.0, can_revert=False) == "first" and s.eta0 == 1.0
    assert rule.step(s, 0.5, can_revert=True) == "keep" and s.eta0 == 1.0 and s.prev == 0.5
    assert rule.step(s, 0.499, can_revert=True) == "halve" and s.eta0 == 0.5  # 0.2% < 1%
    assert rule.step(s, 0.6, can_revert=True) == "revert" and s.eta0 == 0.25
    assert s.prev == 0.499 and s.best == 0.499 and s.stale == 1 and not s.done
    assert rule.step(s, 0.7, can_revert=False) == "halve" and s.stale == 2 and s.done  # no snapshot: no revert


def test_schedule_without_halving_keeps_the_rate():
    rule = Schedule(halve=False, revert=True, early_stopping=False, n_iter_no_change=1)
    s = LoopState(eta0=None)
    for loss in (1.0, 0.999, 1.5):
        rule.step(s, loss, can_revert=True)
    assert s.eta0 is None and not s.done and s.prev == 0.999


def test_a_format_1_checkpoint_is_refused_with_a_clear_message(tmp_path):
    X = np.random.default_rng(0).random((300, 3))
    y = (X[:, 0] > 0.5).astype(int)
    ck = tmp_path / "old.ckpt"
    kw = dict(block_rows=100, epochs=2, checkpoint=ck, progress=False)
    fit_incremental(SGDClassifier(random_state=0), X, y, **dict(kw, epochs=1))
    with zipfile.ZipFile(ck) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(str(np.load(io.BytesIO(members["__meta__.npy"]))))
    meta["format"] = "dask-kernels-checkpoint-1"
    buf = io.BytesIO()
    np.save(buf, np.array(json.dumps(meta)))
    members["__meta__.npy"] = buf.getvalue()
    with zipfile.ZipFile(ck, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    before = ck.read_bytes()
    for resume in (True, False):
        with pytest.raises(ValueError, match="older format 'dask-kernels-checkpoint-1'") as info:
            fit_incremental(SGDClassifier(random_state=0), X, y, resume=resume, **kw)
        assert str(ck) in str(info.value)
    assert ck.read_bytes() == before  # never overwritten


def test_halving_never_takes_eta0_to_zero():
    # a run told to go on for many epochs without improving used to halve eta0 to 0.0, and the
    # model it saved could not be loaded (eta0 must be positive); it stops before that instead
    rule, state = Schedule(halve=True, revert=False, min_epochs=10**6), LoopState(eta0=1.0)
    for epoch in range(1200):
        state.epoch = epoch
        rule.step(state, 1.0, can_revert=False)
        assert state.eta0 >= np.finfo(np.float64).tiny
        if state.done:
            break
    assert state.done and state.eta0 > 0
