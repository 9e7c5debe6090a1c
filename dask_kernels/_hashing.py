"""The two hashes of the package: content names, and persisted fingerprints.

* :func:`content_hash`: BLAKE2b of chunks of bytes in order, 10 bytes by default. It names the
  dask arrays the readers build from their input's identity or content (``npy-...``,
  ``ndarray-...``, ``csr-...``, ``svmlight-...``, ``parquet-...``); since those names enter a
  store's job fingerprint, the bytes fed in, and so the names, never change. :func:`parts_hash`
  is the readers' usual recipe on top of it. Other task keys are dask's own
  (``dask.base.tokenize`` through ``map_blocks`` and ``from_array``).
* :func:`fingerprint_hash`: SHA-256 of the canonical JSON of a fingerprint (sorted keys, no
  spaces), recorded in every store (``fingerprint_sha256``). Changing it would make every existing
  store look like another job's.

``tests/test_hashing.py`` pins known answers of each.
"""

import hashlib
import json


def content_hash(*chunks, digest_size=10):
    """Hex BLAKE2b digest of ``chunks`` (bytes-like objects as they are, ``str`` as UTF-8) fed in order.

    Examples
    --------
    >>> content_hash("a", b"\\0")
    '008df6084b4a5954f3bc'
    """
    h = hashlib.blake2b(digest_size=digest_size)
    for c in chunks:
        h.update(c.encode() if isinstance(c, str) else c)
    return h.hexdigest()


def parts_hash(*parts, text=str):
    """:func:`content_hash` of ``text(part)`` followed by a NUL byte, for each part."""
    return content_hash(*(c for p in parts for c in (text(p), b"\0")))


def canonical_json(obj):
    """JSON text with sorted keys and no spaces: equal values give equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def fingerprint_hash(fp):
    """SHA-256 (hex) of :func:`canonical_json` of a fingerprint; persisted in stores."""
    return hashlib.sha256(canonical_json(fp).encode()).hexdigest()
