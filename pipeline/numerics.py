"""Floating-point helpers of every rigorous computation (certificates, bounds, solvers, the kernel Gram matrix).

Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5: a dot product of length n
computed in float64 has |fl(a.b) - a.b| <= gamma_n |a|.|b| with gamma_n = n u / (1 - n u) (here
:func:`err_factor`, named so that it does not collide with the margin gamma of the bounds). That model
ignores underflow: a product or quotient that underflows errs by up to ETA / 2 in absolute terms
(Higham section 2.1; sums and differences are exact there), which rigorous bounds add explicitly.
Scalar steps are rounded outwards with :func:`round_up` and :func:`round_down`: round-to-nearest followed
by one step to the next float bounds the exact result on that side, in the normal and subnormal ranges
alike. :func:`two_product` splits a product exactly (for the exact sums of :mod:`pipeline.solvers.certified`).

The one certified routine a learner needs in order to run, :func:`psd_gram` (kernel Pegasos and its
comparator must share the certified, possibly shifted, Gram matrix), lives here too, below the
learners: learners never import the solvers (:mod:`pipeline.solvers`).

The compiled kernels' error-free transformations (:func:`pipeline._jit.two_sum`,
:func:`pipeline._jit.two_product`, for Dot2 in :mod:`pipeline.solvers.dual`) and fixed-order dot products
live in :mod:`pipeline._jit`, inlined into the kernels: they are compiled code whose operation order is part
of the results' bits; :func:`two_product` here is the same TwoProduct on numpy arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from pipeline._jit import dot_row, kernel
from pipeline.params import ParamError

UNIT_ROUNDOFF = 2.0**-53  # u, the unit roundoff of float64
ETA = 2.0**-1074  # smallest positive (subnormal) float64: twice the largest error of an underflowing product
TINY = 2.0**-1022  # smallest normal float64: below it, results lose relative accuracy
EXACT_PRODUCT = 2.0**-968  # above this, TwoProduct's error term is exact (no underflow in its pieces)


def err_factor(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u), doubled to cover the evaluation of the error term itself.

    >>> err_factor(1) == 2.0 * 2.0**-53 / (1.0 - 2.0**-53)
    True
    """
    return 2.0 * n * UNIT_ROUNDOFF / (1.0 - n * UNIT_ROUNDOFF)


def positive(name: str, v: object) -> float:
    """``v`` as a finite float > 0, or ``ValueError`` naming ``name`` (an analysis tool's argument: the
    worst-case and performance-estimation solvers; a config's parameters are checked by ``pipeline.params``)."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name}: a finite number > 0, got {v!r}") from None
    if not (math.isfinite(f) and f > 0):
        raise ValueError(f"{name}: a finite number > 0, got {v!r}")
    return f


@overload
def round_up(x: float) -> float: ...
@overload
def round_up(x: np.ndarray) -> np.ndarray: ...
def round_up(x: float | np.ndarray) -> float | np.ndarray:
    """The next float above ``x``: >= the exact value of a result that was rounded to nearest into ``x``."""
    out = np.nextafter(x, np.inf)
    return float(out) if np.ndim(out) == 0 else out


@overload
def round_down(x: float) -> float: ...
@overload
def round_down(x: np.ndarray) -> np.ndarray: ...
def round_down(x: float | np.ndarray) -> float | np.ndarray:
    """The next float below ``x``: <= the exact value of a result that was rounded to nearest into ``x``."""
    out = np.nextafter(x, -np.inf)
    return float(out) if np.ndim(out) == 0 else out


@overload
def round_up_or_zero(x: float) -> float: ...
@overload
def round_up_or_zero(x: np.ndarray) -> np.ndarray: ...
def round_up_or_zero(x: float | np.ndarray) -> float | np.ndarray:
    """:func:`round_up`, except that an exact zero stays zero (for results of exact sums, exact at zero)."""
    out = np.where(np.asarray(x) == 0.0, 0.0, np.nextafter(x, np.inf))
    return float(out) if np.ndim(out) == 0 else out


def mean_upper(hi: np.ndarray) -> float:
    """Upper bound of the mean of non-negative quantities bounded by ``hi`` (0 if all are 0): ``math.fsum``
    is correctly rounded, the division adds one rounding, and 4 u covers both."""
    return math.fsum(hi) / hi.shape[0] * (1.0 + 4.0 * UNIT_ROUNDOFF)


def frobenius_upper(M: np.ndarray) -> float:
    """Upper bound of ||M||_F: the sum of squares within gamma_(n+2) (Higham eq. 3.5), then the square root
    and the product rounded upwards by 4 u."""
    return math.sqrt(float(np.sum(M * M)) * (1.0 + err_factor(M.size + 2))) * (1.0 + 4.0 * UNIT_ROUNDOFF)


@kernel
def margins_kernel(X, y, w):  # noqa: ANN001, ANN201
    """y_i w.x_i for every row, summed in the fixed order of :func:`pipeline._jit.dot_row` (bit-identical
    run to run): what Pegasos' reference margins, its adapters' scores and the statistics' comparator
    losses all compute, written once below them."""
    m = X.shape[0]
    out = np.empty(m)
    for i in range(m):
        out[i] = y[i] * dot_row(w, X, i)
    return out


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a * b = p + e exactly (Dekker's TwoProduct, no FMA needed: Ogita, Rump & Oishi, "Accurate sum and
    dot product", SIAM J. Sci. Comput. 26(6), 2005, Alg. 2.5), for |a|, |b| < 2^995 and |p| >= 2^-968.

    >>> p, e = two_product(np.array([1.0 + 2.0**-30]), np.array([1.0 + 2.0**-30]))
    >>> float(e[0]) == 2.0**-60
    True
    """
    p = a * b
    t = 134217729.0 * a  # 2^27 + 1: splits a into two halves of 26 bits
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


def symmetric_gram(K: Any, m: int) -> np.ndarray:
    """K as a C-ordered float64 (m, m) matrix; a nearly symmetric K is replaced by its symmetric
    part (K + K^T)/2, which has the same quadratic form and is exactly symmetric in floating point."""
    K = np.ascontiguousarray(K, dtype=np.float64)
    if K.shape != (m, m) or not np.all(np.isfinite(K)):
        raise ParamError("K", f"array of shape {K.shape}", f"a finite ({m}, {m}) Gram matrix (m = len(y))")
    if not np.array_equal(K, K.T):
        scale = float(np.abs(K).max())
        if float(np.abs(K - K.T).max()) > 1e-12 * scale:
            raise ParamError("K", "asymmetric", "a symmetric positive semi-definite Gram matrix")
        K = np.ascontiguousarray((K + K.T) / 2.0)
    if np.any(np.diag(K) < 0):
        raise ParamError("K", "negative diagonal", "a symmetric positive semi-definite Gram matrix")
    return K


# --- Positive semi-definite Gram matrices: certified, or shifted until certified ----------------------

EIG_MAX = 4000  # eigvalsh (O(m^3), ~5 s single-threaded at m = 4000) only up to this m; beyond, the Cholesky test alone


@dataclass(frozen=True)
class PsdGram:
    """A Gram matrix certified positive semi-definite (:func:`psd_gram`).

    Attributes
    ----------
    K : the matrix to use: the input when it is certified as it is, else the input with ``shift``
        added to its diagonal (each diagonal entry rounded upwards, so K >= input + shift I exactly).
    shift : the diagonal shift, 0.0 when the input itself is certified. The shifted matrix is the Gram
        matrix of the features (phi(x_i), sqrt(shift) e_i): every ||phi(x_i)||^2 = K_ii grows by it,
        which the bounds must charge (R^2 = max_i K_ii, docs/bounds.md section 5).
    min_eig : smallest eigenvalue of the input by ``numpy.linalg.eigvalsh`` (an estimate, reported
        for information; NaN when m > ``EIG_MAX``).
    """

    K: np.ndarray
    shift: float
    min_eig: float


def single_thread() -> Any:
    """BLAS on one thread: LAPACK's results then do not depend on the thread count (bit-identical runs)."""
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


_JOBS_BLAS: list[Any] = []  # the limit set for the jobs of this process, kept for its life


def jobs_on_one_blas_thread() -> None:
    """BLAS on one thread for the rest of this process, from its first job on (:mod:`pipeline.job.run` calls
    this before a job's data and its run), whatever the environment asks (``OPENBLAS_NUM_THREADS`` and the like).

    Bits: OpenBLAS's results can depend on its thread count. Measured on an AMD EPYC: the synthetic
    margin data at d = 50 (a QR of a 50 x 50 Gaussian and a product with it) differed in their last bits
    between one thread and two, so a sweep on the basic launcher (BLAS on every core) and the same sweep on
    forked or joblib workers (one thread each) computed on different data. On one thread always, a job's results
    are the same on every launcher and any number of workers.

    Time: a job's matrices are small (a Gram block of 1000 x 512, a solve of a few hundred); OpenBLAS's
    thread per core mostly waits for them, spinning on a core another process or worker needs (a packed
    Pegasos seed: 7.6 ms on one thread against 35 ms on two, with another process busy on the second core;
    docs/performance.md). A sweep's parallelism is its workers (``hydra/launcher=fork``)."""
    if _JOBS_BLAS:
        return
    import scipy.linalg  # noqa: F401 - its own OpenBLAS, loaded now: a library loaded after the limit is not limited

    _JOBS_BLAS.append(single_thread())


def certified_psd(K: np.ndarray) -> bool:
    """True only if K is positive semi-definite, proven by a floating-point Cholesky factorisation.

    If Cholesky runs to completion on a symmetric float matrix A, its computed factor has
    R^T R = A + dA with |dA| <= gamma_(m+1) |R^T| |R| (Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2nd ed., Thm 10.3, for any order of the inner products, so also LAPACK's blocked
    dpotrf), hence ||dA||_2 <= gamma_(m+1) sum_i ||r_i||^2 <= gamma_(m+1) / (1 - gamma_(m+1)) tr(A) and
    lambda_min(A) >= -that; products that underflow add at most 4 m (2 (m + 1) + max_i A_ii) ETA
    (Rump, "Verification of positive definiteness", BIT 46, 2006). The test factors A = K - t I with
    t >= both (diagonal rounded downwards), so success gives lambda_min(K) >= t - ||dA||_2 >= 0.
    """
    diag = np.diag(K)
    m = K.shape[0]
    if not np.all(diag >= 0.0):
        return False
    trace = round_up(math.fsum(diag))  # >= tr(K) >= tr(A)
    t = round_up(round_up(err_factor(m + 1) * trace) + round_up(4.0 * m * (2.0 * (m + 1) + float(diag.max())) * ETA))
    A = K.copy()
    A[np.diag_indices(m)] = round_down(diag - t)
    with single_thread():
        try:
            np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            return False
    return True


def psd_gram(K: np.ndarray, *, error: float = math.inf, max_shift: float = 1e-6) -> PsdGram:
    """K certified positive semi-definite, or K + shift I with the least shift certified to make it so.

    The duality certificate of :func:`pipeline.solvers.dual.kernel_sdca` and the feature-space bounds of
    kernel Pegasos hold only for a positive semi-definite K. A Gram matrix computed in floating point need
    not be one: a rank-deficient kernel (linear or polynomial on more points than features) or a smooth kernel on
    near-duplicate points has eigenvalues ~ +-m u ||K|| around 0 that rounding puts on either side.
    K is used as it is if :func:`certified_psd` (one Cholesky factorisation, m^3/3 flops) proves it
    positive semi-definite. Otherwise the shift is the least of

    - ``error``, an a-priori bound of ||K - G||_2 for some positive semi-definite G (the exact Gram
      matrix of which K is the rounded value): K + error I >= G >= 0, no factorisation needed;
    - 4^j c (j = 1, 2, ...) with K + 4^j c I certified by :func:`certified_psd`, c = gamma_(m+1) tr(K)
      being the test's own rounding allowance (so j = 1 passes when K's negative eigenvalues are
      rounding-sized),

    up to ``max_shift`` max_i K_ii: a larger one means an indefinite K, not rounding, and is refused
    with a :class:`ParamError` naming ``K``. Deterministic: LAPACK runs on one BLAS thread.

    Parameters
    ----------
    K : (m, m) symmetric Gram matrix (as accepted by :func:`pipeline.solvers.dual.kernel_sdca`).
    error : bound of ||K - G||_2 as above (default: none known).
    max_shift : largest shift accepted, relative to max_i K_ii.

    Returns
    -------
    PsdGram with the matrix to use, the shift (0.0 when K itself is certified) and eigvalsh's estimate
    of K's smallest eigenvalue.

    Examples
    --------
    >>> X = np.random.default_rng(0).standard_normal((50, 3))
    >>> psd_gram(X @ X.T).shift > 0  # rank 3: rounding leaves eigenvalues on both sides of 0
    True
    >>> psd_gram(X @ X.T + np.eye(50)).shift
    0.0
    """
    if not error >= 0:
        raise ParamError("error", error, "a number >= 0 (a bound of ||K - G||_2), or inf when none is known")
    K = symmetric_gram(K, np.shape(K)[0])
    m = K.shape[0]
    if m <= EIG_MAX:
        with single_thread():
            min_eig = float(np.linalg.eigvalsh(K)[0]) if m else math.inf
    else:
        min_eig = math.nan
    if not np.any(K) or certified_psd(K):  # a zero matrix is the Gram matrix of zero features
        return PsdGram(K=K, shift=0.0, min_eig=min_eig)
    diag = np.diag(K)
    limit = max_shift * float(diag.max())
    shift = 4.0 * err_factor(m + 1) * math.fsum(diag)
    while shift < error and shift <= limit:
        shifted = K.copy()
        shifted[np.diag_indices(m)] = round_up(diag + shift)  # K_ii + shift or above: K + shift I plus a diagonal >= 0
        if certified_psd(shifted):
            return PsdGram(K=shifted, shift=shift, min_eig=min_eig)
        shift *= 4.0
    if error <= limit:
        shifted = K.copy()
        if error > 0:  # error = 0: K is G itself
            shifted[np.diag_indices(m)] = round_up(diag + error)
        return PsdGram(K=shifted, shift=float(error), min_eig=min_eig)
    raise ParamError("K", f"indefinite (smallest eigenvalue {min_eig:.3g}, max K_ii {float(diag.max()):.3g})",
                     f"a positive semi-definite Gram matrix: no diagonal shift up to {max_shift:g} max K_ii "
                     "(rounding-sized) makes it one")
