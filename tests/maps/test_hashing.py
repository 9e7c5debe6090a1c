"""dask_kernels/_hashing.py: known answers. These values are persisted (store fingerprints, and
the readers' array names inside them): if one changes, existing stores look like other jobs."""

import numpy as np
import scipy.sparse as sp

from dask_kernels._hashing import canonical_json, content_hash, fingerprint_hash, parts_hash
from dask_kernels.io import dense, parquet
from dask_kernels.io.sparse import from_sparse


def test_fingerprint_hash_known_answer():
    fp = {"b": [1, 2], "a": "x"}
    assert canonical_json(fp) == '{"a":"x","b":[1,2]}'
    assert fingerprint_hash(fp) == "721ef82f2d6c0997bffb7a8ab3f40f8fb45b0b52ce2af3afa6b0f05efbdc317f"


def test_content_names_known_answers():
    assert parts_hash("a", 1, (2, 3)) == "ce7e45f610ebb4773dcb"
    assert parquet._hash([("u", 1)], "x") == "fde89e7815c5e982dc8a"
    assert content_hash(np.arange(12.0).tobytes(), digest_size=64)[:20] == "da66869ff60c3bad03e6"
    assert dense.from_array(np.arange(12.0).reshape(4, 3)).name == "ndarray-8042054666296745610e"
    X = sp.csr_matrix(np.array([[0, 1.0, 0], [2.0, 0, 3.0]]))
    assert from_sparse(X).name == "csr-6cd9dfa84e25e89e4577"
    assert from_sparse(X, y=[0, 1]).name == "csr-1af6fbcaedf2f8948f84"
    assert from_sparse(X).fingerprint["hash"] == "6cd9dfa84e25e89e4577"
