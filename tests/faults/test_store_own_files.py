"""Stores touch only their own files.

``overwrite=True`` replaces a store only when it holds nothing but its own entries (a user's
file kept inside it is refused, never deleted); a model is never saved inside a store, nor a
store written inside a model or inside another store; the list of appended segments and each
segment's identity are checked, so an emptied list or a swapped segment is refused naming it;
store paths that are symbolic links (or dangling ones) are named as such.
"""

import json
import os
import shutil

import fsspec
import numpy as np
import pytest
import zarr
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, KernelModel, featurize, open_store
from dask_kernels.cli import main
from dask_kernels.pipeline.store import StoreIntegrityError

RNG = np.random.default_rng(21)
X = np.abs(RNG.standard_normal((120, 6)))
Y = (X[:, 0] > 0.8).astype(np.int64)
G = GCWS(n_components=8, seed=3).fit(X[:1])
REF = G.transform(X)
DAYS = [X[:60], X[60:100], X[100:]]


def _snapshot(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(root) for f in files}


@pytest.fixture(scope="module")
def model():
    est = SGDClassifier(random_state=0).fit(G.expand(REF), Y)
    return KernelModel(G, est)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("own")
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", Y)
    return d


def _one_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# -- overwrite replaces only a store that holds nothing but its own entries --------------------
@pytest.mark.parametrize("where", ["model.dk/model.json", "notes.txt", "features/notes.txt", "segments/x/y.csv"])
def test_overwrite_refuses_a_store_holding_a_user_file_and_keeps_both(tmp_path, where):
    p = tmp_path / "s.zarr"
    featurize(X, G, store=str(p), block_rows=50, progress=False)
    user = p / where
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("keep me")
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError, match=rf"{p} is a feature store that also holds entries dask_kernels did not "
                                         rf"write \('{where.split('/')[0]}.*overwrite=True replaces only"):
        featurize(X[:80], G, store=str(p), block_rows=40, overwrite=True, progress=False)
    assert _snapshot(tmp_path) == before  # nothing replaced, renamed or left beside it
    assert np.array_equal(open_store(str(p)).features.compute(), REF)


def test_overwrite_of_a_store_of_only_its_own_entries_replaces_it(tmp_path):
    p = str(tmp_path / "s.zarr")
    for x in DAYS:  # segments, and a map with fitted arrays would add "fitted": all own entries
        featurize(x, G, store=p, block_rows=30, mode="append", progress=False)
    s = featurize(X[:50], G, store=p, block_rows=25, overwrite=True, progress=False)
    assert s.n_rows == 50 and s.segments == [] and not os.path.exists(os.path.join(p, "segments"))
    assert sorted(os.listdir(tmp_path)) == ["s.zarr"]


def test_an_old_store_folder_is_emptied_of_its_own_entries_only(tmp_path):
    # what replacing does with the store it moved aside, should a file appear in it meanwhile
    from dask_kernels.pipeline.creation import remove_own

    p = tmp_path / "old.zarr"
    featurize(X, G, store=str(p), block_rows=50, progress=False)
    (p / "features" / "late.txt").write_text("appeared")
    with pytest.warns(UserWarning, match=r"left .*old\.zarr: it holds entries dask_kernels did not write "
                                         r"\('features/late\.txt'\)"):
        remove_own(str(p))
    assert _snapshot(p) == {os.path.join("features", "late.txt"): b"appeared"}


def test_overwrite_on_an_fsspec_url_refuses_a_store_holding_a_user_object():
    url = "memory://dk-own/s.zarr"
    featurize(X, G, store=url, block_rows=50, progress=False)
    fs = fsspec.filesystem("memory")
    fs.pipe("/dk-own/s.zarr/model.dk/model.json", b"{}")
    with pytest.raises(ValueError, match=r"also holds entries dask_kernels did not write \('model\.dk/model\.json'\)"):
        featurize(X, G, store=url, block_rows=40, overwrite=True, progress=False)
    assert fs.cat("/dk-own/s.zarr/model.dk/model.json") == b"{}"
    assert np.array_equal(open_store(url).features.compute(), REF)
    fs.rm("/dk-own/s.zarr/model.dk", recursive=True)
    assert featurize(X, G, store=url, block_rows=40, overwrite=True, progress=False).n_blocks == 3


def test_on_s3_a_user_object_in_a_store_survives_overwrite_and_no_model_is_saved_there(s3, model):
    opts, fs = s3
    url = "s3://dk-test/own/lab.zarr"
    featurize(X, G, store=url, block_rows=50, storage_options=opts, progress=False)
    fs.pipe("dk-test/own/lab.zarr/notes.txt", b"keep me")
    with pytest.raises(ValueError, match=r"also holds entries dask_kernels did not write \('notes\.txt'\)"):
        featurize(X, G, store=url, block_rows=40, overwrite=True, storage_options=opts, progress=False)
    assert fs.cat("dk-test/own/lab.zarr/notes.txt") == b"keep me"
    with pytest.raises(ValueError, match=rf"{url}/model\.dk is inside the feature store"):
        model.save(url + "/model.dk", storage_options=opts)
    fs.invalidate_cache()
    assert not fs.exists("dk-test/own/lab.zarr/model.dk")
    assert np.array_equal(open_store(url, storage_options=opts).features.compute(), REF)


# -- no model inside a store, no store inside a model or another store -------------------------
def test_a_model_is_not_saved_inside_a_store(tmp_path, model):
    p = tmp_path / "lab.zarr"
    featurize(X, G, store=str(p), block_rows=50, progress=False)
    for where in (p / "model.dk", p / "features" / "m"):
        with pytest.raises(ValueError, match=rf"{where} is inside the feature store {p}; .*outside"):
            model.save(where)
    (tmp_path / "link").symlink_to(p)  # reached through a link: the same store
    with pytest.raises(ValueError, match=rf"inside the feature store {p}"):
        model.save(tmp_path / "link" / "model.dk")
    assert sorted(os.listdir(p)) == ["done", "features", "zarr.json"]


def test_a_store_is_not_written_inside_a_model_or_another_store(tmp_path, model):
    m = model.save(tmp_path / "m.dk")
    with pytest.raises(ValueError, match=rf"{m}/f\.zarr is inside the saved model {m}; "):
        featurize(X, G, store=os.path.join(m, "f.zarr"), progress=False)
    assert sorted(os.listdir(m)) == ["arrays.npz", "model.json"]
    outer = tmp_path / "outer.zarr"
    featurize(X, G, store=str(outer), block_rows=50, progress=False)
    with pytest.raises(ValueError, match=rf"inside the feature store {outer}"):
        featurize(X, G, store=str(outer / "inner.zarr"), progress=False)
    assert sorted(os.listdir(outer)) == ["done", "features", "zarr.json"]


def test_a_model_url_inside_a_store_url_is_refused(model):
    url = "memory://dk-own-nest/lab.zarr"
    featurize(X, G, store=url, block_rows=50, progress=False)
    with pytest.raises(ValueError, match=r"lab\.zarr/model\.dk is inside the feature store"):
        model.save(url + "/model.dk")
    assert not fsspec.filesystem("memory").exists("/dk-own-nest/lab.zarr/model.dk")


def test_cli_train_into_a_store_and_featurize_into_a_model_are_refused(files, tmp_path, capsys, model):
    store = tmp_path / "lab.zarr"
    featurize(X, G, labels=Y, store=str(store), block_rows=50, progress=False)
    rc = main(["train", str(store), "--epochs", "1", "-o", str(store / "model.dk")])
    line = _one_line(capsys.readouterr().err)
    assert rc == 1 and f"{store}/model.dk is inside the feature store {store}" in line, line
    assert sorted(os.listdir(store)) == ["done", "features", "labels", "zarr.json"]
    shutil.copytree(model.save(tmp_path / "kept.dk"), store / "model.dk")  # as an earlier version saved it
    rc = main(["featurize", str(files / "X.npy"), str(store), "--overwrite"])
    line = _one_line(capsys.readouterr().err)
    assert rc == 1 and "holds entries dask_kernels did not write ('model.dk/')" in line, line
    assert sorted(os.listdir(store / "model.dk")) == ["arrays.npz", "model.json"]
    m = model.save(tmp_path / "m.dk")
    rc = main(["featurize", str(files / "X.npy"), os.path.join(m, "f.zarr"), "--method", "gcws"])
    line = _one_line(capsys.readouterr().err)
    assert rc == 1 and line.startswith("dask-kernels featurize: error: output ") and f"inside the saved model {m}" in line
    assert sorted(os.listdir(m)) == ["arrays.npz", "model.json"]


# -- the segment list and each segment's identity ----------------------------------------------
def _appended(path):
    for x in DAYS:
        featurize(x, G, store=path, block_rows=30, mode="append", progress=False)
    return open_store(path)


def _edit_attrs(path, edit):
    top = os.path.join(path, "zarr.json")
    meta = json.load(open(top))
    edit(meta["attributes"]["dask_kernels"])
    json.dump(meta, open(top, "w"))


def test_an_emptied_segment_list_is_refused(tmp_path):
    p = str(tmp_path / "s.zarr")
    assert _appended(p).n_rows == 120
    _edit_attrs(p, lambda info: info.update(segments=[]))
    with pytest.raises(ValueError, match=rf"{p}: attribute dask_kernels\['segments'\] .*0 now.* does not match "
                                         r"dask_kernels\['segments_sha256'\]"):
        open_store(p)
    _edit_attrs(p, lambda info: (info.pop("segments"), info.pop("segments_sha256")))
    with pytest.raises(ValueError, match=r"dask_kernels\['segments'\] is missing"):
        open_store(p)


def test_a_swapped_or_rewritten_segment_is_refused_naming_it(tmp_path):
    a, b = str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr")
    name = _appended(a).info["segments"][1]["name"]
    _appended(b)  # same map, same rows: segments of the same names and spec, another store's
    seg = os.path.join(a, "segments", name)
    shutil.rmtree(seg)
    shutil.copytree(os.path.join(b, "segments", name), seg)
    with pytest.raises(StoreIntegrityError, match=rf"{a}: segment {name} \({seg}\) is not the store that was "
                                                  r"appended .*lease"):
        open_store(a)
    # a segment replaced by other rows
    c = str(tmp_path / "c.zarr")
    name = _appended(c).info["segments"][0]["name"]
    seg = os.path.join(c, "segments", name)
    featurize(X[:40] * 2, G, store=seg, block_rows=30, overwrite=True, progress=False)
    with pytest.raises(StoreIntegrityError, match=rf"segment {name} .* holds another job's rows"):
        open_store(c)


def test_a_segment_whose_done_records_changed_is_refused_and_a_rerun_repairs_it(tmp_path):
    p = str(tmp_path / "s.zarr")
    name = _appended(p).info["segments"][0]["name"]
    seg = os.path.join(p, "segments", name)
    g = zarr.open_group(seg, mode="r+", use_consolidated=False)
    g["done"][0, 5] = 12345  # block 0's features digest in its record: no longer the appended one
    with pytest.raises(StoreIntegrityError, match=rf"segment {name} .*done records changed since it was appended"):
        open_store(p)
    s = featurize(DAYS[1], G, store=p, block_rows=30, mode="append", progress=False)  # rewrites that block
    assert s.run_stats["computed"] == 1 and np.array_equal(s.features.compute(), REF)


def _as_names_only(path):
    """The layout earlier versions wrote: format 2, segments listed by name only."""
    _edit_attrs(path, lambda info: info.update(format=2, segments=[e["name"] for e in info.pop("segments")])
                or info.pop("segments_sha256"))


def test_a_store_listing_segments_by_name_opens_and_an_append_upgrades_it(tmp_path):
    p = str(tmp_path / "s.zarr")
    for x in DAYS[:2]:
        featurize(x, G, store=p, block_rows=30, mode="append", progress=False)
    _as_names_only(p)
    s = open_store(p)
    assert s.format == 2 and s.n_rows == 100 and np.array_equal(s.features.compute(), REF[:100])
    s = featurize(DAYS[2], G, store=p, block_rows=30, mode="append", progress=False)
    assert s.format == 4 and len(s.info["segments"]) == 2 and np.array_equal(s.features.compute(), REF)
    _edit_attrs(p, lambda info: info["segments"].pop())
    with pytest.raises(ValueError, match="segments_sha256"):
        open_store(p)


# -- symbolic links --------------------------------------------------------------------------------
def test_a_store_path_that_is_a_link_is_named_as_one(tmp_path):
    real = tmp_path / "real.zarr"
    featurize(X, G, store=str(real), block_rows=50, progress=False)
    link = tmp_path / "link.zarr"
    link.symlink_to(real)
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=rf"{link} is a symbolic link \(to {real}\); .*pass the path it "
                                             rf"points to \({real}\)"):
            featurize(X, G, store=str(link), block_rows=40, overwrite=overwrite, progress=False)
    assert os.path.islink(link) and np.array_equal(open_store(str(link)).features.compute(), REF)  # reading: fine


def test_a_dangling_link_is_named_as_one(tmp_path):
    link = tmp_path / "gone.zarr"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=rf"{link} is a dangling symbolic link \(to {tmp_path}/nowhere, which "
                                         r"does not exist\)"):
        featurize(X, G, store=str(link), block_rows=40, progress=False)
    with pytest.raises(FileNotFoundError, match=rf"{link} is a dangling symbolic link .*: no feature store there"):
        open_store(str(link))
    assert os.path.islink(link) and sorted(os.listdir(tmp_path)) == ["gone.zarr"]

