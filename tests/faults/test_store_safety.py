"""Never delete what we did not write; crash-safe creation (the store side).

A store path must be absent, empty, or a dask_kernels store; ``overwrite=True`` replaces only a
store of ours. Everything else is refused, with or without ``overwrite``, and left as it was.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import zarr

from dask_kernels import GCWS, featurize, open_store

RNG = np.random.default_rng(3)
X = np.abs(RNG.standard_normal((200, 6)))
G = GCWS(n_components=8, seed=1).fit(X[:1])
REF = G.transform(X)


def _snapshot(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def _user_folder(p):
    os.makedirs(p / "sub")
    (p / "thesis.tex").write_text("years of work")
    (p / "sub" / "data.csv").write_text("1,2,3\n")


def _zarr_v2_group(p):
    g = zarr.open_group(str(p), mode="w", zarr_format=2)
    g.create_array("x", shape=(4,), dtype="f8")[:] = 1.0


def _zarr_v3_group(p):
    g = zarr.open_group(str(p), mode="w", zarr_format=3)
    g.attrs["owner"] = "someone else"
    g.create_array("x", shape=(4,), dtype="f8")[:] = 2.0


@pytest.mark.parametrize("make", [_user_folder, _zarr_v2_group, _zarr_v3_group], ids=["folder", "zarr-v2", "zarr-v3"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_foreign_directory_is_refused_and_survives(tmp_path, make, overwrite):
    p = tmp_path / "target"
    make(p)
    before = _snapshot(p)
    with pytest.raises(ValueError, match=r"is not a dask_kernels feature store .*refusing"):
        featurize(X, G, store=str(p), block_rows=50, overwrite=overwrite, progress=False)
    assert _snapshot(p) == before
    assert sorted(os.listdir(tmp_path)) == ["target"]  # nothing left beside it either


@pytest.mark.parametrize("overwrite", [False, True])
def test_existing_file_is_refused_and_survives(tmp_path, overwrite):
    p = tmp_path / "notes.txt"
    p.write_text("keep me")
    with pytest.raises(ValueError, match="it is a file"):
        featurize(X, G, store=str(p), block_rows=50, overwrite=overwrite, progress=False)
    assert p.read_text() == "keep me"


def test_empty_folder_is_used_and_overwrite_replaces_only_our_store(tmp_path):
    p = tmp_path / "empty"
    p.mkdir()
    s = featurize(X, G, store=str(p), block_rows=50, progress=False)
    assert np.array_equal(s.features.compute(), REF)
    G2 = GCWS(n_components=4, seed=2).fit(X[:1])
    s2 = featurize(X, G2, store=str(p), block_rows=50, overwrite=True, progress=False)
    assert np.array_equal(open_store(str(p)).features.compute(), G2.transform(X)) and s2.complete
    assert sorted(os.listdir(tmp_path)) == ["empty"]  # no temporary or old copies left


_KILLED_CREATION = textwrap.dedent("""
    import os, sys
    import numpy as np
    import zarr
    from dask_kernels import GCWS, featurize

    real = zarr.Group.create_array

    def create_then_die(self, name, *args, **kwargs):
        arr = real(self, name, *args, **kwargs)
        if name == "done":  # every array exists, the attributes may not: die like SIGKILL
            os._exit(9)
        return arr

    zarr.Group.create_array = create_then_die
    X = np.abs(np.random.default_rng(3).standard_normal((200, 6)))
    featurize(X, GCWS(n_components=8, seed=1).fit(X[:1]), store=sys.argv[1], block_rows=50, progress=False)
""")


@pytest.mark.parametrize("url", [False, True], ids=["path", "file-url"])
def test_creation_killed_after_the_arrays_does_not_block_the_rerun(tmp_path, url):
    target = str(tmp_path / "s.zarr")
    arg = "file://" + target if url else target
    r = subprocess.run([sys.executable, "-c", _KILLED_CREATION, arg], capture_output=True, text=True, timeout=120)
    assert r.returncode == 9, r.stderr[-2000:]
    s = featurize(X, G, store=arg, block_rows=50, progress=False)
    assert s.complete and np.array_equal(s.features.compute(), REF)
    if not url:  # the killed creation's temporary folder is removed once it is stale
        left = [n for n in os.listdir(tmp_path) if n != "s.zarr"]
        assert len(left) == 1 and left[0].startswith(".s.zarr.dk-new-")
        user_file = tmp_path / ".s.zarr.dk-new-notours"
        user_file.mkdir()
        (user_file / "x.txt").write_text("not a store")
        for n in (left[0], user_file.name):
            os.utime(tmp_path / n, (0, 0))
        # another job's blocks: overwrite creates the store anew (the same job's would be resumed)
        featurize(X, G, store=arg, block_rows=40, overwrite=True, progress=False)
        assert sorted(os.listdir(tmp_path)) == [".s.zarr.dk-new-notours", "s.zarr"]
        assert (user_file / "x.txt").read_text() == "not a store"


def test_creation_failing_half_way_on_an_object_store_is_replaced_by_the_rerun(monkeypatch):
    # fsspec URLs without rename (memory://, s3://): attributes are written first, so a
    # half-made store is recognisably ours and the next run replaces it.
    url = "memory://dk-half-made/s.zarr"
    real = zarr.Group.create_array

    def create_then_fail(self, name, *args, **kwargs):
        arr = real(self, name, *args, **kwargs)
        if name == "done":
            raise KeyboardInterrupt("killed")
        return arr

    monkeypatch.setattr(zarr.Group, "create_array", create_then_fail)
    with pytest.raises(KeyboardInterrupt):
        featurize(X, G, store=url, block_rows=50, progress=False)
    monkeypatch.setattr(zarr.Group, "create_array", real)
    s = featurize(X, G, store=url, block_rows=50, progress=False)
    assert s.complete and np.array_equal(s.features.compute(), REF)


def _deep_json(p):
    os.makedirs(p)
    (p / "zarr.json").write_text("[" * 100_000 + "]" * 100_000)  # valid JSON, too deep for the parser


@pytest.mark.parametrize("argv", [["info", "{p}"], ["train", "{p}", "-o", "{m}"], ["featurize", "{x}", "{p}"]])
def test_a_zarr_json_nested_too_deep_is_a_foreign_folder_not_a_traceback(tmp_path, capsys, argv):
    from _cli import one_line_error

    p, x = tmp_path / "s.zarr", tmp_path / "x.npy"
    _deep_json(p)
    np.save(x, X)
    before = _snapshot(p)
    line = one_line_error(capsys, [a.format(p=p, m=tmp_path / "m", x=x) for a in argv])
    assert str(p) in line and "Recursion" not in line, line
    assert _snapshot(p) == before
    if argv[0] == "featurize":
        assert "its zarr.json is not valid JSON" in line
