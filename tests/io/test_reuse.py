"""dask_kernels.io._reuse: pooled buffers are handed out again only once no array uses them."""

import pickle
import threading

import numpy as np
import pytest

from dask_kernels.io import _reuse

MB = 1 << 20


@pytest.fixture(autouse=True)
def empty_pool():
    _reuse._kept.clear()
    yield
    _reuse._kept.clear()


def test_a_buffer_is_handed_out_again_once_its_last_view_is_gone():
    a = _reuse.empty(3 * MB)
    rows = a.view(np.float32).reshape(768, 1024)[5:]  # a view of a view: it keeps the buffer too
    address = a.ctypes.data
    del a
    b = _reuse.empty(3 * MB)
    assert not np.shares_memory(b, rows)  # still in use: a new buffer
    rows[:] = 1.0
    del rows
    c = _reuse.empty(3 * MB)  # now it is free: handed out again
    assert c.ctypes.data == address
    assert not np.shares_memory(b, c)


def test_alignment_sizes_and_bounds():
    for nbytes in (10, MB - 1, MB, 5 * MB + 3, _reuse.MAX_BYTES + 1):
        a = _reuse.empty(nbytes, align=64)
        assert a.dtype == np.uint8 and a.shape == (nbytes,) and a.ctypes.data % 64 == 0 and a.flags.writeable
    del a
    _reuse._kept.clear()
    a = _reuse.empty(4 * MB)
    del a
    assert _reuse._take(2 * MB) is None  # far larger than asked: not used
    assert _reuse._take(4 * MB) is not None
    small, big = _reuse.empty(MB // 2), _reuse.empty(_reuse.MAX_BYTES + 1)
    del small, big
    assert len(_reuse._kept) == 0  # outside the kept sizes: never pooled
    arrays = [_reuse.empty(2 * MB) for _ in range(_reuse.MAX_KEPT + 3)]
    del arrays
    assert len(_reuse._kept) == _reuse.MAX_KEPT  # the pool never holds more buffers ...
    arrays = [_reuse.empty(_reuse.MAX_BYTES) for _ in range(3)]
    del arrays
    assert sum(len(b) for b in _reuse._kept) <= _reuse.MAX_KEPT_BYTES  # ... nor more bytes


def test_pickled_and_copied_arrays_are_ordinary():
    a = _reuse.empty(2 * MB).view(np.float64)
    a[:] = np.arange(a.size)
    b = pickle.loads(pickle.dumps(a, protocol=5))
    assert np.array_equal(a, b) and not np.shares_memory(a, b)


def test_threads_never_share_a_buffer_in_use():
    """Eight threads take, fill with their own number, check and drop buffers of a few sizes
    many times over: a buffer handed to two users at once would show another thread's bytes."""
    errors = []

    def work(k):
        rng = np.random.default_rng(k)
        for _ in range(200):
            a = _reuse.empty(int(rng.choice([MB, 2 * MB, 3 * MB])))
            a[:] = k
            if (a != k).any():
                errors.append(k)
            del a

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
