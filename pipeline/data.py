"""Data: generators with known statistics, and the certified statistics of the vectors a learner sees.

Every bound in :mod:`pipeline.bounds` is evaluated from the statistics measured here, on exactly the
array handed to the learner (BOUNDS.md section 0). Statistics are rigorous in floating point: ``R`` is
an upper bound of max_i ||x_i|| and ``gamma_lo`` a lower bound of the margin attained by an explicit
witness direction, both with the rounding error of the dot products accounted for (Higham, *Accuracy
and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5: |fl(a.b) - a.b| <= gamma_d |a|.|b|).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from pipeline.params import Param, ParamError, check_params, get_params

_U = 2.0**-53  # unit roundoff of float64


def _gamma(d: int) -> float:
    """Higham's gamma_d = d u / (1 - d u), doubled to cover the evaluation of the error term itself."""
    return 2.0 * d * _U / (1.0 - d * _U)


@dataclass(frozen=True)
class Stats:
    """Certified statistics of a labelled sample (BOUNDS.md sections 1 and 9).

    Attributes
    ----------
    m, d : sample size and dimension of the vectors the learner sees.
    R : rigorous upper bound of max_i ||x_i||.
    gamma_lo, gamma_hi : two-sided certificate gamma_lo <= gamma*(S) <= gamma_hi of the best margin
        gamma*(S) = max_{||w||=1} min_i y_i w.x_i; NaN where no certificate exists.
    separable : True when an explicit w has y_i w.x_i > 0 for every i (then gamma_lo > 0).
    gap : relative gap (gamma_hi - gamma_lo) / gamma_hi of the certificate.
    """

    m: int
    d: int
    R: float
    gamma_lo: float
    gamma_hi: float
    separable: bool
    gap: float

    def as_dict(self) -> dict[str, float | int | bool]:
        return asdict(self)


def radius(X: np.ndarray) -> float:
    """Rigorous upper bound of max_i ||x_i|| for the float rows of ``X``."""
    sq = np.einsum("ij,ij->i", X, X).max(initial=0.0)
    return math.sqrt(sq * (1.0 + _gamma(X.shape[1]))) * (1.0 + 2.0 * _U)


def margin_lower(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Rigorous lower bound of min_i y_i w.x_i / ||w||: a margin attained by the explicit ``w``.

    Any ``w`` gives gamma_lo <= gamma*(S) (BOUNDS.md section 1, step 3); the rounding of every dot
    product and of ||w|| is charged against the margin so the result is a true lower bound.
    """
    g = _gamma(X.shape[1])
    margins = y * (X @ w) - g * (np.abs(X) @ np.abs(w))
    norm_hi = math.sqrt(float(w @ w) * (1.0 + g)) * (1.0 + 2.0 * _U)
    lo = float(margins.min()) / norm_hi
    return lo * (1.0 - 4.0 * _U) if lo > 0 else lo * (1.0 + 4.0 * _U)


def margin_upper(X: np.ndarray, y: np.ndarray, alpha: np.ndarray) -> float:
    """Upper bound ||p|| of gamma*(S) with p = sum_i alpha_i y_i x_i / sum_i alpha_i, for alpha >= 0.

    For any unit w, min_i y_i w.x_i <= sum_i alpha_i y_i w.x_i / sum_i alpha_i = w.p <= ||p||
    (BOUNDS.md section 1, step 3). Rounded outwards like :func:`margin_lower`.
    """
    if np.any(alpha < 0) or not alpha.sum() > 0:
        raise ValueError("alpha must be non-negative with a positive sum")
    p = (alpha * y) @ X / alpha.sum()
    g = _gamma(X.shape[0] + X.shape[1])
    return math.sqrt(float(p @ p) * (1.0 + g)) * (1.0 + g)


def certify(X: np.ndarray, y: np.ndarray, w: np.ndarray, alpha: np.ndarray) -> Stats:
    """Certified statistics of (X, y) from a primal witness ``w`` and a dual witness ``alpha``."""
    lo = margin_lower(X, y, w)
    hi = margin_upper(X, y, alpha)
    return Stats(
        m=int(X.shape[0]),
        d=int(X.shape[1]),
        R=radius(X),
        gamma_lo=lo,
        gamma_hi=hi,
        separable=lo > 0,
        gap=(hi - lo) / hi if hi > 0 else math.inf,
    )


@dataclass(frozen=True)
class Dataset:
    """A labelled sample with its certified statistics and its provenance."""

    name: str
    X: np.ndarray
    y: np.ndarray
    stats: Stats


class MarginBinary:
    """Binary data with exact best margin ``gamma`` and radius ``rho`` (BOUNDS.md section 9).

    Draw a unit w* and an orthonormal basis Q of its complement. Each point is
    x_i = y_i a_i w* + z_i with a_i log-uniform on [gamma, rho] (concentrated near gamma, the hard
    case) and z_i uniform in the (d-1)-ball of radius sqrt(rho^2 - a_i^2) in span(Q), so
    y_i w*.x_i = a_i >= gamma and ||x_i|| <= rho. The pinned pair x(+/-) = +/-gamma w* + z0 with
    ||z0|| = sqrt(rho^2 - gamma^2) makes the radius exactly rho and the best margin exactly gamma: for
    ||w|| <= 1, min_i y_i w.x_i <= (w.x+ - w.x-)/2 = gamma w.w* <= gamma. It also supplies the dual
    witness (alpha = 1 on the pair) of the certificate; w* is the primal witness.

    Parameters
    ----------
    gamma : margin, 0 < gamma <= rho.
    rho : radius.
    n : number of examples, the pinned pair included (n >= 2).
    d : dimension (d >= 2).
    pos_fraction : probability of the label +1 for the random points.

    Examples
    --------
    >>> ds = MarginBinary(gamma=0.1, rho=1.0, n=500, d=5).generate(np.random.default_rng(0))
    >>> ds.X.shape, ds.stats.gap <= 1e-9, round(ds.stats.gamma_lo, 6), round(ds.stats.R, 6)
    ((500, 5), True, 0.1, 1.0)
    """

    name = "margin_binary"
    params = (
        Param("gamma", float, lambda v: v > 0, "a number > 0 (and <= rho)"),
        Param("rho", float, lambda v: v > 0, "a number > 0"),
        Param("n", int, lambda v: v >= 2, "an integer >= 2 (the stream includes the pinned pair)"),
        Param("d", int, lambda v: v >= 2, "an integer >= 2"),
        Param("pos_fraction", float, lambda v: 0 < v < 1, "a number in (0, 1)"),
    )

    def __init__(
        self, *, gamma: float, rho: float, n: int = 1000, d: int = 20, pos_fraction: float = 0.5
    ) -> None:
        self.gamma = gamma
        self.rho = rho
        self.n = n
        self.d = d
        self.pos_fraction = pos_fraction

    def check(self) -> None:
        """Raise :class:`pipeline.params.ParamError` on an invalid parameter."""
        check_params(self)
        if self.gamma > self.rho:
            raise ParamError("gamma", self.gamma, f"<= rho = {self.rho} (no point of norm <= rho has a larger margin)")

    def get_params(self) -> dict[str, float | int]:
        return get_params(self)

    def generate(self, rng: np.random.Generator) -> Dataset:
        self.check()
        gamma, rho, n, d = float(self.gamma), float(self.rho), int(self.n), int(self.d)
        basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
        w_star, Q = basis[:, 0], basis[:, 1:]

        k = n - 2
        y = np.where(rng.random(k) < self.pos_fraction, 1.0, -1.0)
        a = gamma * (rho / gamma) ** rng.random(k)
        direction = rng.standard_normal((k, d - 1))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        r = np.sqrt(np.maximum(rho**2 - a**2, 0.0)) * rng.random(k) ** (1.0 / (d - 1))
        X = (y * a)[:, None] * w_star + (r[:, None] * direction) @ Q.T

        z0_dir = rng.standard_normal(d - 1)
        z0 = Q @ (z0_dir / np.linalg.norm(z0_dir)) * math.sqrt(max(rho**2 - gamma**2, 0.0))
        pair = np.stack([gamma * w_star + z0, -gamma * w_star + z0])
        at = np.sort(rng.choice(n, size=2, replace=False))
        X = np.insert(X, [at[0], at[1] - 1], pair, axis=0)
        y = np.insert(y, [at[0], at[1] - 1], [1.0, -1.0])

        alpha = np.zeros(n)
        alpha[at] = 1.0
        X = np.ascontiguousarray(X)
        return Dataset(self.name, X, y, certify(X, y, w_star, alpha))


DATASETS = {cls.name: cls for cls in (MarginBinary,)}
