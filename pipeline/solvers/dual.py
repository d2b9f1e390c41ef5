"""Certified comparators for the Pegasos family: exact dual coordinate ascent with a duality gap.

The comparator f* of docs/bounds.md sections 4-6 is never taken on trust from a solver's stopping rule.
Dual coordinate ascent (SDCA with the hinge loss's closed-form coordinate step: Shalev-Shwartz &
Zhang, "Stochastic dual coordinate ascent methods for regularized loss minimization", JMLR 14, 2013,
section 6.2; Hsieh, Chang, Lin, Keerthi & Sundararajan, "A dual coordinate descent method for
large-scale linear SVM", ICML 2008) returns a primal point w and a dual point alpha, and weak duality
gives the two-sided certificate

    D(alpha) <= F* <= F(w)

for *every* w and every alpha in the box, so the result is certified whatever the iterations did:
an unfinished run only has a wider gap. The objectives (docs/bounds.md section 0 convention, lambda/2):

    F(w) = lam/2 ||w - w_ref||^2 + (1/m) sum_i s_i max(0, 1 - y_i <w, x_i>)
    D(alpha) = (1/m) sum_i alpha_i (1 - y_i <w_ref, x_i>) - lam/2 ||v(alpha)||^2,
    v(alpha) = (lam m)^{-1} sum_i alpha_i y_i x_i,   alpha_i in [0, s_i],

covering plain Pegasos (section 4: s = 1, w_ref = 0), the weighted imbalanced objective (section 6:
s_j = N / (2 N_{y_j})) and transfer (section 6: w_ref = w_r); :func:`kernel_sdca` is the same on a
Gram matrix (section 5). Weak duality: s max(0, u) = max_{0 <= a <= s} a u, so F(w) is the maximum
over the box of a Lagrangian whose minimum over w, for fixed alpha, is D(alpha) (attained at
w = w_ref + v(alpha)).

Floating point. Both ends are evaluated afresh from the returned vectors (never from quantities
tracked during the iterations), with left-to-right sums in compiled kernels (:mod:`pipeline._jit`),
so a certificate is bit-identical run to run and the same for dense and CSR input. Each end is then
rounded outwards by an a-priori bound of its rounding error, in the manner of
:mod:`pipeline.solvers.certified` (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
eq. 3.5: a recursive sum of n terms errs by at most gamma_n times the sum of their moduli; gamma
doubled to cover the evaluation of the bound itself). The one sum with heavy cancellation,
v(alpha) = (lam m)^{-1} sum_i alpha_i y_i x_i (for a Gram matrix, K (alpha y)), whose terms are
~1/lam larger than the result at small lam, is computed by Dot2 (Ogita, Rump & Oishi, "Accurate sum
and dot product", SIAM J. Sci. Comput. 26(6), 2005: error-free products and sums, result as if
computed in twice the working precision), so its error enters only as gamma_m^2. The resulting pad
is ~5e-13 on the problems of docs/bounds.md (m = 1000, d = 20), far below the target gap 1e-9. Barring
overflow and underflow, what is certified is the problem for the float data as given (X, y, s,
w_ref, lam; for kernels the matrix K, which must be positive semi-definite: a Gram matrix's own
rounding, ~1e-16 relative, is part of the data, not of the certificate, but it can leave a
rank-deficient K with eigenvalues just below 0, and then the weak duality behind the certificate
fails; :func:`pipeline.numerics.psd_gram` certifies K, or shifts it by a rounding-sized multiple of the identity until
certified).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from pipeline._jit import helper, kernel, split, two_product, two_product_split, two_sum
from pipeline._lazy import LazyModule
from pipeline.params import POSITIVE, ParamError

sparse = LazyModule("scipy.sparse")

from pipeline.numerics import err_factor, symmetric_gram  # noqa: E402


@dataclass(frozen=True)
class Certificate:
    """A certified solution: D(alpha) <= F* <= F(w), both ends evaluated from the returned vectors.

    Attributes
    ----------
    w : primal point: the weight vector (linear), or the expansion coefficients a with
        w = sum_i a_i y_i phi(x_i) (kernel).
    alpha : dual variables, alpha_i in [0, s_i] (exactly: the clipping is exact in floating point).
    primal : F(w) rounded upwards by its rounding-error bound: an upper bound of F*.
    dual : D(alpha) rounded downwards by its rounding-error bound: a lower bound of F*.
    gap : primal - dual >= 0, a certified bound of F(w) - F* (the suboptimality to report).
    epochs : passes made over the sample.
    """

    w: np.ndarray
    alpha: np.ndarray
    primal: float
    dual: float
    gap: float
    epochs: int


# --- Compiled kernels: plain loops, fixed summation order (pipeline._jit) ------------------------


@helper
def _shuffle(order, rng):  # noqa: ANN001, ANN202
    """Fisher-Yates in place, for i = m-1, ..., 1 the position swapped with i drawn as int(u (i + 1)), u =
    ``rng.random()`` (the numpy Generator's doubles; numba draws the same ones). Drawn as each epoch starts, so
    epochs that are never made draw nothing (``Generator.permuted`` cost more than an epoch over 200 x 5
    entries)."""
    for i in range(order.shape[0] - 1, 0, -1):
        j = min(int(rng.random() * (i + 1)), i)
        t = order[j]
        order[j] = order[i]
        order[i] = t


@kernel
def _dense_epochs(X, y, b, s, sqn, lm, alpha, v, rng, epochs):  # noqa: ANN001, ANN202
    """At most ``epochs`` SDCA epochs over the rows of a dense X, each in a fresh random order (:func:`_shuffle`
    from ``rng``); ``alpha`` and ``v = sum_i alpha_i y_i x_i / lm`` are updated in place.
    ``b_i = 1 - y_i <w_ref, x_i>``, so ``b_i - y_i <v, x_i> = 1 - y_i <w, x_i>``. Rows with ``sqn[i] == 0`` are
    skipped. Stops after an epoch that changed no coordinate (every later epoch would change none: v is
    unchanged). Returns (epochs made, coordinates changed in the last)."""
    d = X.shape[1]
    order = np.arange(X.shape[0])
    changed = 0
    for e in range(epochs):
        _shuffle(order, rng)
        changed = 0
        for i in order:
            if sqn[i] == 0.0:
                continue
            z = 0.0
            for j in range(d):
                z += v[j] * X[i, j]
            a = min(max(alpha[i] + lm * (b[i] - y[i] * z) / sqn[i], 0.0), s[i])
            delta = a - alpha[i]
            if delta != 0.0:
                alpha[i] = a
                c = delta * y[i] / lm
                for j in range(d):
                    v[j] += c * X[i, j]
                changed += 1
        if changed == 0:
            return e + 1, 0
    return epochs, changed


@kernel
def _sparse_epochs(indptr, indices, data, y, b, s, sqn, lm, alpha, v, rng, epochs):  # noqa: ANN001, ANN202
    """:func:`_dense_epochs` over CSR rows: cost per step proportional to the row's non-zeros. Sums
    run over the stored entries in index order, so every float equals the dense kernel's."""
    order = np.arange(indptr.shape[0] - 1)
    changed = 0
    for e in range(epochs):
        _shuffle(order, rng)
        changed = 0
        for i in order:
            if sqn[i] == 0.0:
                continue
            z = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                z += v[indices[p]] * data[p]
            a = min(max(alpha[i] + lm * (b[i] - y[i] * z) / sqn[i], 0.0), s[i])
            delta = a - alpha[i]
            if delta != 0.0:
                alpha[i] = a
                c = delta * y[i] / lm
                for p in range(indptr[i], indptr[i + 1]):
                    v[indices[p]] += c * data[p]
                changed += 1
        if changed == 0:
            return e + 1, 0
    return epochs, changed


@kernel
def _gram_epochs(K, y, s, lm, alpha, g, rng, epochs):  # noqa: ANN001, ANN202
    """SDCA epochs on a symmetric Gram matrix, in the orders of :func:`_dense_epochs`: ``g = K (alpha * y)`` is
    updated in place, so y_i <v, phi(x_i)> = y_i g_i / lm and the step is (lm - y_i g_i) / K_ii. Rows with
    K_ii == 0 are skipped. Stops, and returns, as :func:`_dense_epochs`."""
    m = K.shape[0]
    order = np.arange(m)
    changed = 0
    for e in range(epochs):
        _shuffle(order, rng)
        changed = 0
        for i in order:
            if K[i, i] == 0.0:
                continue
            a = min(max(alpha[i] + (lm - y[i] * g[i]) / K[i, i], 0.0), s[i])
            delta = a - alpha[i]
            if delta != 0.0:
                alpha[i] = a
                c = delta * y[i]
                for j in range(m):
                    g[j] += c * K[i, j]
                changed += 1
        if changed == 0:
            return e + 1, 0
    return epochs, changed


@kernel
def _dense_margins(X, w, z, za):  # noqa: ANN001, ANN202
    """z_i = <w, x_i> and za_i = sum_j |w_j x_ij| (its rounding-error scale), rows of a dense X."""
    for i in range(X.shape[0]):
        t = 0.0
        ta = 0.0
        for j in range(X.shape[1]):
            p = w[j] * X[i, j]
            t += p
            ta += abs(p)
        z[i] = t
        za[i] = ta


@kernel
def _sparse_margins(indptr, indices, data, w, z, za):  # noqa: ANN001, ANN202
    """:func:`_dense_margins` over CSR rows."""
    for i in range(indptr.shape[0] - 1):
        t = 0.0
        ta = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            q = w[indices[p]] * data[p]
            t += q
            ta += abs(q)
        z[i] = t
        za[i] = ta


@kernel
def _dense_squared_norms(X, out):  # noqa: ANN001, ANN202
    """out_i = ||x_i||^2, rows of a dense X."""
    for i in range(X.shape[0]):
        t = 0.0
        for j in range(X.shape[1]):
            t += X[i, j] * X[i, j]
        out[i] = t


@kernel
def _sparse_squared_norms(indptr, data, out):  # noqa: ANN001, ANN202
    """:func:`_dense_squared_norms` over CSR rows."""
    for i in range(indptr.shape[0] - 1):
        t = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            t += data[p] * data[p]
        out[i] = t


@kernel
def _dense_combination(X, y, alpha, lm, v, c):  # noqa: ANN001, ANN202
    """v = sum_i alpha_i y_i x_i / lm by compensated summation over i in order, c = sum_i alpha_i |x_i| / lm.

    Each sum is Dot2 (Ogita, Rump & Oishi 2005, section 5): the products are split exactly
    (:func:`pipeline._jit.two_product`, Dekker's splitting, no FMA needed; each ay split once) and the
    sums kept exactly (:func:`pipeline._jit.two_sum`), so
    |fl(v_j) lm - sum_i alpha_i y_i x_ij| <= u |.| + gamma_m^2 c_j lm: the cancellation between the
    terms costs ~1e-26 relative instead of ~1e-13. Exact zeros add nothing (dense == CSR).
    """
    d = X.shape[1]
    hi = np.zeros(d)
    lo = np.zeros(d)
    c[:] = 0.0
    for i in range(X.shape[0]):
        if alpha[i] != 0.0:
            ay = alpha[i] * y[i]
            ah, al = split(ay)
            for j in range(d):
                x = X[i, j]
                prod, err = two_product_split(ay, ah, al, x)
                total, e = two_sum(hi[j], prod)
                lo[j] += e + err
                hi[j] = total
                c[j] += alpha[i] * abs(x)
    for j in range(d):
        v[j] = (hi[j] + lo[j]) / lm
        c[j] /= lm


@kernel
def _sparse_combination(indptr, indices, data, y, alpha, lm, v, c):  # noqa: ANN001, ANN202
    """:func:`_dense_combination` over CSR rows."""
    d = v.shape[0]
    hi = np.zeros(d)
    lo = np.zeros(d)
    c[:] = 0.0
    for i in range(indptr.shape[0] - 1):
        if alpha[i] != 0.0:
            ay = alpha[i] * y[i]
            ah, al = split(ay)
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                x = data[p]
                prod, err = two_product_split(ay, ah, al, x)
                total, e = two_sum(hi[j], prod)
                lo[j] += e + err
                hi[j] = total
                c[j] += alpha[i] * abs(x)
    for j in range(d):
        v[j] = (hi[j] + lo[j]) / lm
        c[j] /= lm


@kernel
def _gram_products(K, coef, u, ua):  # noqa: ANN001, ANN202
    """u = K coef by Dot2 along each row (see :func:`_dense_combination`), ua_i = sum_j |K_ij coef_j|."""
    m = K.shape[0]
    for i in range(m):
        hi = 0.0
        lo = 0.0
        ta = 0.0
        for j in range(m):
            prod, err = two_product(K[i, j], coef[j])
            hi, e = two_sum(hi, prod)
            lo += e + err
            ta += abs(prod)
        u[i] = hi + lo
        ua[i] = ta


@kernel
def _loss_sums(y, s, z, ze):  # noqa: ANN001, ANN202
    """L = sum_i s_i max(0, 1 - y_i z_i), with sum_i s_i ze_i (the margins' errors ze) and
    sum_i s_i (1 + |z_i|) (the scale of the rounding in 1 - y_i z_i and in the sum)."""
    loss = 0.0
    carried = 0.0
    scale = 0.0
    for i in range(y.shape[0]):
        h = 1.0 - y[i] * z[i]
        if h > 0.0:
            loss += s[i] * h
        carried += s[i] * ze[i]
        scale += s[i] * (1.0 + abs(z[i]))
    return loss, carried, scale


@kernel
def _pair_sums(a, b, eb):  # noqa: ANN001, ANN202
    """sum_i a_i b_i, sum_i |a_i b_i| and sum_i |a_i| eb_i (eb: the errors of b)."""
    t = 0.0
    ta = 0.0
    te = 0.0
    for i in range(a.shape[0]):
        t += a[i] * b[i]
        ta += abs(a[i] * b[i])
        te += abs(a[i]) * eb[i]
    return t, ta, te


@kernel
def _square_sums(v, r):  # noqa: ANN001, ANN202
    """sum_j (v_j - r_j)^2."""
    t = 0.0
    for j in range(v.shape[0]):
        e = v[j] - r[j]
        t += e * e
    return t


@kernel
def _norm_error(v, c, f4, gm2):  # noqa: ANN001, ANN202
    """sum_j e_j (2 |v_j| + e_j) with e_j = f4 |v_j| + gm2 c_j: the error of ||fl(v)||^2 (:meth:`_Linear.evaluate`)."""
    t = 0.0
    for j in range(v.shape[0]):
        e = f4 * abs(v[j]) + gm2 * c[j]
        t += e * (2.0 * abs(v[j]) + e)
    return t


@kernel
def _dense_ends(X, y, alpha, b, b_err, s, r, lam, lm, g_m, gm2, g_d, f4, f8, w, v):  # noqa: ANN001, ANN202
    """:meth:`_Linear.evaluate` on dense rows in one call, the same operations in the same order (the same
    bits: tests/test_dual.py): the Python form's dozen calls cost ~25 us on 200 x 5, its arithmetic ~2 us.
    Fills v = fl(v(alpha)) and w = w_ref + v; returns (F(w), its error bound, D(alpha), its error bound)."""
    m = X.shape[0]
    d = X.shape[1]
    c = np.empty(d)
    _dense_combination(X, y, alpha, lm, v, c)
    linear, linear_abs, linear_carried = _pair_sums(alpha, b, b_err)
    norm = _square_sums(v, np.zeros(d))
    norm_err = g_d * norm + _norm_error(v, c, f4, gm2)
    linear_err = g_m * linear_abs + (1.0 + g_m) * linear_carried
    dual = linear / m - lam / 2.0 * norm
    dual_err = linear_err / m + lam / 2.0 * norm_err + f8 * (abs(linear) / m + lam / 2.0 * norm)
    for j in range(d):
        w[j] = r[j] + v[j]
    z = np.empty(m)
    za = np.empty(m)
    _dense_margins(X, w, z, za)
    loss, carried, scale = _loss_sums(y, s, z, g_d * za)
    reg = _square_sums(w, r)
    value = lam / 2.0 * reg + loss / m
    err = (1.0 + g_m) * carried / m + g_m * (loss + scale) / m
    return value, err + g_d * lam / 2.0 * reg, dual, dual_err


@helper
def _same(a, b):  # noqa: ANN001, ANN202
    """Whether two arrays of one length hold the same values."""
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


@kernel
def _dense_ascent(X, y, b, b_err, s, r, sqn, lam, lm, g_m, gm2, g_d, f4, f8, tol, max_epochs, calls0,  # noqa: ANN001, ANN202
                  calls1, work, steps, largest, alpha, rng, w):  # noqa: ANN001
    """:func:`_ascend` on dense rows, the whole loop compiled: the same evaluations, polishes, epochs and draws
    from ``rng`` in the same order, so the same certificate bit for bit (CSR rows take the Python loop:
    tests/test_dual.py compares them). On 200 x 5 the Python around each of the ~20 evaluations of a
    comparator's six solves was ~15 us, as much as the solves' arithmetic. ``alpha`` is the start and is
    updated in place; ``w`` receives the primal point. Returns (primal end, dual end, epochs)."""
    m = X.shape[0]
    d = X.shape[1]
    v = np.empty(d)
    value, err, dual, dual_err = _dense_ends(X, y, alpha, b, b_err, s, r, lam, lm, g_m, gm2, g_d, f4, f8, w, v)
    codes = np.zeros(m, dtype=np.int8)
    previous = np.zeros(m, dtype=np.int8)
    tried = np.zeros(m, dtype=np.int8)
    has_previous = False
    has_tried = False
    epochs = 0
    k = 0
    stationary = False
    while True:
        hi = value + err
        lo = dual - dual_err
        if hi - lo <= tol or epochs >= max_epochs:  # the gap max(hi - lo, 0) <= tol (tol >= 0; a NaN gap goes on)
            return hi, lo, epochs
        n = 0
        for i in range(m):
            codes[i] = (1 if alpha[i] > 0 else 0) + (1 if alpha[i] == s[i] else 0)
            if codes[i] == 1:
                n += 1
        stable = has_previous and _same(codes, previous) and not (has_tried and _same(codes, tried))
        cheap = k >= calls1 and steps * n * n * n <= k * work
        if 0 < n <= largest and (stable or cheap):
            tried[:] = codes
            has_tried = True
            free = np.flatnonzero(codes == 1)
            fixed = alpha.copy()
            fixed[free] = 0.0
            v_fixed = np.empty(d)
            c = np.empty(d)
            _dense_combination(X, y, fixed, lm, v_fixed, c)
            z = np.empty(m)
            za = np.empty(m)
            _dense_margins(X, v_fixed, z, za)
            G = np.empty((n, n))
            _dense_gram_rows(X, free, G)
            rhs = np.empty(n)
            for a in range(n):
                for e in range(n):
                    G[a, e] = G[a, e] * (y[free[a]] * y[free[e]])
                rhs[a] = lm * (b[free[a]] - y[free[a]] * z[free[a]])
            candidate = alpha.copy()
            candidate[free] = _polish(G, rhs, alpha[free], s[free], steps)
            c_w = np.empty(d)
            c_v = np.empty(d)
            c_value, c_err, c_dual, c_dual_err = _dense_ends(X, y, candidate, b, b_err, s, r, lam, lm, g_m, gm2, g_d,
                                                             f4, f8, c_w, c_v)
            if c_dual - c_dual_err > dual - dual_err:
                alpha[:] = candidate
                v[:] = c_v
                w[:] = c_w
                value, err, dual, dual_err = c_value, c_err, c_dual, c_dual_err
                if (value + err) - (dual - dual_err) <= tol:
                    return value + err, dual - dual_err, epochs
                stationary = False
        if stationary:
            return value + err, dual - dual_err, epochs
        previous[:] = codes
        has_previous = True
        k = min(max(1, epochs // 10, calls0), 50, max_epochs - epochs)
        made, changed = _dense_epochs(X, y, b, s, sqn, lm, alpha, v, rng, k)
        stationary = made == 1 and changed == 0
        epochs += made
        k = made
        value, err, dual, dual_err = _dense_ends(X, y, alpha, b, b_err, s, r, lam, lm, g_m, gm2, g_d, f4, f8, w, v)


@kernel
def _dense_gram_rows(X, idx, G):  # noqa: ANN001, ANN202
    """G_ab = <x_idx[a], x_idx[b]> for the selected rows of a dense X."""
    n = idx.shape[0]
    for a in range(n):
        for c in range(a, n):
            t = 0.0
            for j in range(X.shape[1]):
                t += X[idx[a], j] * X[idx[c], j]
            G[a, c] = t
            G[c, a] = t


@kernel
def _sparse_gram_rows(indptr, indices, data, idx, G):  # noqa: ANN001, ANN202
    """:func:`_dense_gram_rows` over CSR rows (sorted indices): a merge of the two rows, summing the
    common entries in index order, so every entry equals the dense kernel's."""
    n = idx.shape[0]
    for a in range(n):
        for c in range(a, n):
            p, pe = indptr[idx[a]], indptr[idx[a] + 1]
            q, qe = indptr[idx[c]], indptr[idx[c] + 1]
            t = 0.0
            while p < pe and q < qe:
                if indices[p] == indices[q]:
                    t += data[p] * data[q]
                    p += 1
                    q += 1
                elif indices[p] < indices[q]:
                    p += 1
                else:
                    q += 1
            G[a, c] = t
            G[c, a] = t


# --- Rows of X: one small adapter per storage, the kernels above do the work -----------------------


class _Dense:
    def __init__(self, X: np.ndarray) -> None:
        self.X = X
        self.m, self.d = X.shape
        self.nnz = int(np.count_nonzero(X))  # as CSR counts it (:meth:`_Linear.epoch_work`)

    def margins(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z, za = np.empty(self.m), np.empty(self.m)
        _dense_margins(self.X, w, z, za)
        return z, za

    def combination(self, y: np.ndarray, alpha: np.ndarray, lm: float) -> tuple[np.ndarray, np.ndarray]:
        v, c = np.empty(self.d), np.empty(self.d)
        _dense_combination(self.X, y, alpha, lm, v, c)
        return v, c

    def squared_norms(self) -> np.ndarray:
        out = np.empty(self.m)
        _dense_squared_norms(self.X, out)
        return out

    def gram_rows(self, idx: np.ndarray) -> np.ndarray:
        G = np.empty((idx.shape[0], idx.shape[0]))
        _dense_gram_rows(self.X, idx, G)
        return G

    def epochs(self, *args: Any) -> tuple[int, int]:
        return _dense_epochs(self.X, *args)


class _Sparse:
    def __init__(self, X: Any) -> None:
        self.indptr, self.indices, self.data = X.indptr, X.indices, X.data
        self.m, self.d = X.shape
        self.nnz = int(np.count_nonzero(X.data))  # an explicitly stored zero is no entry, as in dense storage

    def margins(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z, za = np.empty(self.m), np.empty(self.m)
        _sparse_margins(self.indptr, self.indices, self.data, w, z, za)
        return z, za

    def combination(self, y: np.ndarray, alpha: np.ndarray, lm: float) -> tuple[np.ndarray, np.ndarray]:
        v, c = np.empty(self.d), np.empty(self.d)
        _sparse_combination(self.indptr, self.indices, self.data, y, alpha, lm, v, c)
        return v, c

    def squared_norms(self) -> np.ndarray:
        out = np.empty(self.m)
        _sparse_squared_norms(self.indptr, self.data, out)
        return out

    def gram_rows(self, idx: np.ndarray) -> np.ndarray:
        G = np.empty((idx.shape[0], idx.shape[0]))
        _sparse_gram_rows(self.indptr, self.indices, self.data, idx, G)
        return G

    def epochs(self, *args: Any) -> tuple[int, int]:
        return _sparse_epochs(self.indptr, self.indices, self.data, *args)


def _rows(X: Any) -> _Dense | _Sparse:
    """Read X as dense float64 (C order) or canonical CSR float64 (sorted, summed duplicates)."""
    if sparse.issparse(X):
        X = sparse.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        X.sort_indices()
        values = X.data
        rows: _Dense | _Sparse = _Sparse(X)
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ParamError("X", f"array of shape {X.shape}", "a 2-D array (m, d) or a scipy.sparse matrix")
        values = X
        rows = _Dense(X)
    if rows.m == 0:
        raise ParamError("X", "empty", "a sample with at least one row")
    if not np.all(np.isfinite(values)):
        raise ParamError("X", "non-finite entries", "finite")
    return rows


def _labels(y: Any, m: int) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64).ravel()
    if m == 0 or y.shape != (m,) or not np.all(np.abs(y) == 1.0):
        raise ParamError("y", f"array of shape {y.shape}", f"{m} labels in {{-1, +1}}")
    return y


def _lam(lam: float) -> float:
    lam = float(lam)
    POSITIVE.check("lam", lam)  # the learners' one rule for lam (pipeline.params.LAM)
    return lam


def _weights(weights: Any, m: int) -> np.ndarray:
    if weights is None:
        return np.ones(m)
    s = np.asarray(weights, dtype=np.float64).ravel()
    if s.shape != (m,) or not np.all((s > 0) & np.isfinite(s)):
        raise ParamError("weights", f"array of shape {s.shape}", f"{m} finite weights s_i > 0")
    return s


def _vector(name: str, value: Any, d: int) -> np.ndarray:
    """``value`` as a finite float64 vector of length d; None means the zero vector."""
    if value is None:
        return np.zeros(d)
    r = np.asarray(value, dtype=np.float64).ravel()
    if r.shape != (d,) or not np.all(np.isfinite(r)):
        raise ParamError(name, f"array of shape {r.shape}", f"a finite vector of length {d}")
    return r


# --- The two problems: both ends of the certificate with their rounding-error bounds ---------------

_Pair = tuple[float, float]  # a computed value and a bound of its rounding error


class _Linear:
    """The linear problem of docs/bounds.md sections 4 and 6 on the rows of X."""

    def __init__(self, rows: _Dense | _Sparse, y: np.ndarray, lam: float, s: np.ndarray, r: np.ndarray) -> None:
        self.rows, self.y, self.lam, self.s, self.r = rows, y, lam, s, r
        self.m, self.lm = rows.m, lam * rows.m
        self.g_m, self.g_d = err_factor(rows.m + 8), err_factor(rows.d + 8)
        zr, zra = rows.margins(r)
        self.b = 1.0 - y * zr  # 1 - y_i <w_ref, x_i>
        self.b_err = self.g_d * (1.0 + zra)  # |fl(b_i) - b_i|
        self.sqn = rows.squared_norms()
        self.calls = _calls(self.epoch_work(0))

    def start(self) -> np.ndarray:
        """alpha = 0, except zero rows: their loss is the constant s_i, and alpha_i = s_i is optimal."""
        return np.where(self.sqn == 0.0, self.s, 0.0)

    def with_lam(self, lam: float) -> _Linear:
        """The same problem at another lam (nothing else here depends on lam)."""
        other = copy.copy(self)
        other.lam, other.lm = lam, lam * self.m
        return other

    def primal(self, w: np.ndarray) -> _Pair:
        """fl(F(w)) and a bound of its rounding error: each margin errs by at most gamma_d sum_j
        |w_j x_ij|, the hinge and the sum over i by gamma_m of their scale, the norm by gamma_d."""
        z, za = self.rows.margins(w)
        loss, carried, scale = _loss_sums(self.y, self.s, z, self.g_d * za)
        reg = _square_sums(w, self.r)
        value = self.lam / 2.0 * reg + loss / self.m
        err = (1.0 + self.g_m) * carried / self.m + self.g_m * (loss + scale) / self.m
        return value, err + self.g_d * self.lam / 2.0 * reg

    def evaluate(self, alpha: np.ndarray) -> tuple[np.ndarray, _Pair, _Pair, np.ndarray]:
        """The primal point w = w_ref + fl(v(alpha)), both ends, and the state v of the epochs.

        v(alpha) is summed afresh by Dot2, so |fl(v_j) - v_j| <= e_j = gamma_4 |v_j| + gamma_m^2 c_j
        with c = sum_i alpha_i |x_i| / (lam m); it reaches ||v||^2 as sum_j e_j (2 |v_j| + e_j).
        Dense rows: :func:`_dense_ends`, the same bits in one compiled call.
        """
        if isinstance(self.rows, _Dense):
            v, w = np.empty(self.rows.d), np.empty(self.rows.d)
            value, err, dual, dual_err = _dense_ends(self.rows.X, self.y, alpha, self.b, self.b_err, self.s, self.r,
                                                     self.lam, self.lm, self.g_m, self.g_m**2, self.g_d,
                                                     err_factor(4), err_factor(8), w, v)
            return w, (value, err), (dual, dual_err), v
        return self.evaluate_in_steps(alpha)

    def evaluate_in_steps(self, alpha: np.ndarray) -> tuple[np.ndarray, _Pair, _Pair, np.ndarray]:
        """:meth:`evaluate` a kernel call a step, for any storage of the rows."""
        v, c = self.rows.combination(self.y, alpha, self.lm)
        linear, linear_abs, linear_carried = _pair_sums(alpha, self.b, self.b_err)
        norm = _square_sums(v, np.zeros(self.rows.d))
        norm_err = self.g_d * norm + _norm_error(v, c, err_factor(4), self.g_m**2)
        linear_err = self.g_m * linear_abs + (1.0 + self.g_m) * linear_carried
        dual = linear / self.m - self.lam / 2.0 * norm
        dual_err = (linear_err / self.m + self.lam / 2.0 * norm_err
                    + err_factor(8) * (abs(linear) / self.m + self.lam / 2.0 * norm))
        w = self.r + v
        return w, self.primal(w), (dual, dual_err), v

    def run(self, alpha: np.ndarray, v: np.ndarray, rng: np.random.Generator, epochs: int) -> tuple[int, int]:
        return self.rows.epochs(self.y, self.b, self.s, self.sqn, self.lm, alpha, v, rng, epochs)

    def epoch_work(self, free: int) -> int:
        """Entries and rows an epoch visits. Non-zero entries, however stored: dense and CSR input of the same
        sample are scheduled alike, so their certificates are the same bits."""
        return self.rows.nnz + self.m

    def reduced(self, alpha: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """D restricted to the free coordinates, the others fixed: up to the factor (lam m^2)^{-1}, a
        concave quadratic rhs.a - a.G.a/2 in a = alpha_F, with G_ik = y_i y_k <x_i, x_k> and
        rhs = lam m (b_F - y_F <v_fixed, x_F>) (its maximiser puts every free point on the margin)."""
        fixed = alpha.copy()
        fixed[free] = 0.0
        v_fixed, _ = self.rows.combination(self.y, fixed, self.lm)
        z, _ = self.rows.margins(v_fixed)
        yf = self.y[free]
        return self.rows.gram_rows(free) * np.outer(yf, yf), self.lm * (self.b[free] - yf * z[free])


class _Kernel:
    """The kernel problem of docs/bounds.md section 5 on a Gram matrix K."""

    def __init__(self, K: np.ndarray, y: np.ndarray, lam: float, s: np.ndarray) -> None:
        self.K, self.y, self.lam, self.s = K, y, lam, s
        self.m = K.shape[0]
        self.lm = lam * self.m
        self.g_m = err_factor(self.m + 8)
        self.calls = (1, 1)  # an evaluation is m^2 products (Dot2): its fixed cost is nothing beside them

    def start(self) -> np.ndarray:
        """alpha = 0, except rows with phi(x_i) = 0 (K_ii = 0), which get their optimum s_i."""
        return np.where(np.diag(self.K) == 0.0, self.s, 0.0)

    def _quadratic(self, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
        """g = fl(K coef) by Dot2 with its errors ge_i = u |g_i| + gamma_m^2 sum_j |K_ij coef_j|,
        and coef^T K coef with a bound of its error."""
        g, ga = np.empty(self.m), np.empty(self.m)
        _gram_products(self.K, coef, g, ga)
        ge = err_factor(2) * np.abs(g) + self.g_m**2 * ga
        quad, quad_abs, quad_carried = _pair_sums(coef, g, ge)
        return g, ge, quad, self.g_m * quad_abs + (1.0 + self.g_m) * quad_carried

    def primal(self, a: np.ndarray) -> _Pair:
        """fl(F(a)) for w = sum_i a_i y_i phi(x_i), and a bound of its rounding error."""
        g, ge, quad, quad_err = self._quadratic(a * self.y)
        loss, carried, scale = _loss_sums(self.y, self.s, g, ge)
        value = self.lam / 2.0 * quad + loss / self.m
        err = (1.0 + self.g_m) * carried / self.m + self.g_m * (loss + scale) / self.m
        return value, err + self.lam / 2.0 * quad_err + err_factor(4) * self.lam / 2.0 * abs(quad)

    def evaluate(self, alpha: np.ndarray) -> tuple[np.ndarray, _Pair, _Pair, np.ndarray]:
        """The primal point a = alpha / (lam m), both ends, and the state g = fl(K (alpha y)) of the
        epochs; D(alpha) = sum(alpha)/m - (alpha y)^T K (alpha y) / (2 lam m^2)."""
        g, _, quad, quad_err = self._quadratic(alpha * self.y)
        total = float(_pair_sums(alpha, np.ones(self.m), np.zeros(self.m))[0])
        scale = 2.0 * self.lam * self.m * self.m
        dual = total / self.m - quad / scale
        dual_err = self.g_m * total / self.m + quad_err / scale + err_factor(8) * abs(quad) / scale
        a = alpha / self.lm
        return a, self.primal(a), (dual, dual_err), g

    def run(self, alpha: np.ndarray, g: np.ndarray, rng: np.random.Generator, epochs: int) -> tuple[int, int]:
        result: tuple[int, int] = _gram_epochs(self.K, self.y, self.s, self.lm, alpha, g, rng, epochs)
        return result

    def epoch_work(self, free: int) -> int:
        return self.m * (free + 1)

    def reduced(self, alpha: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_Linear.reduced` with G = y_F y_F^T K_FF and rhs = lam m - y_F (K (alpha_fixed y))_F."""
        fixed = alpha.copy()
        fixed[free] = 0.0
        g, ga = np.empty(self.m), np.empty(self.m)
        _gram_products(self.K, fixed * self.y, g, ga)
        yf = self.y[free]
        return self.K[np.ix_(free, free)] * np.outer(yf, yf), self.lm - yf * g[free]


@kernel
def _polish(G, rhs, a, s, steps):  # noqa: ANN001, ANN202
    """Ascend q(a) = rhs.a - a.G.a/2 (G positive semi-definite) over the box [0, s] from a feasible a:
    a primal active-set method (Nocedal & Wright, *Numerical Optimization*, 2nd ed., section 16.5).

    With g = rhs - G a the gradient on the free set F, each step moves along
    - n = g - G_FF p, p = G_FF^+ g, if n != 0: n is in the null space of G_FF (more free points than
      dimensions, duplicate points), where q(a + t n) = q(a) + t ||n||^2 grows without bound, so the
      step runs to the first bound;
    - otherwise p, towards the Newton point a + p: q(a + t p) = q(a) + (t - t^2/2) g.p grows on [0, 1].
    A step stopped by a bound moves that coordinate onto it and out of F.

    Compiled: on the few free points of a small sample a step's Python cost (~10 us) was most of a polish.
    The least-squares solve is LAPACK's (numpy's or numba's: the two builds may differ in the last bits,
    which no certificate reads, as each polished point is evaluated afresh).
    """
    a = a.copy()
    n = a.shape[0]
    free = np.ones(n, dtype=np.bool_)
    big = 0.0
    for i in range(n):
        big = max(big, abs(rhs[i]))
    gmax = 0.0
    for i in range(n):
        for j in range(n):
            gmax = max(gmax, abs(G[i, j]))
    smax = 0.0
    for i in range(n):
        smax = max(smax, s[i])
    scale = big + gmax * smax
    for _ in range(steps):
        idx = np.flatnonzero(free)
        k = idx.shape[0]
        if k == 0:
            break
        g = np.empty(k)
        Gf = np.empty((k, k))
        for r in range(k):
            t = 0.0
            for j in range(n):
                t += G[idx[r], j] * a[j]
            g[r] = rhs[idx[r]] - t
            for c in range(k):
                Gf[r, c] = G[idx[r], idx[c]]
        p = np.linalg.lstsq(Gf, g, k * 2.220446049250313e-16)[0]  # numpy's rcond=None: eps * max(M, N)
        null = np.empty(k)
        largest = 0.0
        for r in range(k):
            t = 0.0
            for c in range(k):
                t += Gf[r, c] * p[c]
            null[r] = g[r] - t
            largest = max(largest, abs(null[r]))
        newton = not largest > 1e-10 * scale
        direction = p if newton else null
        limit = 1.0 if newton else np.inf
        room = np.empty(k)
        t = limit
        for r in range(k):
            i = idx[r]
            if direction[r] > 0:
                room[r] = (s[i] - a[i]) / direction[r]
            elif direction[r] < 0:
                room[r] = -a[i] / direction[r]
            else:
                room[r] = np.inf
            t = min(t, room[r])
        if not np.isfinite(t):
            break
        for r in range(k):
            i = idx[r]
            a[i] = min(max(a[i] + t * direction[r], 0.0), s[i])
        if newton and t >= 1.0:
            break
        for r in range(k):
            if room[r] <= t:
                i = idx[r]
                a[i] = s[i] if direction[r] > 0 else 0.0
                free[i] = False
    return a


def _ascend(problem: _Linear | _Kernel, tol: float, max_epochs: int, seed: int,
            alpha0: np.ndarray | None = None) -> Certificate:
    """Dual coordinate ascent in seeded random-permutation epochs, with the gap evaluated afresh
    every few epochs (each epoch at first, then ~10 % of the epochs made, at most 50) and an
    active-set polish of the free coordinates (:func:`_polish`) when the sets {alpha_i = 0},
    {0 < alpha_i < s_i}, {alpha_i = s_i} have not changed since the last evaluation, or when the
    polish costs less than the epochs since then.

    On a small sample an epoch costs less than the Python around an evaluation or a polish. ``problem.calls``
    holds the number of epochs that cost as much as the fixed cost of one evaluation and of one polish
    (:func:`_calls`; 17 and 17 for 200 rows of 5 entries, 1 and 1 from 20,000 entries): evaluations come no
    more often than every that many epochs (at most 50), and a polish of sets that are still changing waits
    as long. On samples of 200 x 5 this cut the comparators' time from 13.5 to 7.9 ms; with the evaluation and
    the polish compiled (their fixed costs from ~50 and ~250 us to ~20 us each, the Python around them included),
    the epochs stopping at a fixed point and cheaper epoch orders, from 2.8 to 0.8 ms; with the whole loop compiled
    for dense rows (:func:`_dense_ascent`, the same decisions as the loop below, which CSR rows and Gram matrices
    take), ~0.6 ms.

    Epochs stop early at a fixed point of the coordinate steps (an epoch that changes no coordinate): the
    gap is evaluated there. If the first epoch from a freshly evaluated point changes nothing, no number of
    epochs can move it, and the certificate is returned (after a polish, if one is due), whatever ``tol``.

    The polish turns the slow linear tail of coordinate ascent at small lam into a finite jump once
    the sets are identified. It is adopted only if it raises the certified dual end, so the ascent
    stays monotone; being an alpha in the box like any other, it needs no trust: the certificate is
    evaluated from it afresh.
    """
    if not tol >= 0:
        raise ParamError("tol", tol, "a number >= 0")
    if int(max_epochs) != max_epochs or max_epochs < 0:
        raise ParamError("max_epochs", max_epochs, "an integer >= 0")
    m, s = problem.m, problem.s
    rng = np.random.default_rng(seed)
    alpha = problem.start()
    if alpha0 is not None:  # a warm start: any alpha in the box is a dual point (zero rows keep their optimum)
        start = np.asarray(alpha0, dtype=np.float64).ravel()
        if start.shape != (m,) or not np.all(np.isfinite(start)):
            raise ParamError("alpha0", f"array of shape {start.shape}", f"{m} finite dual values")
        alpha = np.where(alpha == s, alpha, np.clip(start, 0.0, s))
    if isinstance(problem, _Linear) and isinstance(problem.rows, _Dense):  # the loop below, compiled
        w = np.empty(problem.rows.d)
        hi, lo, made = _dense_ascent(problem.rows.X, problem.y, problem.b, problem.b_err, s, problem.r, problem.sqn,
                                     problem.lam, problem.lm, problem.g_m, problem.g_m**2, problem.g_d, err_factor(4),
                                     err_factor(8), float(tol), int(max_epochs), problem.calls[0], problem.calls[1],
                                     problem.epoch_work(0), _POLISH_STEPS, _POLISH_MAX, alpha, rng, w)
        return Certificate(w=w, alpha=alpha.copy(), primal=hi, dual=lo, gap=max(hi - lo, 0.0), epochs=int(made))
    epochs = k = 0
    previous = tried = b""
    stationary = False  # the last epochs began at the evaluated state, and their first changed no coordinate
    while True:
        point, primal, dual, state = problem.evaluate(alpha)
        cert = _certificate(point, alpha, primal, dual, epochs)
        if cert.gap <= tol or epochs >= max_epochs:
            return cert
        sets = ((alpha > 0).astype(np.int8) + (alpha == s)).tobytes()  # 0: at 0, 1: free, 2: at s_i
        free = np.flatnonzero((alpha > 0) & (alpha < s))
        n = free.shape[0]
        stable = sets == previous and sets != tried
        cheap = k >= problem.calls[1] and _POLISH_STEPS * n**3 <= k * problem.epoch_work(n)
        if 0 < n <= _POLISH_MAX and (stable or cheap):
            tried = sets
            G, rhs = problem.reduced(alpha, free)
            candidate = alpha.copy()
            candidate[free] = _polish(G, rhs, alpha[free], s[free], _POLISH_STEPS)
            c_point, c_primal, c_dual, c_state = problem.evaluate(candidate)
            if c_dual[0] - c_dual[1] > dual[0] - dual[1]:
                alpha, state = candidate, c_state
                cert = _certificate(c_point, alpha, c_primal, c_dual, epochs)
                if cert.gap <= tol:
                    return cert
                stationary = False
        if stationary:  # a fixed point of the coordinate steps: epochs from here change nothing, ever
            return cert
        previous = sets
        k = min(max(1, epochs // 10, problem.calls[0]), 50, max_epochs - epochs)  # the next evaluation within k epochs
        made, changed = problem.run(alpha, state, rng, k)
        stationary = made == 1 and changed == 0
        epochs += made
        k = made


_POLISH_MAX = 2000  # largest free set polished (least squares on |F| x |F| matrices)
_POLISH_STEPS = 20  # active-set steps per polish
_CALL_COST = (20_000, 20_000)  # fixed costs of an evaluation and of a polish (the Python around them), in entries visited


def _calls(work: int) -> tuple[int, int]:
    """Epochs of ``work`` entries each that cost as much as the fixed cost of an evaluation and of a polish
    (``_CALL_COST``: ~20 microseconds each, an epoch visiting ~1 entry a nanosecond)."""
    return -(-_CALL_COST[0] // work), -(-_CALL_COST[1] // work)


def _certificate(w: np.ndarray, alpha: np.ndarray, primal: _Pair, dual: _Pair, epochs: int) -> Certificate:
    """Round both ends outwards by their error bounds (the doubled gamma covers these additions)."""
    hi = primal[0] + primal[1]
    lo = dual[0] - dual[1]
    return Certificate(w=w, alpha=alpha.copy(), primal=hi, dual=lo, gap=max(hi - lo, 0.0), epochs=epochs)


# --- Public API ------------------------------------------------------------------------------------


def objective(X: Any, y: np.ndarray, lam: float, w: np.ndarray, *, weights: np.ndarray | None = None,
              w_ref: np.ndarray | None = None) -> float:
    """The primal objective of docs/bounds.md sections 4 and 6.

    F(w) = lam/2 ||w - w_ref||^2 + (1/m) sum_i s_i max(0, 1 - y_i <w, x_i>)

    Parameters
    ----------
    X : (m, d) dense array or scipy.sparse matrix.
    y : labels in {-1, +1}.
    lam : regularisation lambda > 0 (the lambda/2 convention of docs/bounds.md section 0).
    w : the weight vector.
    weights : s_i > 0 (default 1); section 6 uses s_j = N / (2 N_{y_j}).
    w_ref : transfer reference w_r of section 6 (default 0).

    Returns
    -------
    fl(F(w)), summed in the fixed order of :func:`sdca` (without the outward rounding of a
    :class:`Certificate`'s ``primal``, which exceeds it by at most ~1e-12 relative).
    """
    return float(objectives(X, y, lam, [w], weights=weights, w_ref=w_ref)[0])


def objectives(X: Any, y: np.ndarray, lam: float, ws: Any, *, weights: np.ndarray | None = None,
               w_ref: np.ndarray | None = None) -> np.ndarray:
    """:func:`objective` at each of the points ``ws`` (rows), the same bits each: the problem is read once
    (its checks of X, y and the weights cost twice the evaluation of one point of a 1000 x 10 sample)."""
    rows = _rows(X)
    problem = _Linear(rows, _labels(y, rows.m), _lam(lam), _weights(weights, rows.m), _vector("w_ref", w_ref, rows.d))
    return np.array([problem.primal(_vector("w", w, rows.d))[0] for w in ws], dtype=np.float64)


def sdca(X: Any, y: np.ndarray, lam: float, *, weights: np.ndarray | None = None, w_ref: np.ndarray | None = None,
         tol: float = 1e-9, max_epochs: int = 100_000, seed: int = 0, alpha0: np.ndarray | None = None) -> Certificate:
    """Certified minimiser of :func:`objective` by exact dual coordinate ascent.

    Dual coordinate ascent with the hinge loss's closed-form coordinate step (Shalev-Shwartz & Zhang
    2013, JMLR 14, section 6.2; Hsieh et al., ICML 2008, Algorithm 1) on

        D(alpha) = (1/m) sum_i alpha_i (1 - y_i <w_ref, x_i>) - lam/2 ||v||^2,
        v = (lam m)^{-1} sum_i alpha_i y_i x_i,   alpha_i in [0, s_i],   w = w_ref + v

    (docs/bounds.md sections 4 and 6). The step maximises D exactly along coordinate i:
    alpha_i <- clip(alpha_i + lam m (1 - y_i <w, x_i>) / ||x_i||^2, 0, s_i). Coordinates are visited
    in random-permutation epochs (Fisher-Yates by ``numpy.random.default_rng(seed).random()``); v is
    maintained incrementally, and the epochs stop at a fixed point of the steps. Every few epochs (each
    epoch at first, then ~10 % of the epochs made, at most 50; on a small sample, never fewer than cost as
    much as an evaluation: see :func:`_ascend`)
    v(alpha) is recomputed from alpha in a fixed order (which also discards the drift of the
    incremental updates), and F(w) and D(alpha) are evaluated afresh. Between epochs an active-set
    polish of the free coordinates is tried (see :func:`_ascend`): at small lam it replaces the slow
    linear tail of coordinate ascent. A zero row has a constant
    loss s_i and the optimal alpha_i = s_i, which it is given at the start; it is never visited.

    Parameters
    ----------
    X : (m, d) dense array or scipy.sparse matrix (read as CSR; each step then costs O(nnz of the
        row)). Dense and sparse input give bit-identical certificates.
    y : labels in {-1, +1}.
    lam : regularisation lambda > 0.
    weights : s_i > 0, the upper ends of the dual box (default 1).
    w_ref : transfer reference w_r (default 0).
    tol : stop once the certified gap primal - dual is <= tol (absolute).
    max_epochs : at most this many epochs. If tol is not reached, the certificate reached so far is
        returned (its gap > tol); the caller decides. Nothing is raised.
    seed : seed of the permutations; the result is deterministic for a fixed seed.
    alpha0 : optional starting dual point (clipped into the box [0, s]), e.g. the ``alpha`` of a nearby
        lam: a warm start. Default: alpha = 0.

    Returns
    -------
    Certificate with ``w`` the weight vector, ``primal`` >= F(w) >= F* >= D(alpha) >= ``dual``.
    Floating point: see the module docstring; the outward rounding makes the inequalities rigorous
    for the data as given, and is ~1e-12 for the problems of docs/bounds.md.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); y = np.sign(X[:, 0] + 0.5 * rng.normal(size=200))
    >>> cert = sdca(X, y, lam=1e-2)
    >>> cert.gap <= 1e-9, cert.dual <= cert.primal, round(cert.primal, 6) == round(objective(X, y, 1e-2, cert.w), 6)
    (True, True, True)
    """
    rows = _rows(X)
    problem = _Linear(rows, _labels(y, rows.m), _lam(lam), _weights(weights, rows.m), _vector("w_ref", w_ref, rows.d))
    return _ascend(problem, tol, max_epochs, seed, alpha0)


def sdca_path(X: Any, y: np.ndarray, lams: Sequence[float], *, tol: float = 1e-9, max_epochs: int = 100_000,
              seed: int = 0) -> list[Certificate]:
    """:func:`sdca` (plain objective: s = 1, w_ref = 0) at each lam of ``lams`` in turn, each started from the
    previous certificate's dual point (``alpha0``): the same certificates as those calls, bit for bit, with the
    sample read and checked once (six calls on 200 x 5 spent a tenth of their time doing so)."""
    rows = _rows(X)
    problem = _Linear(rows, _labels(y, rows.m), _lam(lams[0]), np.ones(rows.m), np.zeros(rows.d))
    out: list[Certificate] = []
    for lam in lams:
        out.append(_ascend(problem.with_lam(_lam(lam)), tol, max_epochs, seed, out[-1].alpha if out else None))
    return out


def kernel_objective(K: np.ndarray, y: np.ndarray, lam: float, a: np.ndarray, *,
                     weights: np.ndarray | None = None) -> float:
    """The primal objective of docs/bounds.md section 5 for w = sum_i a_i y_i phi(x_i):

    F(a) = lam/2 (a y)^T K (a y) + (1/m) sum_i s_i max(0, 1 - y_i (K (a y))_i),

    with K the Gram matrix K_ij = <phi(x_i), phi(x_j)> (symmetric positive semi-definite) and
    ``weights`` s as in :func:`objective`. Returns fl(F(a)) summed in the fixed order of
    :func:`kernel_sdca`.
    """
    return float(kernel_objectives(K, y, lam, [a], weights=weights)[0])


def kernel_objectives(K: np.ndarray, y: np.ndarray, lam: float, As: Any, *,
                      weights: np.ndarray | None = None) -> np.ndarray:
    """:func:`kernel_objective` at each of the points ``As`` (rows of coefficients), the same bits each: the Gram
    is read and symmetrised once, not once a point."""
    y = _labels(y, np.size(y))
    problem = _Kernel(symmetric_gram(K, y.shape[0]), y, _lam(lam), _weights(weights, y.shape[0]))
    return np.array([problem.primal(_vector("a", a, y.shape[0]))[0] for a in As], dtype=np.float64)


def kernel_sdca(K: np.ndarray, y: np.ndarray, lam: float, *, weights: np.ndarray | None = None,
                tol: float = 1e-9, max_epochs: int = 100_000, seed: int = 0) -> Certificate:
    """Certified minimiser of :func:`kernel_objective` by exact dual coordinate ascent (docs/bounds.md
    section 5: the comparator of kernelized Pegasos, on the box [0, s] without the intercept
    constraint sum_i alpha_i y_i = 0 that ``SVC(kernel='precomputed')`` adds).

    The dual is D(alpha) = (1/m) sum_i alpha_i - (alpha y)^T K (alpha y) / (2 lam m^2), and the step
    of :func:`sdca` becomes alpha_i <- clip(alpha_i + (lam m - y_i g_i) / K_ii, 0, s_i) with
    g = K (alpha y) maintained incrementally (O(m) per changed coordinate) and recomputed afresh at
    every evaluation of the gap. The primal point is a = alpha / (lam m), i.e.
    w = v(alpha) = sum_i a_i y_i phi(x_i). Rows with K_ii = 0 (phi(x_i) = 0) get alpha_i = s_i.

    Parameters
    ----------
    K : (m, m) symmetric positive semi-definite Gram matrix (a nearly symmetric one, to 1e-12
        relative, is replaced by its symmetric part). Not checked here (a Cholesky test costs m^3/3):
        pass ``psd_gram(K).K``, certified, when K may not be; for an indefinite K, D(alpha) <= F* fails.
    y, lam, weights, tol, max_epochs, seed : as in :func:`sdca`.

    Returns
    -------
    Certificate with ``w`` the expansion coefficients a (w = sum_i a_i y_i phi(x_i)).
    """
    y = _labels(y, np.size(y))
    problem = _Kernel(symmetric_gram(K, y.shape[0]), y, _lam(lam), _weights(weights, y.shape[0]))
    return _ascend(problem, tol, max_epochs, seed)


def sdca_direction(X: Any, y: np.ndarray, lam: float, *, epochs: int, seed: int = 0,
                   alpha0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(w, alpha) after ``epochs`` epochs of the dual coordinate ascent of :func:`sdca` (plain Pegasos
    objective: s = 1, w_ref = 0), started from ``alpha0`` (default 0), without a certificate: no gap is
    evaluated, so the cost is one pass over the data per epoch plus one to form w from alpha. For callers
    that need a good direction, not a certified optimum (the comparators of docs/bounds.md section 2).
    Deterministic for a fixed seed."""
    rows = _rows(X)
    y = _labels(y, rows.m)
    lam = _lam(lam)
    m, lm = rows.m, lam * rows.m
    sqn = rows.squared_norms()
    s = np.ones(m)
    alpha = np.where(sqn == 0.0, s, 0.0)
    if alpha0 is not None:
        start = np.asarray(alpha0, dtype=np.float64).ravel()
        if start.shape != (m,) or not np.all(np.isfinite(start)):
            raise ParamError("alpha0", f"array of shape {start.shape}", f"{m} finite dual values")
        alpha = np.where(sqn == 0.0, s, np.clip(start, 0.0, s))
    Xr = X if sparse.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)
    v = np.asarray(Xr.T @ (alpha * y), dtype=np.float64).ravel() / lm
    rng = np.random.default_rng(seed)
    b = np.ones(m)
    for _ in range(int(epochs)):
        rows.epochs(y, b, s, sqn, lm, alpha, v, rng, 1)
    return v, alpha
