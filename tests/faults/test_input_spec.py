"""from_spec checks every field that reaches a kernel, naming the key, before building the map.

A spec comes from a store's attributes, a model file or a task: anything a person or a bug
can edit. A GCWS ``center`` shorter than the input used to be read out of bounds by the kernel
(wrong codes or a segfault), so that case runs in a subprocess.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from _spec import tampered

from dask_kernels import GCWS, Fastfood, registered_maps
from dask_kernels import from_spec as _from_spec
from dask_kernels.sidecar import map_arrays

D = 6
#: fitted arrays kept beside the spec (Nystroem's landmarks), by method: the spec alone cannot
#: rebuild such a map, so the tests hand them over as a store or a saved model would
_ARRAYS = {}


def _spec(method="gcws", **params):
    X = np.random.default_rng(0).standard_normal((20, D))
    cls = registered_maps()[method]
    if "n_components" in cls._get_param_names():
        params.setdefault("n_components", 16)
    fmap = cls(**params).fit(X)
    _ARRAYS[method] = map_arrays(fmap)
    return fmap.spec()


def from_spec(spec):
    """:func:`dask_kernels.from_spec`, given the sidecar arrays of the map last fitted by ``_spec``."""
    method = spec.get("method") if isinstance(spec, dict) else None
    if method is None and isinstance(spec, str):
        try:
            method = json.loads(spec).get("method")
        except (ValueError, AttributeError):
            method = None
    arrays = _ARRAYS.get(method) if isinstance(method, str) else None
    return _from_spec(spec, arrays=arrays) if arrays is not None else _from_spec(spec)


@pytest.mark.parametrize("method", sorted(registered_maps()))
def test_every_map_round_trips_through_its_spec(method):
    spec = _spec(method)
    assert from_spec(spec).spec() == spec
    assert from_spec(json.dumps(spec)).spec() == spec


@pytest.mark.parametrize("method", sorted(registered_maps()))
@pytest.mark.parametrize(
    "path,value,key",
    [
        (("spec_version",), 2, "spec_version"),
        (("spec_version",), "1", "spec_version"),
        (("spec_version",), True, "spec_version"),
        (("spec_version",), KeyError, "spec_version"),
        (("rng_scheme",), "dk-rng-0", "rng_scheme"),
        (("method",), "nope", "method"),
        (("method",), ["gcws"], "method"),
        (("params",), [], "params"),
        (("params", "n_components"), -3, "params'\\]\\['n_components"),
        (("params", "n_components"), 16.0, "params'\\]\\['n_components"),
        (("params", "seed"), -1, "params'\\]\\['seed"),
        (("params", "seed"), 2**64, "params'\\]\\['seed"),
        (("params", "no_such_param"), 1, "params'\\]\\['no_such_param"),
        (("n_features_in",), 0, "n_features_in"),
        (("n_features_in",), -5, "n_features_in"),
        (("n_features_in",), 10**12, "n_features_in"),
        (("n_features_in",), 6.0, "n_features_in"),
        (("n_features_in",), True, "n_features_in"),
        (("n_features_in",), "6", "n_features_in"),
        (("n_output_features",), 17, "n_output_features"),
        (("output_dtype",), "<f2", "output_dtype"),
        (("state",), [], "state"),
        (("state", "unexpected"), 1.0, "state"),
    ],
)
def test_tampered_field_is_refused_naming_the_key(method, path, value, key):
    spec = _spec(method)
    if path[0] == "params" and len(path) == 2 and path[1] not in spec["params"] and path[1] != "no_such_param":
        pytest.fail(f"{method} has no parameter {path[1]}")  # every registered map has these
    with pytest.raises(ValueError, match=rf"spec\['{key}"):
        from_spec(tampered(spec, path, value))


@pytest.mark.parametrize("text", ["{not json", b"\xff\xfe", "[1, 2]", "null", "3"])
def test_bad_json_or_not_an_object_is_a_value_error(text):
    with pytest.raises(ValueError, match="spec (is not valid JSON|must be a JSON object)"):
        from_spec(text)
    with pytest.raises(ValueError, match="must be a JSON object"):
        from_spec([1, 2])


@pytest.mark.parametrize(
    "method,path,value,key",
    [
        ("rff", ("params", "gamma"), float("nan"), "params'\\]\\['gamma"),
        ("rff", ("params", "gamma"), -1.0, "params'\\]\\['gamma"),
        ("rff", ("params", "kernel"), "cosine", "params'\\]\\['kernel"),
        ("rff", ("params", "dtype"), "float16", "params'\\]\\['dtype"),
        ("nrff", ("params", "gamma"), float("inf"), "params'\\]\\['gamma"),
        ("fastfood", ("params", "sigma"), 1.0, "params'\\]: give gamma or sigma"),
        ("fastfood", ("params", "matern_t"), 0, "params'\\]\\['matern_t"),
        ("gcws", ("params", "bits"), 17, "params'\\]\\['bits"),
        ("gcws", ("params", "table"), "sometimes", "params'\\]\\['table"),
    ],
)
def test_map_parameters_are_checked_by_the_maps_own_rules(method, path, value, key):
    kw = {"gamma": 0.5} if method == "fastfood" else {}
    with pytest.raises(ValueError, match=rf"spec\['{key}"):
        from_spec(tampered(_spec(method, **kw), path, value))


@pytest.mark.parametrize(
    "center,state,match",
    [
        ([0.5] * D, [0.5] * (D - 2), r"spec\['state'\]\['center'\]: has shape \(4,\), expected \(6,\)"),
        ([0.5] * D, [0.5] * (D - 1) + [float("nan")], r"\['center'\]: entry 5 is nan"),
        ([0.5] * D, [0.5] * (D - 1) + [1e308], r"\['center'\]: entry 5 is 1e\+308"),
        ([0.5] * D, [0.5] * (D - 1) + [0.25], r"\['center'\]: differs from spec\['params'\]\['center'\]"),
        ([0.5] * D, None, r"\['center'\]: missing"),
        (None, [0.5] * D, r"\['center'\]: present"),
        ("mean", [[0.5] * D], r"\['center'\]: has shape \(1, 6\)"),
        ("mean", ["a"] * D, r"\['center'\]: expected a list of numbers"),
        ([0.5] * (D - 1) + [float("inf")], [0.5] * D, r"spec\['params'\]: center: entry 5 is inf"),
    ],
)
def test_gcws_center_is_checked(center, state, match):
    spec = _spec("gcws", center="mean")
    spec["params"]["center"] = center
    spec["state"]["center"] = state
    with pytest.raises(ValueError, match=match):
        from_spec(spec)


_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from dask_kernels import from_spec
    spec = json.loads(sys.argv[1])
    try:
        fmap = from_spec(spec)
    except ValueError as e:
        print("refused:", e)
        raise SystemExit(0)
    # accepted: show the damage on wide input (the kernel reads center[i] for every column i)
    X = np.random.default_rng(0).random((64, spec["n_features_in"]))
    print("accepted", fmap.transform(X)[:2].tolist())
    """
)


def test_short_center_is_refused_before_the_kernel_reads_past_it():
    d = 200_000  # wide input: reading this far past a 2-element center leaves the heap
    spec = GCWS(n_components=8, center="mean", table=False).fit(np.random.default_rng(0).random((2, d))).spec()
    spec["state"]["center"] = spec["state"]["center"][:2]
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(spec)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"child died with {proc.returncode}: {proc.stderr[-1500:]}"
    assert proc.stdout.startswith("refused: feature-map spec['state']['center']: has shape (2,)"), proc.stdout


def test_fastfood_spec_with_both_bandwidths_is_refused():
    spec = Fastfood(n_components=8, sigma=2.0).fit(np.zeros((1, D))).spec()
    spec["params"]["gamma"] = 0.5
    with pytest.raises(ValueError, match=r"spec\['params'\]: give gamma or sigma, not both"):
        from_spec(spec)


def test_fit_refuses_a_width_from_spec_would_refuse():
    """A map fitted on wider input than 2**31 would write a spec no process can load."""
    X = sp.csr_matrix((np.ones(2), np.array([0, 2**31], dtype=np.int64), np.array([0, 1, 2])), shape=(2, 2**31 + 1))
    with pytest.raises(ValueError, match="X has 2147483649 features; at most 2147483648"):
        GCWS(n_components=4).fit(X)


#: the maps whose fitted input scaling is in their spec (``scale=``)
SCALED = sorted(m for m, cls in registered_maps().items() if "scale" in cls._get_param_names())


@pytest.mark.parametrize("method", SCALED)
@pytest.mark.parametrize(
    "value,key",
    [
        (KeyError, r"state'\]: (missing 'scale'|expected the keys)"),
        ([1.0], r"state'\]\['scale'\]: expected an object"),
        ({"rule": "zscore", "mean": [0.0] * D}, r"state'\]\['scale'\]: expected an object with 'rule'"),
        ({"rule": "maxabs", "max_abs": [1.0] * D, "extra": 1}, r"state'\]\['scale'\]: rule 'maxabs' has the keys"),
        ({"rule": "maxabs", "max_abs": [1.0] * (D - 1)}, r"state'\]\['scale'\]\['max_abs'\]: has shape"),
        ({"rule": "maxabs", "max_abs": [1.0] * (D - 1) + ["x"]}, r"state'\]\['scale'\]\['max_abs'\]: expected a list"),
        ({"rule": "maxabs", "max_abs": [1.0] * (D - 1) + [float("nan")]},
         r"state'\]\['scale'\]\['max_abs'\]: entry 5 is nan"),
        ({"rule": "maxabs", "max_abs": [1.0] * (D - 1) + [1e308]},
         r"state'\]\['scale'\]\['max_abs'\]: entry 5 is 1e\+308"),
        ({"rule": "maxabs", "max_abs": [-1.0] * D}, r"state'\]\['scale'\]\['max_abs'\]: entry 0 is negative"),
        ({"rule": "minmax", "min": [1.0] * D, "max": [0.0] * D}, r"state'\]\['scale'\]: min > max at entry 0"),
    ],
)
def test_tampered_scale_state_is_refused_naming_the_key(method, value, key):
    spec = _spec(method, scale="maxabs")
    with pytest.raises(ValueError, match=rf"spec\['{key}"):
        from_spec(tampered(spec, ("state", "scale"), value))


@pytest.mark.parametrize("how, says", [("fifo", "is a FIFO (named pipe), not a regular file"),
                                       ("device", "is a character device, not a regular file")])
def test_a_spec_job_or_index_file_that_is_no_regular_file_is_refused_unread(tmp_path, capsys, how, says):
    """``--spec /dev/zero`` and ``run /dev/zero`` grew to 24 GB before the kernel killed them; a FIFO
    blocked them (and load_map, and SimilarityIndex.load's metadata) forever."""
    import os
    import re

    from _cli import one_line_error
    from _special_files import deadline, memory_cap

    from dask_kernels import SimilarityIndex
    from dask_kernels.maps import load_map

    rows = str(tmp_path / "X.npy")
    np.save(rows, np.random.default_rng(0).random((20, D)))
    index = tmp_path / "index"
    index.mkdir()
    files = {name: str(tmp_path / name) for name in ("spec.json", "job.toml")}
    files["meta"] = str(index / "index.json")
    for file in files.values():
        os.mkfifo(file) if how == "fifo" else os.symlink("/dev/zero", file)
    for file in files.values():
        with deadline(fifo=file if how == "fifo" else None), memory_cap():
            if file == files["spec.json"]:
                with pytest.raises(ValueError, match=re.escape(f"{file} {says}: not a map spec file")):
                    load_map(file)
                line = one_line_error(capsys, ["featurize", rows, str(tmp_path / "s.zarr"), "--spec", file])
                assert line.startswith(f"dask-kernels featurize: error: --spec {file} {says}"), line
            elif file == files["job.toml"]:
                line = one_line_error(capsys, ["run", file, "--dry-run"])
                assert line == f"dask-kernels run: error: job {file} {says}; give a TOML job file"
            else:
                with pytest.raises(ValueError, match=re.escape(f"{file} {says}: not an index's metadata")):
                    SimilarityIndex.load(str(index))
    assert not os.path.exists(tmp_path / "s.zarr")


def test_a_spec_file_that_is_not_json_says_where(tmp_path, capsys):
    # the message was "not valid JSON (JSONDecodeError)": no line, no column, no reason
    from _cli import one_line_error

    rows, spec = str(tmp_path / "X.npy"), tmp_path / "spec.json"
    np.save(rows, np.random.default_rng(0).random((20, D)))
    spec.write_text('{"method": "gcws",\n "params": {"seed": 1,}}')
    line = one_line_error(capsys, ["featurize", rows, str(tmp_path / "s.zarr"), "--spec", str(spec)])
    assert line == (f"dask-kernels featurize: error: --spec {spec}: not valid JSON (Expecting property name enclosed "
                    "in double quotes: line 2 column 23 (char 41))")
