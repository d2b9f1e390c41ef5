"""Certified arithmetic of a sample's statistics: the radius and rigorous bounds of the margins.

:func:`radius` is an upper bound of max_i ||x_i||, :func:`margin_lower` a lower bound of the margin attained
by an explicit witness direction and :func:`margin_upper` an upper bound of the best margin from an explicit
dual witness (docs/bounds.md section 1, step 3). They are rigorous in floating point: each charges the rounding
error of its sums, products and norms (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
eq. 3.5: |fl(a.b) - a.b| <= gamma_d |a|.|b|, plus the absolute error of products that underflow,
:mod:`pipeline.numerics`), and :func:`margin_upper` sums exactly before rounding once. Any witness gives a
valid bound, so a solver's inaccuracy can loosen them but never falsify them. :mod:`pipeline.data.certify`
assembles them into a sample's statistics; :mod:`pipeline.solvers.comparators` rounds its margins outwards
with :func:`margins_lower`.

Extreme scales. Data whose largest entry lies outside 2^-400 .. 2^400 are first scaled by a power of
two to unit size: exact (refused with :class:`pipeline.params.UserError` when an entry would round),
and every statistic scales with the data, so nothing overflows and underflow stays negligible. The
results are scaled back and rounded outwards. Data that are not finite are refused
(:class:`pipeline.params.UserError`).
"""

from __future__ import annotations

import math

import numpy as np
from pipeline._lazy import LazyModule
from pipeline.numerics import (
    ETA,
    EXACT_PRODUCT,
    TINY,
    UNIT_ROUNDOFF,
    err_factor,
    round_down,
    round_up,
    round_up_or_zero,
    two_product,
)
from pipeline.params import UserError

sparse = LazyModule("scipy.sparse")

Matrix = "np.ndarray | sparse.csr_matrix"


# --- Scaling by powers of two: exact, and the statistics scale with the data ----------------------

_WINDOW = 400  # entries up to 2^400 keep every square and sum below overflow (d, m < 2^100)


def _exponent(top: float, window: int) -> int:
    """k with top * 2^k in [1/2, 1), or 0 when top is 0 or within 2^-window .. 2^window."""
    e = math.frexp(top)[1]
    return 0 if top == 0.0 or -window < e <= window else -e


def _largest(X: Matrix) -> float:
    """max |x_ij|; a NaN or infinite entry is refused (no statistic of such data means anything)."""
    values = X.data if sparse.issparse(X) else np.asarray(X)
    top = max(float(values.max(initial=0.0)), -float(values.min(initial=0.0)))  # = max |x_ij|, without a copy of |X|
    if not math.isfinite(top):
        raise UserError("the data contain NaN or infinite values: no radius or margin can be certified on them; "
                        "drop or impute those entries")
    return top


def _unit_scale(X: Matrix, window: int = _WINDOW, exact: bool = True) -> tuple[Matrix, int]:
    """(X 2^k, k) with the largest entry in [1/2, 1) when it lies outside 2^-window .. 2^window, else (X, 0).

    R(cX) = c R(X) and gamma*(cX) = c gamma*(X), so statistics of X 2^k scaled by 2^-k are those of X.
    Scaling up is always exact; scaling down rounds entries that become subnormal, refused (UserError)
    when ``exact``: the statistics would then be those of other vectors.
    """
    top = _largest(X)
    k = _exponent(top, window)
    if k == 0:
        return X, 0
    if sparse.issparse(X):
        X = sparse.csr_matrix(X)
        Xs = X.copy()
        Xs.data = np.ldexp(X.data, k)
        rounded = k < 0 and not np.array_equal(np.ldexp(Xs.data, -k), X.data)
    else:
        Xs = np.ldexp(np.asarray(X, dtype=np.float64), k)
        rounded = k < 0 and not np.array_equal(np.ldexp(Xs, -k), X)
    if rounded and exact:
        raise UserError(f"the data's entries span more than float64's exponent range (largest {top:.3g}): scaling "
                        "them to unit size would round the smallest; rescale the data or drop its tiniest entries")
    return Xs, k


def _unit_witness(v: np.ndarray, window: int) -> np.ndarray:
    """A witness scaled by a power of two (its direction is all that counts) with the largest entry in
    [1/2, 1) when outside 2^-window .. 2^window. Any rounding only makes it another valid witness."""
    v = np.asarray(v, dtype=np.float64)
    top = float(np.abs(v).max(initial=0.0))
    if not (math.isfinite(top) and top > 0):
        raise ValueError("a witness must be finite and non-zero")
    k = _exponent(top, window)
    return np.ldexp(v, k) if k else v


def _scaled_back(x: float | np.ndarray, k: int, outward: object) -> float | np.ndarray:
    """x 2^-k, exact unless the result is subnormal: then one more step ``outward`` (up or down)."""
    if k == 0:
        return x
    with np.errstate(over="ignore"):  # an infinite result is refused by the caller (_checked_radius)
        out = np.ldexp(x, -k)
    out = np.where(np.abs(out) < TINY, outward(out), out)
    return float(out) if np.ndim(out) == 0 else out


# --- The statistics --------------------------------------------------------------------------------


def radius(X: Matrix) -> float:
    """Rigorous upper bound of max_i ||x_i|| for the float rows of ``X`` (dense or sparse)."""
    Xs, k = _unit_scale(X)
    sq = np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel() if sparse.issparse(Xs) else np.einsum("ij,ij->i", Xs, Xs)
    R = math.sqrt(sq.max(initial=0.0) * (1.0 + err_factor(X.shape[1]))) * (1.0 + 2.0 * UNIT_ROUNDOFF)
    return _scaled_back(R, k, round_up)


_CHUNK_ENTRIES = 1 << 20  # entries of X per block of rows where a pass needs a temporary as large as the block


def margins_lower(X: Matrix, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Rigorous lower bounds of each y_i w.x_i / ||w||: the rounding of every dot product and of
    ||w|| is charged against the margin, so each value is below the exact one."""
    lower: np.ndarray = margins_lower_each(X, y, np.asarray(w, dtype=np.float64)[None, :])[0]
    return lower


def margins_lower_each(X: Matrix, y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """:func:`margins_lower` of each row w of ``W`` (k, d), as a (k, m) array: the sample scaled and read once for
    all of them (the comparators of a run: seven directions). Each bound charges gamma_d of its products' moduli
    and of ||w||^2, which covers any order of summation (BLAS's, for one row or for several)."""
    Xs, k = _unit_scale(X)
    W = np.stack([_unit_witness(w, _WINDOW) for w in np.asarray(W, dtype=np.float64)])
    d = X.shape[1]
    g = err_factor(d)
    y = np.asarray(y, dtype=np.float64)
    W_abs = np.abs(W)
    margins = np.empty((X.shape[0], W.shape[0]))
    step = max(1, _CHUNK_ENTRIES // max(d, W.shape[0], 1))  # rows at a time: |X| is never formed for the whole sample
    for start in range(0, X.shape[0], step):
        part = Xs[start:start + step]
        # d ETA: products that underflow err absolutely, outside the relative model gamma_d covers
        margins[start:start + step] = (y[start:start + step, None] * np.asarray(part @ W.T)
                                       - (g * np.asarray(abs(part) @ W_abs.T) + d * ETA))
    norm_hi = np.sqrt(np.einsum("ij,ij->i", W, W) * (1.0 + g)) * (1.0 + 2.0 * UNIT_ROUNDOFF)
    lo = (margins / norm_hi).T
    lo = np.where(lo > 0, lo * (1.0 - 4.0 * UNIT_ROUNDOFF), lo * (1.0 + 4.0 * UNIT_ROUNDOFF))
    return np.asarray(_scaled_back(lo, k, round_down))


def margin_lower(X: Matrix, y: np.ndarray, w: np.ndarray) -> float:
    """Rigorous lower bound of min_i y_i w.x_i / ||w||: a margin attained by the explicit ``w``.

    Any ``w`` gives gamma_lo <= gamma*(S) (docs/bounds.md section 1, step 3).
    """
    return float(np.min(margins_lower(X, y, w)))


def margin_upper(X: Matrix, y: np.ndarray, alpha: np.ndarray) -> float:
    """Rigorous upper bound of ||p|| >= gamma*(S), p = sum_i alpha_i y_i x_i / sum_i alpha_i, alpha >= 0.

    For any unit w, min_i y_i w.x_i <= sum_i alpha_i y_i w.x_i / sum_i alpha_i = w.p <= ||p||
    (docs/bounds.md section 1, step 3). The bound is on the exact p of the float data and ``alpha``, not
    on a computed value: p's sum cancels (||p|| = gamma* is often far below the terms' size R), so an
    ordinary float sum can err by ~ n u R / gamma* relative, more than any fixed factor covers. So
    each component of sum_i alpha_i y_i x_i is computed exactly and rounded once: every product is
    split exactly into p + e (:func:`two_product`) and the 2n parts are summed by ``math.fsum``
    (Shewchuk's algorithm: exact, then correctly rounded). The charged rounding is then one ulp per
    component, one per square, one for the sum of squares, the square root and the division, all
    rounded upwards (:func:`pipeline.numerics.round_up`; sum_i alpha_i rounded downwards), and 8 ETA per
    product that underflows (TwoProduct is exact only above 2^-968). A component that sums to exactly
    zero stays zero, so an exactly cancelling p gives gamma_hi = 0.0.

    ``alpha`` is first scaled by a power of two (p does not change) and ``X`` outside 2^-400 .. 2^400
    (see the module docstring), so no step overflows. Labels must be +/-1 (then alpha_i y_i is exact).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    if np.any(alpha < 0) or not alpha.sum() > 0:
        raise ValueError("alpha must be non-negative with a positive sum")
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.abs(y) == 1.0):
        raise ValueError("labels must be +1 or -1")
    Xs, k = _unit_scale(X)
    a = _unit_witness(alpha, 0)  # largest entry in [1/2, 1): no product or square below overflows
    rows = np.flatnonzero(a)  # zero terms round nothing: only rows with alpha_i != 0 are summed
    v = a[rows] * y[rows]
    if sparse.issparse(Xs):  # entries grouped by column: CSC of the rows that count
        cols = sparse.csr_matrix(Xs)[rows].tocsc()
        starts, values, factor = cols.indptr, cols.data, v[cols.indices]
    else:
        dense = np.asarray(Xs, dtype=np.float64)[rows]
        starts = np.arange(dense.shape[1] + 1) * rows.size  # column j: entries starts[j] .. starts[j + 1]
        values, factor = dense.T.ravel(), np.tile(v, dense.shape[1])
    prod, err = two_product(factor, values)
    underflow = (values != 0.0) & (np.abs(prod) < EXACT_PRODUCT)
    prod, err = prod.tolist(), err.tolist()
    component = np.zeros(X.shape[1])
    for j in np.flatnonzero(np.diff(starts)):
        lo, hi = starts[j], starts[j + 1]
        component[j] = abs(math.fsum(prod[lo:hi] + err[lo:hi]))  # exact sum, rounded once
    bound = round_up_or_zero(component)  # >= |exact component| (correct rounding: within half an ulp)
    if underflow.any():
        counted = np.concatenate([[0], np.cumsum(underflow)])
        tiny = (counted[starts[1:]] - counted[starts[:-1]]).astype(np.float64)  # underflowing products per column
        bound = np.where(tiny > 0, round_up(bound + tiny * 8.0 * ETA), bound)
    norm = round_up_or_zero(math.sqrt(round_up_or_zero(math.fsum(round_up_or_zero(bound * bound).tolist()))))
    total = round_down(math.fsum(a[rows].tolist()))  # fsum is correctly rounded: one step down is below the exact sum
    return _scaled_back(round_up_or_zero(norm / total), k, round_up)
