"""SoftmaxSGD: the thesis' multinomial softmax trained by SGD, on GCWS codes without expansion.

scikit-learn's ``SGDClassifier(loss="log_loss")`` is one-vs-rest: C binary models, C passes over
every row. This is one multinomial model, ``p = softmax(W z + c)``, one pass per row, with an
optional linear bottleneck ``W = U V`` of rank r (May 2018, section 4.1.2). On GCWS codes ``z``
is the one-hot expansion (k ones at columns ``j * 2**b + code_j``, unscaled: the same features
as :func:`dask_kernels.expand_codes`), never built: a row's scores are a gather of k rows of the
first layer, stored as (features, outputs) so that each gathered row is contiguous.

With ``loss="hinge"`` the same pass trains C one-vs-rest linear SVMs instead (scikit-learn's
``SGDClassifier(loss="hinge")``, without its C passes).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import log_softmax, softmax

from .._estimator import ClassifierMixin, Estimator, available_if, check_is_fitted, check_random_state, column_or_1d
from .._params import Interval, ParameterConstraints, StrOptions
from ..maps._bounds import MAX_TABLE_BYTES, refuse_above
from ._softmax_kernels import code_hidden, sgd_block

__all__ = ["SoftmaxSGD", "feeds_codes", "takes_rows"]


def takes_rows(estimator: object) -> bool:
    """Whether ``estimator`` is a :class:`SoftmaxSGD` on dense float rows, which may train on a
    step's rows where they are kept (:class:`~dask_kernels.learn._gather.StepRows`, read in
    place by ``_partial_fit_rows``) instead of a gathered copy. Off with the dask config key
    ``dask_kernels.sgd_fast_in_place`` False, as for the SGD fast path."""
    from .._config import switch

    return type(estimator) is SoftmaxSGD and estimator.code_bits is None and switch("sgd_fast_in_place")


def feeds_codes(estimator: object, feature_map: object, where: str = "the feature map") -> bool:
    """Whether ``estimator`` consumes the stored GCWS codes of ``feature_map`` as they are.

    True for an estimator built with ``code_bits`` (e.g. ``SoftmaxSGD(code_bits=8)``) and a
    GCWS map; the code width must match the map's ``bits``.

    Raises
    ------
    ValueError
        Naming ``where``, if ``code_bits`` is set but the map is not GCWS or has other bits.
    """
    get = getattr(estimator, "get_params", None)
    bits = get(deep=False).get("code_bits") if get is not None else None
    if bits is None or feature_map is None:
        return False  # raw rows are given as they are: the estimator validates them
    if getattr(feature_map, "method", None) != "gcws":
        raise ValueError(f"{where}: {type(estimator).__name__}(code_bits={bits}) takes GCWS codes, but the "
                         f"features come from a {type(feature_map).__name__} map: use code_bits=None")
    if int(feature_map.bits) != int(bits):
        raise ValueError(f"{where}: the GCWS map has bits={feature_map.bits} but "
                         f"{type(estimator).__name__} has code_bits={bits}: they must match")
    return True


def _has_probabilities(est: SoftmaxSGD) -> bool:
    """True with the log loss; else AttributeError (``hasattr`` False, as for
    ``SGDClassifier(loss="hinge").predict_proba``)."""
    if est.loss != "log_loss":
        raise AttributeError(f"{type(est).__name__}(loss={est.loss!r}) has no probabilities: its scores are "
                             "margins; train with loss='log_loss' for predict_proba")
    return True


#: Largest bottleneck rank: as many as classes there can be (dask_kernels.labels.MAX_CLASSES); a
#: bottleneck as wide as the classes already saves nothing.
MAX_RANK = 2**14


def check_weights(rank: int | None, n_weights: int, average: bool | int = False, n_classes: int | None = None) -> None:
    """Refuse weights that would take more than :data:`~dask_kernels.maps._bounds.MAX_TABLE_BYTES`
    (twice with averaging), before they are made: the bottleneck's U (``n_weights`` x ``rank``
    float64) or, without a bottleneck and with ``n_classes`` given, the full W (``n_weights`` x
    ``n_classes``)."""
    if rank is None and n_classes is None:
        return
    copies = 2 if average else 1
    twice = " twice (average)" if copies == 2 else ""
    features = f"{int(n_weights):,} (the features it learns from; on codes 2**code_bits x hashes)"
    if rank is None:
        refuse_above(8 * int(n_weights) * int(n_classes) * copies, MAX_TABLE_BYTES,
                     f"SoftmaxSGD: {int(n_classes):,} classes make the weights W {features} x {int(n_classes):,} "
                     f"float64{twice}: {{value:,}} bytes, more than the bound of {{bound:,}}; train a bottleneck "
                     "(rank=, --rank on the command line) or use fewer features (n_components, bits)")
        return
    refuse_above(8 * int(n_weights) * int(rank) * copies, MAX_TABLE_BYTES,
                 f"SoftmaxSGD: rank={int(rank):,} makes the bottleneck U {features} x {int(rank):,} float64"
                 f"{twice}: {{value:,}} bytes, more than the bound of {{bound:,}}; lower rank (--rank on the "
                 "command line)")


class SoftmaxSGD(ClassifierMixin, Estimator):
    """Multinomial softmax regression with bias trained by SGD; GCWS codes read directly.

    Minimizes ``mean_i -log p(y_i | x_i) + alpha/2 ||W||^2`` (bottleneck: ``alpha/2 (||U||^2 +
    ||V||^2)``; the bias is not regularized), one row at a time, with scores ``W z + c`` or
    ``U (V z) + c``. The learning rate follows scikit-learn's SGD ("constant": ``eta0``;
    "invscaling": ``eta0 / t**power_t``), so :func:`dask_kernels.fit_incremental` applies the
    thesis' halve/revert schedule to ``eta0`` as for ``SGDClassifier``.

    With ``loss="hinge"`` it minimizes ``mean_i sum_c max(0, 1 - s_ic (W z_i + c)_c) + alpha/2
    ||W||^2`` instead (``s_ic`` = +1 for the row's class, -1 for the others): one-vs-rest linear
    SVMs, all C trained by the same step of each row.

    Parameters
    ----------
    loss : {"log_loss", "hinge"}, default="log_loss"
        "log_loss": the multinomial softmax, with :meth:`predict_proba`. "hinge": one-vs-rest
        linear SVMs, no probabilities. On GCWS codes of data whose classes separate well the
        hinge was the more accurate (UCI Letter 0.965 against 0.960); on overlapping classes far
        less (2 to 11 points on synthetic sets): see the training guide.
    code_bits : int, optional
        If set, ``X`` is the ``(n, k)`` unsigned integer array of b-bit GCWS codes as a feature
        store holds them (``b = code_bits``): row i's features are ones at columns
        ``j * 2**b + X[i, j]`` (the expansion of :func:`dask_kernels.expand_codes`), used
        without building it. ``n_features_in_`` is then k. ``fit_incremental`` and
        :class:`~dask_kernels.KernelModel` feed such an estimator a GCWS store's codes.
        If None, ``X`` is dense floats or a CSR matrix.
    rank : int, optional
        Rank r of the linear bottleneck ``W = U V`` (U: C x r, V: r x features), trained
        jointly and initialized uniformly at random as in Glorot and Bengio (2010); None trains
        the full ``W`` (initialized to zero).
    alpha : float, default=1e-4
        L2 regularization strength.
    learning_rate : {"constant", "invscaling"}, default="constant"
    eta0 : float, default=0.01
        Initial learning rate. On codes a row has k ones, so ``1 / k`` takes steps of size
        about one in the scores.
    power_t : float, default=0.5
        Exponent of "invscaling".
    max_iter : int, default=5
        Epochs of :meth:`fit` (:meth:`partial_fit` makes one pass).
    shuffle : bool, default=True
        Visit the rows of every call in a random order (a fresh permutation from
        ``random_state`` per call, as scikit-learn's SGD: an int gives the same permutation
        for a block of the same size, so runs are reproducible).
    random_state : int, RandomState instance or None, default=None
        Shuffling and the bottleneck's initialization.
    average : bool or int, default=False
        Averaged SGD: predict with the average of all iterates (True) or of those after
        ``average`` rows have been seen (an int).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
        Columns of ``X`` (k for codes).
    weights_ : ndarray of shape (n_weights, n_classes) or (n_weights, rank)
        The first layer, one row per feature (``k * 2**code_bits`` rows for codes): ``W``
        transposed, or ``V`` transposed with a bottleneck.
    output_weights_ : ndarray of shape (n_classes, rank)
        ``U`` of the bottleneck (``(n_classes, 0)`` for the full model).
    intercept_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_weights)
        The effective ``W`` (``U V`` with a bottleneck; averaged if ``average``).
    t_ : float
        Number of SGD steps plus one (the "invscaling" clock).
    n_iter_ : int
        Epochs run by the last :meth:`fit`.

    See Also
    --------
    sklearn.linear_model.SGDClassifier : one-vs-rest linear models by SGD.
    dask_kernels.fit_incremental : out-of-core training with the thesis' schedule.

    References
    ----------
    May, A. (2018). Kernel Approximation Methods for Speech Recognition. PhD thesis, Columbia
    University (multinomial logistic regression on random features, linear bottlenecks,
    section 4.1).
    Sainath, T. N. et al. (2013). Low-rank matrix factorization for deep neural network training
    with high-dimensional output targets. ICASSP.
    Zhang, T. (2004). Solving large scale linear prediction problems using stochastic gradient
    descent algorithms. ICML (SGD on the hinge loss).
    Xu, W. (2011). Towards optimal one pass large scale learning with averaged stochastic
    gradient descent. arXiv:1107.2490 (the sparse averaged update).
    Li, P. (2017). Linearized GMM kernels and normalized random Fourier features. KDD (GCWS).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import GCWS, SoftmaxSGD
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((600, 4)); y = np.argmax(X[:, :3], axis=1)
    >>> gcws = GCWS(n_components=64, bits=4).fit(X)
    >>> codes = gcws.transform_block(X)            # (600, 64) uint8, never expanded
    >>> clf = SoftmaxSGD(code_bits=4, eta0=1 / 64, max_iter=10, random_state=0).fit(codes, y)
    >>> clf.weights_.shape, clf.predict_proba(codes[:2]).shape
    ((1024, 3), (2, 3))
    >>> bool(clf.score(codes, y) > 0.9)
    True
    """

    _parameter_constraints = ParameterConstraints({
        "loss": [StrOptions({"log_loss", "hinge"})],
        "code_bits": [Interval(numbers.Integral, 1, 16, closed="both"), None],
        "rank": [Interval(numbers.Integral, 1, MAX_RANK, closed="both"), None],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "learning_rate": [StrOptions({"constant", "invscaling"})],
        "eta0": [Interval(numbers.Real, 0, None, closed="neither")],
        "power_t": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "average": [Interval(numbers.Integral, 0, None, closed="left"), "boolean"],
    })

    def __init__(self, *, loss: str = "log_loss", code_bits: int | None = None, rank: int | None = None,
                 alpha: float = 1e-4,
                 learning_rate: str = "constant", eta0: float = 0.01, power_t: float = 0.5,
                 max_iter: int = 5, shuffle: bool = True, random_state: int | np.random.RandomState | None = None,
                 average: bool | int = False):
        self.loss = loss
        self.code_bits = code_bits
        self.rank = rank
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.power_t = power_t
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.random_state = random_state
        self.average = average

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.code_bits is None
        tags.classifier_tags.multi_label = False
        return tags

    # -- input --------------------------------------------------------------------------------
    def _check_X(self, X, reset: bool, y=None):
        """Validated rows: ``(mode, array, n_weights)``, mode 0 codes, 1 dense, 2 CSR (and
        ``y``, checked, if ``y`` is given)."""
        if self.code_bits is None:  # rows of floats: scikit-learn checks them (not GCWS codes)
            from sklearn.utils.validation import validate_data
        if y is not None:
            if self.code_bits is None:
                X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset)
            else:
                y = column_or_1d(y, warn=True)
            return *self._check_X(X, reset and self.code_bits is not None), y
        if self.code_bits is None:
            X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset)
            if sp.issparse(X):
                if not X.has_canonical_format:  # each column once per row; never modify the caller's
                    X = X.copy()
                    X.sum_duplicates()
                return 2, X, X.shape[1]
            # float32 rows as they are (the kernel reads each value as float64, exactly as
            # astype would: the same model, without a float64 copy of the block); C order, writeable
            return 1, np.require(X, None, ["C", "W"]), X.shape[1]
        b = int(self.code_bits)
        where = f"{type(self).__name__}(code_bits={b})"
        if sp.issparse(X):
            raise ValueError(f"{where} takes the (n, k) array of GCWS codes, got a sparse matrix: "
                             "pass the stored codes, or use code_bits=None for a one-hot CSR")
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"{where}: codes must be 2-D (rows, hashes), got shape {X.shape}")
        if X.dtype.kind not in "ui":
            raise ValueError(f"{where}: codes must be unsigned integers, got dtype {X.dtype}")
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"{where}: codes of shape {X.shape}: need at least one row and one hash")
        if reset:
            self.n_features_in_ = int(X.shape[1])
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"{where}: X has {X.shape[1]} hashes (columns), but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        if X.dtype.kind == "u" and X.dtype.itemsize * 8 <= b:
            bad = None  # every value of the dtype is a b-bit code (uint8 codes, b = 8): no pass
        else:
            bad = (X >= 2**b) | (X < 0) if X.dtype.kind == "i" else X >= 2**b
        if bad is not None and bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"{where}: X[{i}, {j}] = {X[i, j]} is not a {b}-bit code (0 <= code < {2**b}): "
                             f"were these codes made with bits={b}?")
        return 0, np.require(X, np.uint16 if b > 8 else np.uint8, ["C", "W"]), X.shape[1] << b

    def _labels(self, y, n: int) -> np.ndarray:
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"y has shape {y.shape}, expected ({n},): one label per row")
        idx = np.searchsorted(self.classes_, y)
        idx = np.minimum(idx, len(self.classes_) - 1)
        unknown = self.classes_[idx] != y
        if unknown.any():
            raise ValueError(f"y contains labels not in classes_ {self.classes_.tolist()}: "
                             f"{np.unique(y[unknown])[:10].tolist()}")
        return idx.astype(np.int64)

    # -- training -----------------------------------------------------------------------------
    def _init_weights(self, n_weights: int) -> None:
        C = len(self.classes_)
        check_weights(self.rank, n_weights, self.average, n_classes=C)
        if self.rank is None:
            self.weights_ = np.zeros((n_weights, C))
            self.output_weights_ = np.zeros((C, 0))
        else:  # Glorot and Bengio (2010), as the thesis initializes a bottleneck
            r = int(self.rank)
            rs = check_random_state(self.random_state)
            self.output_weights_ = rs.uniform(-1, 1, (C, r)) * np.sqrt(6.0 / (C + r))
            self.weights_ = rs.uniform(-1, 1, (n_weights, r)) * np.sqrt(6.0 / (n_weights + r))
        self.intercept_ = np.zeros(C)
        self.t_ = 1.0
        if self.average:
            self._weights_sum = np.zeros_like(self.weights_)
            self._output_sum = np.zeros_like(self.output_weights_)
            self._intercept_sum = np.zeros(C)
            self._n_averaged = 0

    def _run(self, mode: int, X, yi: np.ndarray, order: np.ndarray, at: np.ndarray | None = None) -> float:
        """SGD over rows ``order`` of a validated block (row i of the block is row ``at[i]`` of
        dense ``X`` if ``at`` is given); returns the summed training loss."""
        eta0, alpha = float(self.eta0), float(self.alpha)
        invscaling = self.learning_rate == "invscaling"
        if eta0 * alpha >= 1.0:
            raise ValueError(f"eta0 * alpha = {eta0 * alpha:g} must be < 1 (the L2 decay factor "
                             "1 - eta * alpha must stay positive)")
        empty_i, empty_f = np.zeros(1, np.int64), np.zeros(1)
        at = np.zeros(0, np.int64) if at is None else at
        if mode == 2:
            indptr, indices, data = X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data.astype(np.float64)
            width = int(np.diff(indptr).max()) if X.shape[0] else 0
            Xa = np.zeros((1, 1))
        else:
            indptr, indices, data, Xa, width = empty_i, empty_i, empty_f, X, X.shape[1]
        bits = int(self.code_bits or 0)
        start = 0 if self.average is True else int(self.average)  # rows seen before averaging starts
        pre = order.shape[0] if not self.average else int(np.clip(start - (self.t_ - 1), 0, order.shape[0]))
        loss = 0.0
        for part, avg in ((order[:pre], False), (order[pre:], True)):
            if not part.shape[0]:
                continue
            if avg:
                acc, U_sum, c_sum = -self._weights_sum, self._output_sum, self._intercept_sum
            else:
                acc, U_sum, c_sum = np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0)
            loss += sgd_block(part, at, mode, Xa, indptr, indices, data, bits, max(width, 1), yi,
                              self.weights_, self.output_weights_, self.intercept_, acc, U_sum, c_sum,
                              eta0, invscaling, float(self.power_t), alpha, float(self.t_), self.loss == "hinge")
            self.t_ += float(part.shape[0])
            if avg:
                self._weights_sum = acc
                self._n_averaged += int(part.shape[0])
        return loss

    def _order(self, n: int, rs) -> np.ndarray:
        return rs.permutation(n).astype(np.int64) if self.shuffle else np.arange(n, dtype=np.int64)

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> SoftmaxSGD:
        """One SGD pass over the rows of ``X`` (in a random order if ``shuffle``).

        Parameters
        ----------
        X : ndarray of shape (n, k) of codes (``code_bits`` set), or (n, d) floats or CSR
        y : array-like of shape (n,)
        classes : array-like, optional
            All the classes; required on the first call.

        Returns
        -------
        self
        """
        first = self._start(classes, y)
        mode, X, n_weights, y = self._check_X(X, reset=first, y=y)
        self._train(first, mode, X, y, n_weights)
        return self

    def _partial_fit_rows(self, rows: Any, y: Any, classes: Any = None) -> SoftmaxSGD:
        """:meth:`partial_fit` on a step's dense rows read where they are kept
        (:class:`~dask_kernels.learn._gather.StepRows`, finite by construction), not gathered:
        bitwise the model of ``partial_fit(rows.gather(), y, classes)``."""
        first = self._start(classes, y)
        X, n = rows.src, rows.at.shape[0]
        if first:
            self.n_features_in_ = int(X.shape[1])
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        if n == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required")
        self._train(first, 1, X, column_or_1d(y), X.shape[1], rows.at)
        return self

    def _train(self, first: bool, mode: int, X, y, n_weights: int, at: np.ndarray | None = None) -> None:
        """The SGD pass of :meth:`partial_fit` on validated rows."""
        yi = self._labels(y, X.shape[0] if at is None else at.shape[0])
        if first:
            self._init_weights(n_weights)
        self._run(mode, X, yi, self._order(yi.shape[0], check_random_state(self.random_state)), at)

    def _start(self, classes: Any, y: Any) -> bool:
        """Check the classes (set them on the first call) and ``y``; True on the first call."""
        first = not hasattr(self, "classes_")
        if first:
            self._validate_params()
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            classes = np.unique(np.asarray(classes))
            if classes.dtype.kind == "f" and not np.all(classes == np.floor(classes)):  # without scikit-learn
                raise ValueError("Unknown label type: continuous. Maybe you are trying to fit a classifier, which "
                                 "expects discrete classes on a regression target with continuous values.")
            if classes.size < 2:
                raise ValueError(f"a classifier needs at least two classes, got {classes.tolist()}")
            self.classes_ = classes
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(f"classes {np.unique(classes).tolist()} differ from the classes of the "
                             f"first partial_fit call {self.classes_.tolist()}")
        if y is None:
            raise ValueError("requires y to be passed, but the target y is None")
        return first

    def fit(self, X: Any, y: Any) -> SoftmaxSGD:
        """Train from scratch: ``max_iter`` SGD epochs over ``X``.

        Parameters
        ----------
        X : ndarray of shape (n, k) of codes (``code_bits`` set), or (n, d) floats or CSR
        y : array-like of shape (n,)

        Returns
        -------
        self
        """
        self._validate_params()
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")] + [
                "_weights_sum", "_output_sum", "_intercept_sum", "_n_averaged"]:
            self.__dict__.pop(name, None)
        if y is None:
            raise ValueError("requires y to be passed, but the target y is None")
        from sklearn.utils.multiclass import check_classification_targets

        mode, X, n_weights, y = self._check_X(X, reset=True, y=y)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"a classifier needs more than one class, the labels hold {self.classes_.tolist()}")
        yi = self._labels(y, X.shape[0])
        self._init_weights(n_weights)
        rs = check_random_state(self.random_state)
        for _ in range(int(self.max_iter)):
            self._run(mode, X, yi, self._order(X.shape[0], rs))
        self.n_iter_ = int(self.max_iter)
        return self

    # -- prediction ---------------------------------------------------------------------------
    def _model(self):
        """``(A, U, c)`` used for prediction (the averages with ``average``)."""
        if self.average and getattr(self, "_n_averaged", 0) > 0:
            n = float(self._n_averaged)
            return self._weights_sum / n, self._output_sum / n, self._intercept_sum / n
        return self.weights_, self.output_weights_, self.intercept_

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self)
        mode, X, _ = self._check_X(X, reset=False)
        A, U, c = self._model()
        if mode == 0:
            h = np.empty((X.shape[0], A.shape[1]))
            code_hidden(X, int(self.code_bits), A, h)
        else:
            h = np.asarray(X @ A, dtype=np.float64)
        return (h if U.shape[1] == 0 else h @ U.T) + c

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``W z + c``: shape (n, n_classes), or (n,) for two classes (the second
        class's score minus the first's, scikit-learn's convention)."""
        z = self._scores(X)
        return z[:, 1] - z[:, 0] if z.shape[1] == 2 else z

    @available_if(_has_probabilities)
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``softmax(W z + c)``, shape (n, n_classes) (``loss="log_loss"`` only)."""
        return softmax(self._scores(X), axis=1)

    @available_if(_has_probabilities)
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba` (``loss="log_loss"`` only)."""
        return log_softmax(self._scores(X), axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """The class of the highest score of every row (the most probable one with log loss)."""
        z = self._scores(X)
        return self.classes_[np.argmax(z, axis=1)]

    @property
    def coef_(self) -> np.ndarray:
        """The effective weight matrix ``W`` (or ``U V``), shape (n_classes, n_weights)."""
        check_is_fitted(self)
        A, U, _ = self._model()
        return A.T.copy() if U.shape[1] == 0 else U @ A.T

    @property
    def n_parameters_(self) -> int:
        """Number of learned parameters (first layer, bottleneck output layer and bias)."""
        check_is_fitted(self)
        return int(self.weights_.size + self.output_weights_.size + self.intercept_.size)

    # -- state (checkpoints and saved models) -------------------------------------------------
    def _check_learned_shapes(self, where: str = "state") -> None:
        """Raise ``ValueError`` naming ``where`` and the attribute unless the learned arrays
        agree with each other, ``n_features_in_``, ``code_bits``, ``rank`` and the classes."""
        v = vars(self)

        def fail(name, what):
            raise ValueError(f"{where}: {name} {what}")

        if "classes_" not in v:
            return
        C = v["classes_"].shape[0]
        n = v.get("n_features_in_")
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            fail("n_features_in_", f"must be a positive integer, got {n!r}")
        D = int(n) << int(self.code_bits or 0)
        m = C if self.rank is None else int(self.rank)
        want = {"weights_": (D, m), "output_weights_": (C, 0 if self.rank is None else m), "intercept_": (C,)}
        if self.average:
            want.update(_weights_sum=(D, m), _output_sum=want["output_weights_"], _intercept_sum=(C,))
        for name, shape in want.items():
            a = v.get(name)
            if not isinstance(a, np.ndarray) or a.dtype != np.float64 or a.shape != shape:
                fail(name, f"must be a float64 array of shape {shape}")
            if not np.isfinite(a).all():
                fail(name, "holds non-finite values")
            if not a.flags.c_contiguous or not a.flags.writeable:
                v[name] = np.ascontiguousarray(a).copy()
        t = v.get("t_")
        if not isinstance(t, (float, np.floating)) or not t >= 1.0:
            fail("t_", f"must be a number >= 1, got {t!r}")
        if self.average and not (isinstance(v.get("_n_averaged"), (int, np.integer)) and v["_n_averaged"] >= 0):
            fail("_n_averaged", "must be a non-negative integer")
