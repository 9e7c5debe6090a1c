"""Similarity search on GCWS codes: LSH banding, all-pairs joins on Dask, and a query index.

Codes of a GCWS map are locality-sensitive hashes of the GMM kernel: two rows agree on one
b-bit code with probability ``s + (1 - s) 2**-b``, ``s`` their GMM similarity.

* :mod:`~dask_kernels.similarity.banding`: the band/row split for a threshold, and its S-curve;
* :func:`similarity_join`: all pairs at similarity >= a threshold, within one set of codes or
  across two, as a dask DataFrame;
* :class:`SimilarityIndex`: threshold and top-k queries against codes held in memory, saved in a
  versioned, pickle-free file.
"""

from .banding import candidate_probability, choose_bands, collision_probability
from .index import SimilarityIndex
from .join import code_estimate, estimate_margin, similarity_join

__all__ = ["SimilarityIndex", "candidate_probability", "choose_bands", "code_estimate", "collision_probability",
           "estimate_margin", "similarity_join"]
