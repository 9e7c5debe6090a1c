"""Integrity: damaged, missing or swapped chunks are detected naming the array, block
and rows (reading, opening or training), and a re-run rewrites them; an edited spec is refused."""

import json
import os
import shutil

import dask.array as da
import numpy as np
import pytest

from dask_kernels import GCWS, featurize, fit_incremental, open_store

RNG = np.random.default_rng(5)
X = np.abs(RNG.standard_normal((600, 12)))
Y = (X[:, 0] > X[:, 1]).astype(np.int64)
G = GCWS(n_components=32, seed=7).fit(X[:1])
REF = G.transform(X)


def _chunk(path, array, i):
    return os.path.join(path, array, "c", str(i), *(["0"] if array in ("features", "done") else []))


def _bytes(path, array, i):
    with open(_chunk(path, array, i), "rb") as f:
        return f.read()


@pytest.fixture
def store(tmp_path):
    p = str(tmp_path / "s.zarr")
    featurize(da.from_array(X, chunks=(100, 12)), G, labels=Y, store=p, progress=False)
    return p


def _flip_bit(path, array, i, byte=7):
    c = _chunk(path, array, i)
    b = bytearray(open(c, "rb").read())
    b[byte] ^= 0x10
    open(c, "wb").write(bytes(b))


def _damage(kind, p):
    if kind == "bit-flip":
        _flip_bit(p, "features", 2)
    elif kind == "missing":
        os.remove(_chunk(p, "features", 2))
    elif kind == "swapped":
        shutil.copyfile(_chunk(p, "features", 4), _chunk(p, "features", 2))
    elif kind == "labels-bit-flip":
        _flip_bit(p, "labels", 2, byte=3)


@pytest.mark.parametrize("kind", ["bit-flip", "missing", "swapped", "labels-bit-flip"])
def test_damaged_chunk_is_named_and_rewritten_by_a_rerun(store, kind):
    before = {a: _bytes(store, a, 2) for a in ("features", "labels")}
    _damage(kind, store)
    array = "labels" if kind.startswith("labels") else "features"
    s = open_store(store)
    with pytest.raises(ValueError, match=rf"array '{array}', block 2 \(rows 200\.\.299\)"):
        (s.labels if array == "labels" else s.features).compute()
    # the other blocks still read, and a full check lists just the damaged block
    assert np.array_equal(s.features[:200].compute(), REF[:200])
    bad = s.verify_blocks()
    assert list(bad) == [2] and f"array '{array}', block 2" in bad[2]
    again = featurize(da.from_array(X, chunks=(100, 12)), G, labels=Y, store=store, progress=False)
    assert again.run_stats == {"computed": 1, "skipped": 5}
    assert {a: _bytes(store, a, 2) for a in ("features", "labels")} == before
    assert np.array_equal(open_store(store).features.compute(), REF)


def test_missing_chunk_says_so(store):
    os.remove(_chunk(store, "features", 5))
    with pytest.raises(ValueError, match=r"block 5 \(rows 500\.\.599\).*chunk file is missing"):
        open_store(store).features[550:560].compute()


def test_training_on_a_damaged_store_fails_naming_the_block(store):
    _flip_bit(store, "features", 3)
    from sklearn.linear_model import SGDClassifier

    with pytest.raises(ValueError, match=r"array 'features', block 3 \(rows 300\.\.399\)"):
        fit_incremental(SGDClassifier(random_state=0), store, epochs=1, progress=False)


def test_damaged_done_record_means_not_done(store):
    _flip_bit(store, "done", 1, byte=2)
    s = open_store(store)
    assert s.done.tolist() == [True, False, True, True, True, True]
    with pytest.raises(ValueError, match=r"block 1 \(rows 100\.\.199\)"):
        s.features.compute()
    again = featurize(da.from_array(X, chunks=(100, 12)), G, labels=Y, store=store, progress=False)
    assert again.run_stats == {"computed": 1, "skipped": 5} and np.array_equal(again.features.compute(), REF)


def test_a_block_read_reads_its_done_record_once_and_checks_every_array_against_it(store, monkeypatch):
    import zarr

    reads, get = [], zarr.Array.__getitem__

    def counting(self, key):
        reads.append(self.basename)
        return get(self, key)

    monkeypatch.setattr(zarr.Array, "__getitem__", counting)
    block = open_store(store).read_block(3)
    assert reads.count("done") == 1 and sorted(block) == ["features", "labels"]
    assert np.array_equal(block["features"], REF[300:400]) and np.array_equal(block["labels"], Y[300:400])
    shutil.copyfile(_chunk(store, "labels", 4), _chunk(store, "labels", 3))  # the shared record still checks labels
    with pytest.raises(ValueError, match=r"array 'labels', block 3 \(rows 300\.\.399\)"):
        open_store(store).read_block(3)


def _edit_attrs(path, edit):
    meta_path = os.path.join(path, "zarr.json")
    meta = json.load(open(meta_path))
    edit(meta["attributes"]["dask_kernels"])
    meta.pop("consolidated_metadata", None)
    json.dump(meta, open(meta_path, "w"))


def test_edited_spec_is_refused_on_open_resume_and_training(store):
    def edit(info):
        info["spec"]["params"]["n_components"] = 31
    _edit_attrs(store, edit)
    with pytest.raises(ValueError, match=r"spec.*params\.n_components: 32 .* 31"):
        open_store(store)
    with pytest.raises(ValueError, match=r"params\.n_components"):
        featurize(da.from_array(X, chunks=(100, 12)), G, labels=Y, store=store, progress=False)
    from sklearn.linear_model import SGDClassifier

    with pytest.raises(ValueError, match=r"params\.n_components"):
        fit_incremental(SGDClassifier(random_state=0), store, epochs=1, progress=False)


def test_spec_and_fingerprint_edited_together_are_refused(store):
    from dask_kernels.pipeline.fingerprint import fingerprint_hash

    def edit(info):
        info["spec"]["params"]["seed"] = 8
        info["fingerprint"]["spec"]["params"]["seed"] = 8
        info["fingerprint_sha256"] = fingerprint_hash(info["fingerprint"])
    _edit_attrs(store, edit)
    s = open_store(store)  # consistent attributes, but no block was written under this job
    with pytest.raises(ValueError, match=r"block \d \(rows \d+\.\.\d+\).*done record"):
        s.features.compute()


# -- special files in place of a chunk: refused naming it before any read -------------------------
def _replace(path, array, i, how):
    c = _chunk(path, array, i)
    os.remove(c)
    if how == "fifo":
        os.mkfifo(c)
    elif how == "device":
        os.symlink("/dev/zero", c)  # read whole, it never ends
    else:
        with open(c, "wb") as f:  # sparse: 64 MiB where 3,200 bytes (before compression) belong
            f.truncate(64 * 2**20)
    return c


@pytest.mark.parametrize("how, says", [("fifo", "is a FIFO"), ("device", "is a character device"),
                                       ("oversized", "holds 67,108,864 bytes")])
@pytest.mark.parametrize("array", ["features", "labels", "done"])
def test_a_chunk_that_is_no_regular_file_or_too_large_is_refused_unread(store, how, says, array):
    from _special_files import deadline, memory_cap

    chunk = _replace(store, array, 2, how)
    with deadline(fifo=chunk if how == "fifo" else None), memory_cap():
        with pytest.raises(ValueError) as info:
            s = open_store(store)
            s.done  # noqa: B018 - reads every done record
            s.read_block(2)
    msg = str(info.value)
    assert f"array '{array}', block 2" in msg and chunk in msg and says in msg, msg
    if array != "done":
        with deadline(fifo=chunk if how == "fifo" else None), memory_cap():
            bad = open_store(store).verify_blocks()
        assert list(bad) == [2] and chunk in bad[2]
