"""Certificates stay rigorous at the edges (docs/bounds.md sections 1, 5 and 9).

The margin certificate gamma_lo <= gamma* <= gamma_hi is checked against margins known exactly for the
float data (exact rational arithmetic, never a tolerance), at scales from subnormal to 1e300; data that
have no certificate are refused with a UserError. Kernel Pegasos' Gram matrix is used as it is only when
certified positive semi-definite, else shifted by a certified, reported amount, or refused.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.bounds import bounds_for
from pipeline.data import MarginBinary, Shells
from pipeline.data.certify import (
    TARGET_GAP,
    CertificateError,
    Stats,
    certify,
    certify_sample,
)
from pipeline.learners import KernelPegasos
from pipeline.numerics import psd_gram
from pipeline.params import ParamError, UserError
from pipeline.solvers.certified import margin_lower, margin_upper, radius
from pipeline.job.statistics import measure

# --- Exact arithmetic -------------------------------------------------------------------------------


def exact_sq_norms(X: np.ndarray) -> list[Fraction]:
    return [sum((Fraction(float(v)) ** 2 for v in row), Fraction(0)) for row in np.asarray(X)]


def exact_p_sq_norm(X: np.ndarray, y: np.ndarray, alpha: np.ndarray) -> Fraction:
    """||p||^2, p = sum_i alpha_i y_i x_i / sum_i alpha_i, in exact rational arithmetic."""
    a = [Fraction(float(v)) for v in alpha]
    total = sum(a, Fraction(0))
    comps = [sum((a[i] * int(y[i]) * Fraction(float(X[i, j])) for i in range(len(a)) if a[i]), Fraction(0))
             for j in range(X.shape[1])]
    return sum((c * c for c in comps), Fraction(0)) / (total * total)


def first_bad_pivot(K: np.ndarray) -> Fraction | None:
    """Gaussian elimination on the float matrix K taken exactly: the first pivot <= 0, or None.

    All pivots > 0 <=> K positive definite (Sylvester); a first non-positive pivot p < 0 makes a leading
    principal minor negative, so K is not even positive semi-definite.

    Pivot k depends on the leading (k+1) x (k+1) block alone, so the elimination is done on that block as it
    grows (Crout's order): row and column k are brought through steps 0..k-1 only when k is reached, each
    entry by the same exact subtractions, in the same order, as eliminating the whole matrix step by step
    gives it. A first bad pivot at k costs ~k^3/3 exact operations, not ~n^2 k."""
    A = [[Fraction(float(v)) for v in row] for row in K]
    n = len(A)
    f = [[Fraction(0)] * n for _ in range(n)]  # f[i][s]: step s's multiplier of row i (A[i][s] / A[s][s] then)
    for k in range(n):
        for i in range(k):  # column k, rows above the pivot: after steps 0..i-1, what row i keeps
            for s in range(i):
                A[i][k] -= f[i][s] * A[s][k]
        for j in range(k):  # row k, left of the pivot: after steps 0..j-1, then its multiplier for step j
            for s in range(j):
                A[k][j] -= f[k][s] * A[s][j]
            f[k][j] = A[k][j] / A[j][j]
        for s in range(k):  # the pivot, after steps 0..k-1
            A[k][k] -= f[k][s] * A[s][k]
        if A[k][k] <= 0:
            return A[k][k]
    return None


# --- Data with a margin known exactly in floating point --------------------------------------------


def pinned_sample(gamma: float, rho: float, n: int, d: int, seed: int) -> tuple[np.ndarray, ...]:
    """docs/bounds.md section 9's generator with w* = +-e_c, a signed coordinate axis, so that every step
    that matters is exact in floating point and gamma*(S) = gamma holds for the float data themselves.

    Each x_i has y_i a_i s in coordinate c (a_i >= gamma, as floats) and anything elsewhere; the pinned
    pair x(+/-) = +/-gamma s e_c + z0 differ by exactly 2 gamma s e_c. So w = s e_c attains min_i a_i =
    gamma, and for any unit w, min_i y_i w.x_i <= (w.x+ - w.x-)/2 = gamma s w_c <= gamma.
    Returns X, y, the primal witness s e_c and the dual witness (1 on the pair).
    """
    rng = np.random.default_rng(seed)
    c, s = int(rng.integers(d)), float(rng.choice([-1.0, 1.0]))
    others = [j for j in range(d) if j != c]
    k = n - 2
    y = np.where(rng.random(k) < 0.5, 1.0, -1.0)
    a = np.maximum(gamma * (rho / gamma) ** rng.random(k), gamma)
    direction = rng.standard_normal((k, d - 1))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    room = rho * np.sqrt(np.maximum(1.0 - (a / rho) ** 2, 0.0))  # no rho^2: it would overflow at 1e300
    X = np.zeros((n, d))
    X[:k, c] = y * a * s
    X[:k, others] = (room * rng.random(k) ** (1.0 / (d - 1)))[:, None] * direction
    z0 = rng.standard_normal(d - 1)
    z0 *= rho * math.sqrt(max(1.0 - (gamma / rho) ** 2, 0.0)) / np.linalg.norm(z0)
    X[k, c], X[k + 1, c] = gamma * s, -gamma * s
    X[k, others] = X[k + 1, others] = z0
    labels = np.concatenate([y, [1.0, -1.0]])
    w = np.zeros(d)
    w[c] = s
    alpha = np.zeros(n)
    alpha[k:] = 1.0
    order = rng.permutation(n)
    return X[order], labels[order], w, alpha[order]


SCALES = [2.0**-1060, 1e-300, 1e-150, 1e-5, 1.0, 3e7, 1e150, 1e300]


@pytest.mark.parametrize("rho", SCALES)
def test_certificate_brackets_the_exact_margin_at_every_scale(rho: float) -> None:
    gamma = 0.1 * rho
    X, y, w, alpha = pinned_sample(gamma, rho, n=60, d=5, seed=3)
    s = certify(X, y, w, alpha)
    assert s.gamma_lo <= gamma <= s.gamma_hi  # floats against the exact margin: no tolerance
    assert Fraction(s.R) ** 2 >= max(exact_sq_norms(X))
    if rho >= 1e-300:  # subnormal data carry only a few bits: the certificate is rigorous, not tight
        assert s.separable and s.gap <= 1e-12
        assert s.gamma_hi <= gamma * (1 + 1e-13)  # the charged rounding: a few ulps


@pytest.mark.parametrize("rho", [1e-300, 1e-150, 1.0, 1e150, 1e300])
def test_solver_certificate_brackets_the_exact_margin_at_every_scale(rho: float, tmp_path) -> None:  # noqa: ANN001
    gamma = 0.01 * rho
    X, y, _, _ = pinned_sample(gamma, rho, n=80, d=4, seed=5)
    s = certify_sample(X, y, tmp_path)
    assert s.separable and s.gamma_lo <= gamma <= s.gamma_hi and s.gap <= TARGET_GAP


def test_solvers_see_unit_scale_data_so_certificates_scale_exactly(tmp_path) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=0.05, rho=1.0, n=200, d=5, violators=0.1).generate(np.random.default_rng(2))
    base = certify_sample(ds.X, ds.y, tmp_path)
    assert base.separable  # margin violators inside the margin: still separable
    for k in (-600, -200, 300):
        s = certify_sample(np.ldexp(ds.X, k), ds.y, tmp_path)
        scaled = tuple(float(np.ldexp(v, k)) for v in (base.R, base.gamma_lo, base.gamma_hi))
        assert (s.R, s.gamma_lo, s.gamma_hi) == scaled


# --- gamma_hi is an upper bound of the exact ||p||, however much p's sum cancels ---------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 40), d=st.integers(1, 4),
       gamma_exp=st.floats(-12, 0), scale_exp=st.integers(-1070, 1000), spread=st.integers(0, 1100))
def test_gamma_hi_bounds_the_exact_norm_of_p(seed, m, d, gamma_exp, scale_exp, spread) -> None:  # noqa: ANN001
    """Terms of size ~1 summing to ~gamma (up to 1e-12): an ordinary float sum errs by ~m u relative to
    the terms, far more than gamma_hi's relative slack; alpha spans up to 2^-1100 (underflowing products)."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((m, d))
    Z -= Z.mean(axis=0)  # nearly cancelling: sum_i z_i is tiny, not zero
    Z[:, 0] += 10.0**gamma_exp
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    X = np.ldexp(y[:, None] * Z, min(scale_exp, 1020 - int(math.log2(np.abs(Z).max() + 1))))
    alpha = np.ldexp(rng.random(m) + 0.5, -rng.integers(0, spread + 1, size=m))
    alpha[rng.integers(m)] = 1.0
    hi = margin_upper(X, y, alpha)
    assert Fraction(hi) ** 2 >= exact_p_sq_norm(X, y, alpha)


def test_old_style_bound_fails_where_the_charged_one_holds() -> None:
    """The cancellation above is real: the computed ||p|| falls below the exact one, by far more than a
    relative (m + d) u, on most seeds; the charged gamma_hi never does."""
    below = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        Z = rng.standard_normal((40, 3))
        Z -= Z.mean(axis=0)
        Z[:, 0] += 1e-8
        y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
        X, alpha = y[:, None] * Z, np.ones(40)
        exact = exact_p_sq_norm(X, y, alpha)
        computed = float(np.linalg.norm(X.T @ (alpha * y)) / alpha.sum())
        below += Fraction(computed * (1 + 1e-13)) ** 2 < exact
        assert Fraction(margin_upper(X, y, alpha)) ** 2 >= exact
    assert below >= 5


def test_gamma_hi_with_empty_columns_and_underflowing_products() -> None:
    from scipy import sparse

    X = np.array([[1.0, 0.5, 0.0, 0.0], [-1.0, 2.0**-600, 0.0, 0.0], [0.75, 2.0**-500, 0.0, 0.0]])
    y = np.array([1.0, -1.0, 1.0])
    alpha = np.array([1.0, 2.0**-700, 1.0])  # alpha_2 x_22 = 2^-1300: underflows to 0
    exact = exact_p_sq_norm(X, y, alpha)
    for data in (X, sparse.csr_matrix(X)):
        assert Fraction(margin_upper(data, y, alpha)) ** 2 >= exact
    assert margin_upper(X, y, alpha) == margin_upper(sparse.csr_matrix(X), y, alpha)


# --- gamma_lo <= gamma_hi, always -------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 30), d=st.integers(1, 6),
       scale_exp=st.integers(-1060, 1000), column_spread=st.integers(0, 300), sparse_input=st.booleans())
def test_gamma_lo_never_exceeds_gamma_hi(seed, m, d, scale_exp, column_spread, sparse_input) -> None:  # noqa: ANN001
    """Any w and any alpha >= 0 give gamma_lo(w) <= gamma* <= gamma_hi(alpha): rigorous ends never cross,
    whatever the scale of the data (down to subnormal) and however unequal their columns."""
    from scipy import sparse

    rng = np.random.default_rng(seed)
    X = np.ldexp(rng.standard_normal((m, d)), rng.integers(-column_spread, 1, size=d))
    X[rng.random((m, d)) < 0.2] = 0.0
    X = np.ldexp(X, min(scale_exp, 1000 - int(np.frexp(np.abs(X).max() + 1e-300)[1])))
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    w = rng.standard_normal(d)
    alpha = rng.random(m) * (rng.random(m) < 0.7)
    alpha[rng.integers(m)] = 1.0
    X = sparse.csr_matrix(X) if sparse_input else X
    try:
        lo = margin_lower(X, y, w)
    except UserError:  # a zero sample, or entries spanning beyond float64's range: refused, not certified
        return
    hi = margin_upper(X, y, alpha)
    assert lo <= hi
    if np.any(np.asarray(X.todense() if sparse_input else X)):
        s = certify(X, y, w, alpha)  # builds a Stats: an inverted pair would raise CertificateError
        assert s.gamma_lo <= s.gamma_hi


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 60), d=st.integers(2, 6),
       gamma=st.floats(1e-4, 0.3), scale_exp=st.integers(-900, 900))
def test_solver_certificate_never_inverted(seed, n, d, gamma, scale_exp, tmp_path_factory) -> None:  # noqa: ANN001
    ds = MarginBinary(gamma=gamma, rho=1.0, n=n, d=d, violators=0.2).generate(np.random.default_rng(seed))
    s = certify_sample(np.ldexp(ds.X, scale_exp), ds.y, tmp_path_factory.mktemp("cache"))
    assert not s.gamma_lo > s.gamma_hi
    if s.separable:
        assert s.gamma_lo <= s.gamma_hi and s.gap >= 0


def test_an_inverted_certificate_is_an_error_never_a_report() -> None:
    with pytest.raises(CertificateError, match="inverted"):
        Stats(m=2, d=2, R=1.0, gamma_lo=0.2, gamma_hi=0.1, separable=True, gap=-1.0)
    Stats(m=2, d=2, R=1.0, gamma_lo=math.nan, gamma_hi=math.nan, separable=False, gap=math.nan)  # no certificate
    Stats(m=2, d=2, R=1.0, gamma_lo=0.1, gamma_hi=0.1, separable=True, gap=0.0)


# --- Data without a certificate: refused with one line ----------------------------------------------


@pytest.mark.parametrize(("X", "match"), [
    (np.zeros((3, 2)), "zero"),
    (np.array([[1.0, np.nan], [0.5, 0.5]]), "NaN or infinite"),
    (np.array([[np.inf, 0.0], [0.5, 0.5]]), "NaN or infinite"),
    (np.array([[1.5e308, 1.5e308], [1.0, 1.0]]), "overflows"),
    (np.array([[1e300, 1e-300], [1.0, 1.0]]), "exponent range"),
])
def test_data_without_a_certificate_are_refused(X: np.ndarray, match: str, tmp_path) -> None:  # noqa: ANN001
    y = np.array([1.0, -1.0, 1.0])[: X.shape[0]]
    calls = (lambda: certify(X, y, np.ones(X.shape[1]), np.ones(X.shape[0])), lambda: certify_sample(X, y, tmp_path))
    for call in calls:
        with pytest.raises(UserError, match=match) as info:
            call()
        assert "\n" not in str(info.value)


def test_radius_of_subnormal_data_is_rigorous() -> None:
    X = np.ldexp(np.eye(4), -1070)  # rho = 2^-1070, subnormal: gamma* = rho / 2 exactly
    y = np.ones(4)
    s = certify(X, y, y.copy(), np.ones(4))
    assert s.R >= 2.0**-1070 and s.gamma_lo <= 2.0**-1071 <= s.gamma_hi
    assert radius(X) == s.R


# --- Kernel Pegasos: the Gram matrix is certified, shifted, or refused -------------------------------


def rank_deficient_gram() -> tuple[np.ndarray, np.ndarray]:
    """8 points X in R^2 whose rounded Gram matrix fl(X X^T) is exactly not positive semi-definite
    (a negative pivot), and that matrix."""
    for seed in range(200):
        X = np.random.default_rng(seed).standard_normal((8, 2))
        K = KernelPegasos(lam=0.1, kernel="linear").gram(X)
        pivot = first_bad_pivot(K)
        if pivot is not None and pivot < 0:
            return X, K
    raise AssertionError("no seed gave an indefinite rounded Gram matrix")


def test_an_indefinite_rounded_gram_matrix_is_shifted_and_the_shift_reported() -> None:
    _, K = rank_deficient_gram()
    got = psd_gram(K)
    assert got.shift > 0 and got.shift <= 1e-6 * K.diagonal().max()
    assert first_bad_pivot(got.K) is None  # exactly positive definite
    off = ~np.eye(K.shape[0], dtype=bool)
    assert np.array_equal(got.K[off], K[off]) and np.all(got.K.diagonal() >= K.diagonal() + got.shift)
    assert abs(got.min_eig) < 1e-12  # eigvalsh's estimate: rounding-sized
    again = psd_gram(K)
    assert (again.shift, again.min_eig) == (got.shift, got.min_eig) and np.array_equal(again.K, got.K)


@pytest.mark.parametrize(("kernel", "degree", "coef0"),
                         [("linear", 1, 0.0), ("polynomial", 3, 0.5), ("polynomial", 2, 0.0)])
def test_gram_error_bounds_the_rounding_of_the_gram_matrix(kernel: str, degree: int, coef0: float) -> None:
    X = np.random.default_rng(1).standard_normal((6, 3)) * 3.0
    learner = KernelPegasos(lam=0.1, kernel=kernel, degree=degree, coef0=coef0)
    K, bound = learner.gram(X), learner.gram_error(X)
    Xq = [[Fraction(float(v)) for v in row] for row in X]
    c0 = Fraction(coef0)
    sq = Fraction(0)
    for i in range(6):
        for j in range(6):
            s = sum((a * b for a, b in zip(Xq[i], Xq[j])), Fraction(0))
            exact = s if kernel == "linear" else (s + c0) ** degree
            sq += (Fraction(float(K[i, j])) - exact) ** 2
    assert sq <= Fraction(bound) ** 2  # ||K - G||_2 <= ||K - G||_F <= bound
    assert 0 < bound <= 1e-12 * float(np.trace(K))


def test_the_linear_kernel_shift_is_certified_a_priori_and_tiny() -> None:
    X, K = rank_deficient_gram()
    learner = KernelPegasos(lam=0.1, kernel="linear")
    got = learner.psd_gram(X)
    assert got.shift == learner.gram_error(X) < psd_gram(K).shift
    assert first_bad_pivot(got.K) is None


def test_an_indefinite_kernel_is_refused_with_one_line() -> None:
    X = np.random.default_rng(0).standard_normal((30, 3))
    K = np.tanh(2.0 * X @ X.T + 1.0)  # the sigmoid kernel: not positive semi-definite
    assert np.linalg.eigvalsh(K)[0] < -0.1
    with pytest.raises(ParamError, match="K=") as info:
        psd_gram(K)
    assert "positive semi-definite" in str(info.value)

    class Sigmoid(KernelPegasos):
        def gram(self, X: np.ndarray) -> np.ndarray:
            return np.tanh(2.0 * X @ X.T + 1.0)

        def gram_error(self, X: np.ndarray) -> float:
            return math.inf

    ds = Shells(rho=1.0, n=30, d=3).generate(np.random.default_rng(0))
    with pytest.raises(ParamError, match="algorithm.kernel=") as info:
        Sigmoid(lam=0.1, T=50).run(ds, np.random.default_rng(0))
    assert "\n" not in str(info.value) and "positive semi-definite" in str(info.value)


class Duplicates:
    """Shells with every point repeated up to 1e-9 apart: the Gaussian Gram matrix has rounding-sized
    eigenvalues around 0 and cannot be certified as it is."""

    def __init__(self, seed: int) -> None:
        ds = Shells(rho=1.0, n=40, d=3).generate(np.random.default_rng(seed))
        jitter = 1e-9 * np.random.default_rng(seed + 1).standard_normal(ds.X.shape)
        self.X, self.y = np.vstack([ds.X, ds.X + jitter]), np.concatenate([ds.y, ds.y])
        self.stats = Stats(m=80, d=3, R=radius(self.X), gamma_lo=math.nan, gamma_hi=math.nan, separable=False,
                           gap=math.nan)
        self.name = "duplicates"
        self.kind = "binary"  # a sample declares its kind (pipeline.data.dataset.KINDS)


def test_kernel_pegasos_charges_the_shift_on_near_duplicates() -> None:
    ds = Duplicates(0)
    learner = KernelPegasos(lam=0.05, T=2000, kernel="gaussian", sigma=0.5)
    assert first_bad_pivot(learner.gram(ds.X)) is not None  # not even positive definite exactly
    out = measure(learner, ds, np.random.default_rng(1))
    shift = out.stats["gram_shift"]
    assert shift > 0 and math.isfinite(out.stats["gram_min_eig"])
    assert out.stats["R"] ** 2 >= 1.0 + shift and out.stats["R"] > 1.0  # R^2 = max K_ii includes the shift
    assert out.stats["c"] >= 4.0 * (1.0 + shift)
    assert out.stats["f_star_lo"] <= out.stats["f_star_hi"]
    stats = ds.stats.as_dict() | out.stats
    for bound in bounds_for("kernel_pegasos"):
        if bound.name == "kernel_regret":
            row = bound.evaluate(stats, out.quantities)
            assert row["holds"], row
    again = measure(learner, ds, np.random.default_rng(1))
    assert again.stats == out.stats and np.array_equal(again.trace["loss"], out.trace["loss"])


# A certified matrix is used as it is: the run equals, bit for bit, the run that uses the Gram matrix as computed
# and never certifies it (the code before the certificate). Compared in one process, not against numbers pinned on
# another processor: the last bits of a kernel's exp and of LAPACK differ between processors (AVX2 and AVX-512).
CASES = ("doctest", "shells")


def _gram_case(case: str):  # noqa: ANN202
    if case == "doctest":
        ds = MarginBinary(gamma=0.1, rho=1.0, n=200, d=5, flip=0.1).generate(np.random.default_rng(0))
        return ds, KernelPegasos(lam=0.01, T=1000, kernel="gaussian"), 1
    ds = Shells(rho=1.0, n=120, d=3).generate(np.random.default_rng(3))
    return ds, KernelPegasos(lam=0.05, T=800, kernel="gaussian", sigma=0.5), 4


@pytest.mark.parametrize("case", CASES)
def test_a_certified_gram_matrix_leaves_the_run_bit_identical(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.learners import kernel_pegasos
    from pipeline.numerics import PsdGram

    ds, learner, seed = _gram_case(case)
    out = measure(learner, ds, np.random.default_rng(seed))
    assert out.stats["gram_shift"] == 0.0 and out.stats["gram_min_eig"] > 0
    uncertified = kernel_pegasos.KernelPegasos.psd_gram
    monkeypatch.setattr(kernel_pegasos.KernelPegasos, "psd_gram",
                        lambda self, X: PsdGram(self.gram(X), 0.0, uncertified(self, X).min_eig))
    raw = measure(learner, ds, np.random.default_rng(seed))
    for key in ("regret", "suboptimality", "suboptimality_last"):
        assert float(out.quantities[key]).hex() == float(raw.quantities[key]).hex(), key
    for key in ("f_star_lo", "f_star_hi"):
        assert float(out.stats[key]).hex() == float(raw.stats[key]).hex(), key
    assert np.array_equal(out.trace["loss"], raw.trace["loss"]) and np.array_equal(out.trace["active"], raw.trace["active"])
    assert out.stats["R"] == 1.0
