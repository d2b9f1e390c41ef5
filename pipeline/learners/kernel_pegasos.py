"""Kernelized Pegasos ([S4] Algorithm 2; P11 section 4 and Fig. 3), with linear, polynomial and Gaussian
kernels. docs/bounds.md section 5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pipeline._jit import kernel
from pipeline.data.dataset import Sample, Source
from pipeline.numerics import ETA, err_factor, psd_gram, round_up
from pipeline.contract import KernelSvmRun
from pipeline.learners.base import Learner, Outcome, log_grid
from pipeline.learners.pegasos import RESTART, SNAPSHOTS, index_stream
from pipeline.params import (BATCH, DELTA, LAM, PROJECTION, SCALE_WORDS, STATE_LIMIT, T_STEPS, Param, ParamError,
                             in_scale, one_of)

if TYPE_CHECKING:
    from pipeline.numerics import PsdGram

KERNELS = {
    "linear": "K(x, x') = x.x'",
    "polynomial": "K(x, x') = (x.x' + coef0)^degree",
    "gaussian": "K(x, x') = exp(-||x - x'||^2 / (2 sigma^2))",
}
MAX_GRAM = 8_000  # m at most this: the Gram matrix is held in memory (8e3^2 doubles = 512 MB)


@kernel
def gram_kernel(X: np.ndarray, kind: int, degree: int, coef0: float, sigma: float) -> np.ndarray:
    """The Gram matrix K_ij = K(x_i, x_j) for kind 0 (linear), 1 (polynomial), 2 (Gaussian); sums in a
    fixed order, so it is bit-identical run to run (no BLAS)."""
    m, d = X.shape
    K = np.empty((m, m))
    for i in range(m):
        for j in range(i + 1):
            if kind == 2:
                s = 0.0
                for c in range(d):
                    diff = X[i, c] - X[j, c]
                    s += diff * diff
                v = math.exp(-s / (2.0 * sigma * sigma))
            else:
                s = 0.0
                for c in range(d):
                    s += X[i, c] * X[j, c]
                v = s
                if kind == 1:  # the power as repeated products: the same bits compiled or not
                    v = 1.0
                    for _ in range(degree):
                        v *= s + coef0
            K[i, j] = v
            K[j, i] = v
    return K


@kernel
def kernel_pegasos_kernel(K: np.ndarray, y: np.ndarray, idx: np.ndarray, lam: float, radius: float, t0: int, grid: np.ndarray,
                          state: np.ndarray, beta: np.ndarray, g: np.ndarray, z: np.ndarray, loss: np.ndarray,
                          active: np.ndarray, avg: np.ndarray) -> int:
    """Steps t0+1 .. t0+len(idx) of [S4] Algorithm 2 with mini-batches of k (add 1/k per active index), and
    when ``radius`` > 0 the projection onto the ball ||w|| <= radius after each step (P11 Fig. 1-2).

    w_t = h_t sum_i beta_i y_i phi(x_i), so y_j w_t.phi(x_j) = y_j h_t g_j with g = K (beta * y) kept up
    to date (O(m) per active index); at t = 1, w_1 = 0 (h = 0) and the test is true. Without projection
    h_t = 1/(lam (t-1)) and each active index adds 1/k to beta (Algorithm 2 exactly). With projection the
    scale is a state: w_(t+1) = (1 - 1/t) w_t + (lam t k)^-1 sum_(A+) y_j phi_j gives h_(t+1) = h_t (1 - 1/t)
    (1/lam after t = 1) and the increment c = 1/(lam t k h_(t+1)); then ||w_(t+1)||^2 = h^2 ||sum beta y phi||^2
    above radius^2 multiplies h by radius / ||w_(t+1)||. Once h lam t falls below 2^-8 q (q: its value
    at the last restart, 1 at the start) the scale moves into beta, g and the average's z (h <- 1), as
    pegasos_kernel does in the linear case, so that beta and ||sum beta y phi||^2 do not overflow.
    ``state`` = [||sum beta_i y_i phi_i||^2, H_t = sum_(s<=t) h_s, h_(t+1), q]; sum_(s<=t) w_s =
    sum_i (H_t beta_i - z_i) y_i phi_i, so the average's coefficients need no O(m) step. At the steps in
    ``grid`` the average's coefficients (H_t beta - z)/t go to ``avg``.
    """
    T, k = idx.shape
    m = K.shape[0]
    nb, H, a, q = state[0], state[1], state[2], state[3]
    project = radius > 0.0
    flags = np.zeros(k, dtype=np.bool_)
    gp = 0
    while gp < grid.shape[0] and grid[gp] <= t0:
        gp += 1
    for r in range(T):
        t = t0 + r + 1
        if project:
            h = 0.0 if t == 1 else a
        else:
            h = 0.0 if t == 1 else 1.0 / (lam * (t - 1))
        hinge = 0.0
        n_active = 0
        for b in range(k):
            j = idx[r, b]
            margin = y[j] * g[j] * h
            flags[b] = margin < 1.0
            if flags[b]:
                hinge += 1.0 - margin
                n_active += 1
        loss[r] = 0.5 * lam * h * h * nb + hinge / k
        active[r] = n_active
        H += h
        if gp < grid.shape[0] and grid[gp] == t:
            for i in range(m):
                avg[gp, i] = (H * beta[i] - z[i]) / t
            gp += 1
        c = 1.0 / k
        if project:
            a = 1.0 / lam if t == 1 else h * (1.0 - 1.0 / t)
            c = 1.0 / (lam * t * k * a)
        for b in range(k):  # the test above used w_t for the whole batch; now add c per active index
            j = idx[r, b]
            if flags[b]:
                nb += 2.0 * c * y[j] * g[j] + c * c * K[j, j]
                beta[j] += c
                z[j] += H * c
                cy = c * y[j]  # (c y_j) K_ji: the same product as before, hoisted out of the O(m) loop
                for i in range(m):
                    g[i] += cy * K[j, i]
        if project:
            norm2 = a * a * nb
            if norm2 > radius * radius:
                a *= radius / math.sqrt(norm2)
                if a * lam * t < RESTART * q:
                    for i in range(m):
                        z[i] -= H * beta[i]
                        beta[i] *= a
                        g[i] *= a
                    nb *= a * a
                    H = 0.0
                    a = 1.0
                    q = lam * t
    state[0], state[1], state[2], state[3] = nb, H, a, q
    return 0


@dataclass
class KernelPegasosSteps:
    """What a block of T steps of :class:`KernelPegasosCore` records: per step f_t(w_t) (``loss``) and |A+|
    (``active``); at the snapshot steps of the grid the average's coefficients (``avg``, one row per grid entry;
    rows of grid steps outside the block are left as they were)."""

    loss: np.ndarray
    active: np.ndarray
    avg: np.ndarray

    @classmethod
    def empty(cls, T: int, snapshots: int, m: int) -> KernelPegasosSteps:
        """Fresh (uninitialised) arrays for T steps and ``snapshots`` grid entries over m training points."""
        return cls(np.empty(T), np.empty(T, dtype=np.int32), np.empty((snapshots, m)))


@dataclass
class KernelPegasosCore:
    """Kernel Pegasos' training state, and the one way to advance it (docs/bounds.md section 5): what
    :meth:`KernelPegasos.run` and the benchmark run.

    ``scalars`` = [||sum beta y phi||^2, H_t, the scale h, the restart mark q], the coefficients ``beta``,
    g = K (beta y) and the average's ``z`` of :func:`kernel_pegasos_kernel`, after ``t`` steps, for ``lam``
    and the projection's ``radius`` (0: none). :meth:`advance` continues exactly: advancing over idx[:n] and
    then idx[n:] gives the bits of one advance over idx (tests/test_kernel_pegasos.py).
    """

    lam: float
    radius: float
    beta: np.ndarray
    g: np.ndarray
    z: np.ndarray
    scalars: np.ndarray
    t: int = 0

    @classmethod
    def start(cls, m: int, lam: float, radius: float = 0.0) -> KernelPegasosCore:
        """w_1 = 0 over m training points (h = 0, q = 1: the kernel's starting state)."""
        return cls(float(lam), float(radius), np.zeros(m), np.zeros(m), np.zeros(m), np.array([0.0, 0.0, 0.0, 1.0]))

    @property
    def alpha(self) -> np.ndarray:
        """The coefficients of w_(t+1) = sum_i alpha_i y_i phi(x_i): h beta with projection, else beta / (lam t)."""
        return self.scalars[2] * self.beta if self.radius > 0.0 else self.beta / (self.lam * self.t)

    def advance(self, K: np.ndarray, y: np.ndarray, idx: np.ndarray, grid: np.ndarray,
                out: KernelPegasosSteps | None = None) -> KernelPegasosSteps:
        """Steps t+1 .. t+T over the (T, k) batches ``idx`` with the Gram matrix K and labels y (float64),
        the average's coefficients at the steps of ``grid`` (ascending) into ``out`` (fresh arrays by default)."""
        T = idx.shape[0]
        if out is None:
            out = KernelPegasosSteps.empty(T, grid.shape[0], K.shape[0])
        kernel_pegasos_kernel(K=K, y=y, idx=idx, lam=self.lam, radius=self.radius, t0=self.t, grid=grid,
                              state=self.scalars, beta=self.beta, g=self.g, z=self.z, loss=out.loss, active=out.active,
                              avg=out.avg)
        self.t += T
        return out


class KernelPegasos(Learner):
    """Kernelized Pegasos ([S4] Algorithm 2): beta = 0; at step t draw j; if
    y_j (lam (t-1))^-1 sum_i beta_i y_i K(x_i, x_j) < 1 then beta_j += 1. Output alpha = beta / (lam T) and
    predict sign(sum_i alpha_i y_i K(x_i, x)).

    This is linear Pegasos without projection in the feature space, exactly: w_t =
    (lam (t-1))^-1 sum_i beta_i y_i phi(x_i) (docs/bounds.md section 5), so the bounds of section 4 hold with
    R^2 = max_i K(x_i, x_i) and c = 4 R^2 (c = (sqrt(lam) + R)^2 with ``projection``). P11 Fig. 3 tests with
    1/(lam t) instead, a slightly different
    algorithm; this is [S4]'s. The comparator is kernel SDCA on the box [0, 1] (no intercept).

    A feature space exists only if the Gram matrix is positive semi-definite, and in floating point a
    rank-deficient one (linear or polynomial kernel on more points than features; a Gaussian kernel on
    near-duplicate points) has rounding-sized eigenvalues on both sides of 0. So the matrix is first
    certified (:func:`pipeline.numerics.psd_gram`, a Cholesky test): if that fails, learner and comparator
    both run on K + shift I, the least certified rounding-sized shift (for the linear and polynomial
    kernels the a-priori bound of the Gram matrix's own rounding, :meth:`gram_error`, ~1e-13 max K_ii),
    and R^2 includes it (the features (phi(x_i), sqrt(shift) e_i)). The statistics ``gram_shift`` (0.0: K used as it is) and
    ``gram_min_eig`` (eigvalsh's estimate of K's smallest eigenvalue) record it; a kernel whose
    Gram matrix is indefinite beyond rounding is refused.

    Parameters
    ----------
    lam : regularisation lambda > 0.
    T : steps.
    batch : indices per step (each active one adds 1/batch).
    sampling : "iid", "perm" or "inorder".
    projection : project w onto the ball of radius 1/sqrt(lam) after each step (P11 Fig. 1; the ball holds
        the optimum by strong duality, docs/bounds.md section 5); then c = (sqrt(lam) + R)^2. The norm is
        ||w||^2 = (beta y)^T K (beta y) times the scale, kept up to date with g = K (beta y).
    kernel : "linear", "polynomial" or "gaussian".
    degree, coef0 : of the polynomial kernel.
    sigma : bandwidth of the Gaussian kernel.
    delta : confidence of the high-probability bound.

    Examples
    --------
    >>> from pipeline.data import MarginBinary
    >>> ds = MarginBinary(gamma=0.1, rho=1.0, n=200, d=5, flip=0.1).generate(np.random.default_rng(0))
    >>> out = KernelPegasos(lam=0.01, T=1000, kernel="gaussian").run(ds, np.random.default_rng(1))
    >>> int(out.trace["active"].sum())
    508
    """

    name = "kernel_pegasos"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    lam: float
    T: int
    batch: int
    sampling: str
    projection: bool
    kernel: str
    degree: int
    coef0: float
    sigma: float
    delta: float
    params = (
        LAM,
        T_STEPS,
        BATCH,
        Param("sampling", str, one_of("iid", "perm", "inorder"), default="iid"),
        PROJECTION,
        Param("kernel", str, lambda v: v in KERNELS, f"one of {', '.join(KERNELS)}", default="gaussian"),
        Param("degree", int, lambda v: 1 <= v <= 10, "an integer in 1..10", default=2),
        Param("coef0", float, lambda v: v >= 0, "a number >= 0", default=1.0),
        Param("sigma", float, in_scale, f"{SCALE_WORDS[:-1]}; the Gaussian kernel's bandwidth)", default=1.0),
        DELTA,
    )

    def check_with(self, dataset: Source) -> None:
        n = getattr(dataset, "n", None)
        if isinstance(n, int) and self.batch > n:
            raise ParamError("batch", self.batch, f"at most the sample size n = {n}")
        if isinstance(n, int) and n > MAX_GRAM:
            raise ParamError("n", n, f"at most {MAX_GRAM} for algorithm=kernel_pegasos (the Gram matrix is held in memory)")
        rho = getattr(dataset, "rho", None)
        if isinstance(rho, (int, float)):  # generated data: R <= rho (1 + rounding), known before they exist
            self.check_scale(float(rho) * (1.0 + 1e-12))
        from pipeline.learners.base import planned_shape

        self.check_memory(*planned_shape(dataset))

    def check_memory(self, n: int | None, d: int | None) -> None:
        """Refuse T, batch or n whose arrays exceed the available memory: the Gram matrix and its certified
        (shifted, factorised) copies (4 n x n), the snapshots of the dual weights, the index stream and the
        per-step arrays, the dense sample."""
        from pipeline.params import check_sizes

        T, k = int(self.T), int(self.batch)
        gram = 8.0 * 4 * n * n + 8.0 * SNAPSHOTS * n + 8.0 * 2 * n * (d or 0) if n is not None else 0.0
        check_sizes({"T": (self.T, T * (24.0 * k + 64.0)), "batch": (self.batch, 0.0), "n": (n, gram)},
                    "lower T, batch or n (the Gram matrix is n x n)", "the run")

    def check_scale(self, R: float) -> None:
        """Refuse a Gram matrix or a state beyond float64: the polynomial kernel's (R^2 + coef0)^degree must
        stay below 2^500 (its key named), and lam >= T (R_K + 1)^2 / 2^500 with R_K the feature-space radius."""
        if self.kernel == "polynomial":
            base = R * R + float(self.coef0)
            if not math.log2(max(base, 1.0)) * int(self.degree) <= math.log2(STATE_LIMIT):
                key = "algorithm.coef0" if float(self.coef0) >= R * R else "algorithm.degree"
                value = self.coef0 if key == "algorithm.coef0" else self.degree
                raise ParamError(key, value, f"such that (R^2 + coef0)^degree <= 2^500 (R = {R:.3g}, coef0 = {self.coef0}, "
                                 f"degree = {self.degree}): larger Gram entries overflow float64")
        RK = self.radius(R)
        need = int(self.T) * (RK + 1.0) * (RK + 1.0) / STATE_LIMIT
        if not self.lam >= need:
            raise ParamError("lam", self.lam, f"a number >= T (R + 1)^2 / 2^500 = {need:.3g} (T = {self.T}, feature-space "
                             f"R = {RK:.3g}): below it the margins T R^2 / lam overflow float64")

    def check_data(self, dataset: Sample) -> None:
        m = dataset.y.shape[0]
        self.check_scale(float(dataset.stats.R))
        self.check_memory(m, int(dataset.X.shape[1]))
        if hasattr(dataset.X, "toarray") and m * dataset.X.shape[1] > 50_000_000:
            raise ParamError("dataset", dataset.name, "dense enough to hold (m x d at most 5e7) for algorithm=kernel_pegasos")
        if self.batch > m:
            raise ParamError("algorithm.batch", self.batch, f"at most the sample size m = {m}")
        if m > MAX_GRAM:
            raise ParamError("dataset", dataset.name, f"at most {MAX_GRAM} examples for algorithm=kernel_pegasos (m = {m})")

    def gram(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        return gram_kernel(X, list(KERNELS).index(self.kernel), int(self.degree), float(self.coef0), float(self.sigma))

    def psd_gram(self, X: np.ndarray) -> PsdGram:
        """The Gram matrix certified positive semi-definite, or shifted by a rounding-sized multiple of
        the identity until certified (:func:`pipeline.numerics.psd_gram`); an indefinite one is refused
        with a :class:`pipeline.params.ParamError` naming ``algorithm.kernel``."""
        try:
            return psd_gram(self.gram(X), error=self.gram_error(X))
        except ParamError as e:  # the Gram matrix is refused: name the parameter the user chose
            raise ParamError("algorithm.kernel", self.kernel, "a kernel whose Gram matrix on the sample is finite, "
                             f"symmetric and positive semi-definite (this one's: {e.value}); "
                             f"use one of {', '.join(KERNELS)}") from None

    def gram_error(self, X: np.ndarray) -> float:
        """A bound of ||K - G||_2, K = :meth:`gram`, G the exact (positive semi-definite) Gram matrix of
        the float rows of X: :func:`pipeline.numerics.psd_gram` then certifies K + bound I without factorising.

        Linear and polynomial kernels: each entry is a dot product s raised to a power, so
        |K_ij - G_ij| <= gamma_(p(d+2)) A_ij with A_ij = (|x_i|.|x_j| + coef0)^p (Higham eq. 3.5 through the
        p products; p = 1, coef0 = 0 for the linear kernel), plus p (d + 1) (1 + max_i A_ii^(1/p))^(p-1)
        ETA / 2 per entry for products that underflow (charged 4 times over). A is itself a polynomial
        kernel matrix with non-negative entries, so ||A||_2 <= tr(A), and ||.||_2 <= m max_ij |.| for the
        rest. Gaussian kernel: inf (its exp rounds as libm does; the Cholesky test certifies it).
        """
        if self.kernel == "gaussian":
            return math.inf
        X = np.ascontiguousarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        m, d = X.shape
        p, c0 = (1, 0.0) if self.kernel == "linear" else (int(self.degree), float(self.coef0))
        sq = np.einsum("ij,ij->i", X, X)
        q = round_up(round_up(sq * (1.0 + err_factor(d))) + c0)  # >= ||x_i||^2 + coef0 = A_ii^(1/p)
        with np.errstate(over="ignore"):  # an infinite bound only leaves the certificate to the Cholesky test
            trace = round_up(math.fsum(round_up(q**p * (1.0 + err_factor(p + 1)))))  # >= tr(A), pow's rounding included
            spread = round_up(round_up(np.float64(1.0 + q.max(initial=0.0)) ** (p - 1)) * (1.0 + err_factor(p + 1)))
            underflow = round_up(2.0 * m * p * (d + 1) * spread * ETA)
            return float(round_up(round_up(err_factor(p * (d + 2)) * trace) + underflow))

    def radius(self, R: float) -> float:
        """A rigorous upper bound of sqrt(max_i K(x_i, x_i)) from the data's certified radius R."""
        if self.kernel == "linear":
            return R
        if self.kernel == "polynomial":
            return math.sqrt((R * R + self.coef0) ** self.degree) * (1.0 + 4.0 * (self.degree + 2) * 2.0**-53)
        return 1.0

    def run(self, dataset: Sample, rng: np.random.Generator) -> Outcome:
        """The run on the certified Gram matrix, and what it did: the per-step losses, the index stream,
        the average's coefficients at the snapshot steps, the objective (:class:`~pipeline.contract.KernelSvmRun`: K, y, lam) and
        R^2 = max_i K_ii of the matrix used. The certified optimum and c come from :mod:`pipeline.job.statistics`."""
        y = np.ascontiguousarray(dataset.y, dtype=np.float64)
        m = y.shape[0]
        lam, T, k = float(self.lam), int(self.T), int(self.batch)
        psd = self.psd_gram(dataset.X)
        K = psd.K  # learner, comparator and R all see this matrix: the Gram matrix, shifted if it had to be
        idx = index_stream(self.sampling, y, T, k, rng)
        grid = log_grid(T, SNAPSHOTS)
        radius = 1.0 / math.sqrt(lam) if self.projection else 0.0
        core = KernelPegasosCore.start(m, lam, radius)
        done = core.advance(K, y, idx, grid)
        loss, active, avg = done.loss, done.active, done.avg
        self.beta_ = core.beta
        self.alpha_ = core.alpha  # w_(T+1) = sum_i alpha_i y_i phi(x_i)
        self.alpha_bar_ = avg[-1]
        self.t_ = T
        R = self.radius(float(dataset.stats.R))
        if psd.shift > 0:  # R^2 = max_i K_ii of the matrix used: the shift is charged to every bound
            R = max(round_up(math.sqrt(round_up(round_up(R * R) + psd.shift))),
                    round_up(math.sqrt(float(np.diag(K).max()))))
        return Outcome(
            quantities={},
            curves={},
            trace={"active": active, "loss": loss},
            stats={"T": T, "lam": lam, "R": R, "sampling": self.sampling, "delta": float(self.delta),
                   "gram_min_eig": psd.min_eig, "gram_shift": psd.shift},
            run=KernelSvmRun(K=K, y=y, lam=lam, idx=idx, grid=grid, avg=avg, last=self.alpha_, loss=loss,
                             feature_radius=R, projection=bool(self.projection), s_max=1.0, radius=radius),
        )
