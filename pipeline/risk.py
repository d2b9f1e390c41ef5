"""What a multiclass predictor W measures on a sample: its losses and the intervals of its held-out risks
(docs/bounds.md sections 7 and 9).

- :func:`ghinge_losses`, :func:`zero_one_losses`, :func:`cost_losses`: the generalized hinge loss of UML
  eq. 17.3 (multivector Psi, a label cost Delta: 0-1 by default), the 0-1 loss with ties counted as errors
  and the cost Delta(h(x), y) of the prediction with ties resolved to the costliest tied label, from scores
  summed in a fixed order (a compiled kernel), so a loss is bit-identical run to run.
- :data:`COSTS`, :func:`cost_matrix`: the label costs Delta (named presets, or a validated k x k matrix).
- :func:`clopper_pearson`, :func:`mean_ci`: the held-out intervals of docs/bounds.md section 9.

Below the learners (a learner measures its own predictor's held-out risk with these) and below the
certified solvers of :mod:`pipeline.solvers.multiclass`, which evaluate the same losses.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline._jit import kernel
from pipeline.params import ParamError, UserError

CostMatrix = tuple[tuple[float, ...], ...]
"""A k x k label cost as a configuration gives it, validated (``algorithm.cost``, the learners' ``cost``)."""
Cost = str | np.ndarray | CostMatrix | None
"""A label cost as a learner was given it: a name of :data:`COSTS`, a k x k matrix, or None (0-1)."""


# --- Label costs Delta (docs/bounds.md section 7, "Label cost") --------------------------------------

COSTS = ("zero_one", "ordinal", "absolute")
"""The named label costs Delta(y', y) (predicted y', true y) for labels 0..k-1:

- ``zero_one``: 1[y' != y], the 0-1 loss (max Delta = 1);
- ``ordinal``: |y' - y| / (k - 1), ordered labels scored by how far off the prediction is, scaled into
  [0, 1] (max Delta = 1, so every constant of the 0-1 cost carries over);
- ``absolute``: |y' - y|, the absolute error of ordered labels (max Delta = k - 1 > 1 for k > 2: the
  constants that depend on Delta grow, docs/bounds.md sections 7 and 8).
"""
COST_WORDS = ("one of " + ", ".join(COSTS) + " (the label cost Delta(y', y): 0-1, |y' - y| / (k - 1) or |y' - y|; "
              "docs/bounds.md section 7)")


def cost_matrix(cost: Cost, k: int) -> np.ndarray:
    """The k x k float64 matrix D[y', y] = Delta(y', y) of a named cost (:data:`COSTS`; None is ``zero_one``)
    or of an explicit matrix, validated.

    A valid cost is square k x k, finite, >= 0, with a zero diagonal and positive off-diagonal entries, so
    that the generalized hinge loss is >= 0 and >= Delta(h(x), y), and a wrong label always costs something.
    A bad one raises a one-line :class:`ParamError` naming ``cost``.

    Examples
    --------
    >>> cost_matrix("ordinal", 3).tolist()
    [[0.0, 0.5, 1.0], [0.5, 0.0, 0.5], [1.0, 0.5, 0.0]]
    """
    k = int(k)
    if cost is None or isinstance(cost, str):
        name = "zero_one" if cost is None else cost
        labels = np.arange(k)
        gap = np.abs(labels[:, None] - labels[None, :]).astype(np.float64)
        if name == "zero_one":
            return 1.0 - np.eye(k)
        if name == "ordinal":
            return gap / (k - 1)
        if name == "absolute":
            return gap
        raise ParamError("cost", cost, COST_WORDS)
    try:
        D = np.array(cost, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParamError("cost", cost, f"{COST_WORDS}, or a {k} x {k} matrix of numbers") from None
    if D.shape != (k, k):
        raise ParamError("cost", cost, f"a {k} x {k} matrix (k = {k} classes), or {COST_WORDS}")
    off = ~np.eye(k, dtype=bool)
    if not np.all(np.isfinite(D)) or np.any(np.diag(D) != 0.0) or not np.all(D[off] > 0.0):
        raise ParamError("cost", cost, "a matrix of finite numbers with a zero diagonal and off-diagonal entries > 0")
    return D


def _cost_or_none(cost: str | np.ndarray | None, k: int) -> np.ndarray | None:
    """The validated matrix of ``cost``, or None for the 0-1 cost (whose code path is kept as it was, bit for bit)."""
    D = cost_matrix(cost, k)
    return None if np.array_equal(D, 1.0 - np.eye(k)) else D


def zero_loss(y: np.ndarray, cost: np.ndarray | None, k: int) -> np.ndarray:
    """The generalized hinge loss of W = 0 on each label: max_y' Delta(y', y_i) (1 for the 0-1 cost)."""
    D = cost_matrix(cost, k)
    return D.max(axis=0)[np.asarray(y, dtype=np.int64)]


# --- Losses ----------------------------------------------------------------------------------------


@kernel
def _scores(X, W):  # noqa: ANN001, ANN202
    """S[i, j] = W_j . x_i, summed left to right over the features."""
    n, d = X.shape
    k = W.shape[0]
    S = np.empty((n, k))
    for i in range(n):
        for j in range(k):
            acc = 0.0
            for f in range(d):
                acc += W[j, f] * X[i, f]
            S[i, j] = acc
    return S


def _inputs(X: np.ndarray, y: np.ndarray, W: np.ndarray | None = None,
            k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Validated float64 X, int64 labels in 0..k-1, float64 W, and k (from W when given)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise UserError(f"X must be a 2-D array, got shape {X.shape}")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise UserError(f"y must have shape ({X.shape[0]},) like the rows of X, got {y.shape}")
    if W is not None:
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.ndim != 2 or W.shape[1] != X.shape[1]:
            raise UserError(f"W must have shape (k, {X.shape[1]}), got {W.shape}")
        k = W.shape[0]
    if k is None or int(k) != k or k < 2:
        raise ParamError("k", k, "an integer >= 2")
    k = int(k)
    if y.size and (y.dtype.kind not in "iu" and not np.all(y == np.round(y)) or y.min() < 0 or y.max() > k - 1):
        raise UserError(f"labels must be integers in 0..{k - 1}; found {y.min():g}..{y.max():g}")
    return X, y.astype(np.int64), W, k


def _margins(S: np.ndarray, y: np.ndarray, cost: np.ndarray | None = None) -> np.ndarray:
    """T[i, j] = Delta(j, y_i) + S[i, j] - S[i, y_i] (Delta = 0-1 when ``cost`` is None), with T[i, y_i] = 0
    exactly. Summed as (S[i, j] - S[i, y_i]) + Delta(j, y_i), so the 0-1 cost gives the bits of + 1.0."""
    rows = np.arange(S.shape[0])
    T = (S - S[rows, y][:, None]) + (1.0 if cost is None else cost[:, y].T)
    T[rows, y] = 0.0
    return T


def ghinge_losses(X: np.ndarray, y: np.ndarray, W: np.ndarray, cost: str | np.ndarray | None = None) -> np.ndarray:
    """Generalized hinge loss of each example (UML eq. 17.3, multivector Psi, label cost Delta).

    ghinge(W; x, y) = max_{y'} [Delta(y', y) + W_{y'}.x - W_y.x] >= 0, with the scores summed in a fixed
    order by a compiled kernel (bit-identical run to run; docs/bounds.md section 7).

    Parameters
    ----------
    X : (n, d) examples.
    y : (n,) labels in 0..k-1.
    W : (k, d) weights, one row per class.
    cost : the label cost Delta (:func:`cost_matrix`: a name of :data:`COSTS` or a k x k matrix); None is 0-1.

    Returns
    -------
    (n,) float64 losses, each >= 0 and >= Delta(argmax_j W_j.x, y) under any tie-break.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); W = np.array([[2.0, 0.0], [0.0, 0.5]])
    >>> ghinge_losses(X, np.array([0, 1]), W).tolist()
    [0.0, 0.5]
    """
    X, y, W, k = _inputs(X, y, W)
    if X.shape[0] == 0:
        return np.zeros(0)
    return _margins(_scores(X, W), y, _cost_or_none(cost, k)).max(axis=1)


def zero_one_losses(X: np.ndarray, y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """1[argmax_j W_j.x != y] for each example, a tie for the maximum counted as an error.

    Same scores as :func:`ghinge_losses` (so zero_one <= ghinge holds elementwise in floating point).
    """
    X, y, W, _ = _inputs(X, y, W)
    if X.shape[0] == 0:
        return np.zeros(0)
    S = _scores(X, W)
    rows = np.arange(S.shape[0])
    own = S[rows, y].copy()
    S[rows, y] = -np.inf
    return (S.max(axis=1) >= own).astype(np.float64)


def cost_losses(X: np.ndarray, y: np.ndarray, W: np.ndarray, cost: str | np.ndarray | None = None) -> np.ndarray:
    """Delta(h_W(x), y) for each example, h_W(x) = argmax_j W_j.x, a tie for the maximum resolved to the
    costliest tied label (max of Delta(j, y) over the tied j): the pessimistic tie rule of
    :func:`zero_one_losses`, which it equals for the 0-1 cost.

    Same scores as :func:`ghinge_losses`. Elementwise <= the generalized hinge loss in floating point too:
    a tied j has S_j - S_y >= 0 exactly, so fl((S_j - S_y) + Delta(j, y)) >= Delta(j, y).

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); W = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> cost_losses(X, np.array([0, 0]), W, "absolute").tolist()
    [1.0, 2.0]
    """
    X, y, W, k = _inputs(X, y, W)
    if X.shape[0] == 0:
        return np.zeros(0)
    D = cost_matrix(cost, k)
    S = _scores(X, W)
    tied = S >= S.max(axis=1)[:, None]
    return np.where(tied, D[:, y].T, 0.0).max(axis=1)


# --- Interval estimates (docs/bounds.md section 9, "Statistics to report") ------------------------------


def clopper_pearson(errors: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided binomial interval for an error rate from ``errors`` of ``n``.

    The ends are the beta quantiles B(a/2; x, n-x+1) and B(1-a/2; x+1, n-x), a = 1 - level (0 for
    x = 0, 1 for x = n): Clopper & Pearson, Biometrika 26(4), 1934. Coverage >= level for every p.
    """
    from pipeline.judging.rows import binomial_limits

    if int(n) != n or n < 1:
        raise ParamError("n", n, "an integer >= 1")
    if int(errors) != errors or not 0 <= errors <= n:
        raise ParamError("errors", errors, f"an integer in 0..n = {n}")
    if not 0 < level < 1:
        raise ParamError("level", level, "a number in (0, 1)")
    return binomial_limits(int(errors), int(n), 0.5 + level / 2.0)


def mean_ci(values: np.ndarray, level: float = 0.95, *, lo: float | None = None,
            hi: float | None = None) -> tuple[float, float, float]:
    """Mean and a two-sided interval: Student t (the CLT interval of docs/bounds.md section 9) and, when
    the values are known to lie in [lo, hi], the wider of it and Hoeffding's
    mean +/- (hi - lo) sqrt(ln(2/a) / (2n)), a = 1 - level (valid for any n, not only asymptotically).

    Returns (mean, lower, upper); with one value and no range the interval is infinite.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise UserError("mean_ci needs at least one value")
    if not np.all(np.isfinite(values)):
        raise UserError("mean_ci: values must be finite")
    if not 0 < level < 1:
        raise ParamError("level", level, "a number in (0, 1)")
    if (lo is None) != (hi is None):
        raise ParamError("lo" if lo is None else "hi", None, "given together with the other end of the range")
    from pipeline.judging.rows import hoeffding_half_width, t_limits

    n = values.size
    a = 1.0 - level
    mean, _, upper = t_limits(values, 0.5 + level / 2.0)
    half = upper - mean
    if lo is not None:
        if not hi >= lo:
            raise ParamError("hi", hi, f">= lo = {lo}")
        if values.min() < lo or values.max() > hi:
            raise UserError(f"mean_ci: values outside the range [{lo}, {hi}] given for Hoeffding")
        hoeffding = hoeffding_half_width(n, hi - lo, 1.0 - a / 2.0)
        half = hoeffding if not math.isfinite(half) else max(half, hoeffding)
    return mean, mean - half, mean + half
