"""Worst-case regret of Pegasos' update at small horizons, by performance estimation (docs/bounds.md section 4).

Performance estimation (Drori & Teboulle, Math. Program. 145, 2014; Taylor, Hendrickx & Glineur, "Smooth
strongly convex interpolation and exact worst-case performance of first-order methods", Math. Program. 161,
2017): the adversary's whole sequence is written as a Gram matrix K, every condition of the class becomes a
linear constraint on K, and the worst case over the class in *any* dimension is a semidefinite program.
To stand beside the closed form of `regret` (:func:`bound`) and the measured regret.

The algorithm. w_1 = 0; at t = 1..T a subgradient g_t of f_t at w_t is revealed and
w_(t+1) = P(w_t - eta_t g_t), eta_t = 1/(lam t), with P the identity (``radius=None``) or a projection.

The class, exactly. f_1..f_T, each lam-strongly convex on R^d (d free), with the subgradient used at w_t
of norm ||g_t|| <= G, and a comparator u; the quantity is the average regret (1/T) sum_t [f_t(w_t) - f_t(u)].

- ``radius=None``: no projection, u anywhere in R^d (Lemma 1 of [P11] holds for every u). The worst u of
  a sequence is the mean of the centres below, of norm <= D0 = G (2 + ln T)/lam, so the SDP carries the
  redundant ||u|| <= D0 (it changes no value and bounds the trace for the dual certificate).
- ``radius=r``: ||u|| <= r, and P = the projection onto a closed convex set C with {0, u} in C in B(r).
  The SDP's value is the exact worst case of this family of sets; Pegasos' ball (C = B(r)) is one member,
  so for the ball the SDP is an upper bound and the replayed instance (projected onto the ball itself) a
  lower bound, with the gap reported.

Both classes are inside the assumptions of Lemma 1 ([P11]; Hazan, Agarwal & Kale 2007, Thm 1): its proof
uses strong convexity between w_t and u, ||g_t|| <= G at the iterates and ||P(y) - u|| <= ||y - u|| for u in
C, nothing else. So upper <= :func:`bound` must hold (a test).

Why per-t two-point conditions, and why they are exact. Each f_t is a different function, met only at w_t
and u. Regret_t = f_t(w_t) - f_t(u) is bounded by the strong-convexity inequality
f_t(u) >= f_t(w_t) + <g_t, u - w_t> + lam/2 ||u - w_t||^2, i.e. regret_t <= <g_t, w_t - u> - lam/2 ||w_t - u||^2,
and f_t(u) enters nothing else, so the SDP maximises (1/T) sum_t of that right side with ||g_t||^2 <= G^2.
It is attained by f_t(x) = lam/2 ||x - c_t||^2 with c_t = w_t - g_t/lam (gradient g_t at w_t, equality in
the inequality): interpolation is exact here, and no relaxation is made without projection. A second
subgradient h_t at u of norm <= G is not needed by the theorem; requiring it gives a subclass (a worst
case <= this one), still exactly interpolable: for finitely many points, lam-strong-convex interpolation
(no smoothness) is exact via x -> max_i f_i + <g_i, x - x_i> + lam/2 ||x - x_i||^2 (THG 2017 with L = inf),
and norm bounds at the points used only restrict the data. What has *no* exact interpolation theorem is a
Lipschitz bound on a whole domain, e.g. every subgradient on the ball of norm <= G, which Pegasos' hinge
objectives satisfy and lam/2 ||x - c_t||^2 does not (its gradient reaches G + 2 lam r on B(r)): for that
smaller class the value here is an upper bound only and the instance is not in it.

The exact value without projection (proved; the SDP reproduces it to ~1e-8, a test). For f_t as above the
proof of Lemma 1 is an identity: with 1/(2 eta_t) = lam t/2 the distances telescope and
sum_t regret_t = sum_t ||g_t||^2/(2 lam t) - (lam T/2) ||w_(T+1) - u||^2, while for any class member the same
right side is an upper bound. Hence the worst average regret is exactly G^2 H_T/(2 lam T), H_T = sum 1/t,
attained by any ||g_t|| = G with u = w_(T+1) (in R^1 already); :func:`bound` only adds H_T <= 1 + ln T.

Projection (indicator interpolation). With s_(t+1) = (y_(t+1) - w_(t+1))/eta_t, y_(t+1) = w_t - eta_t g_t,
the conditions are ||w_t||^2 <= r^2 and <s_t, z - w_t> <= 0 for every other point z of {0, u, w_2..w_T}.
Given vectors meeting them, C = conv{0, u, w_2, .., w_T} lies in B(r) and has s_t in its normal cone at w_t,
so w_t = P_C(y_t): the SDP is exact for the family of sets (w_(T+1) enters no regret and is dropped).

The SDP. Basis (u, g_1..g_T[, s_2..s_T]), n = T + 1 (2T with projection); every w_t is a fixed linear
combination of it, so objective <C, K> and constraints <A_i, K> <= b_i are linear in the Gram matrix K:
maximise <C, K> s.t. <A_i, K> <= b_i, K PSD. Dual: minimise b.y s.t. y >= 0, S = sum y_i A_i - C PSD.
Certified ``upper``: the solver's y clipped at 0, e = max(0, -lambda_min(S)) + a rounding pad, and
upper = b.y + e * tau with tau >= trace(K) for every feasible K (tau = D^2 + T G^2 [+ sum_t (r lam t + G)^2,
from <s_(t+1), w_(t+1)> >= 0 the s's are bounded]); so upper bounds the SDP whatever the solver did.

The lower bound. K is factored (rank d), g_t are shrunk to ||g_t|| <= G (1 - 1e-9), replayed through the
update (the ball projection itself) to get w_t, and the instance is the list of centres c_t = w_t - g_t/lam:
f_t(x) = lam/2 ||x - c_t||^2 in R^d. :func:`replay` runs the update on it from scratch, with the best
comparator in closed form (u = P_B(mean_t c_t), the maximiser of the concave regret in u), and its regret
is ``lower`` (evaluated in floating point, ~1e-13 relative). With projection the SDP's optimum may use a
set C other than the ball, so its g_t are then only a start: :func:`_polish` ascends the ball's regret
locally over the g_t (SLSQP) and keeps the better instance; a gap above the solver's accuracy is then the
C-family's relaxation gap or a local optimum of the polish. Without projection w_(t+1) = mean(c_1..c_t):
the update is follow-the-leader on these quadratics.

Sizes: T <= MAX_T. Without projection ~0.1 s at T = 30; with projection (2T x 2T, ~T^2 constraints) ~0.1 s
at T = 8, ~2 s at T = 16, ~30 s at T = 30, plus the polish (up to seconds at T >= 8).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import NamedTuple

import numpy as np

from pipeline.numerics import positive as _check_positive
from pipeline.solvers import solve_sdp

MAX_T = 30  # the largest horizon accepted: a 2T x 2T SDP with ~T^2 constraints
SHRINK = 1e-9  # relative: extracted gradients are scaled to ||g_t|| <= G (1 - SHRINK), leaving room for rounding
# Clarabel's attempts, in order, until one reports "optimal" (the house style of perceptron_worst).


class Instance(NamedTuple):
    """A sequence f_t(x) = lam/2 ||x - c_t||^2 (x in R^d) replayed through the update (:func:`replay`).

    centers : (T, d) the c_t. w : (T, d) iterates w_1..w_T. g : (T, d) gradients lam (w_t - c_t) used.
    u : (d,) the comparator (the best one: the projection of mean_t c_t onto the ball, or the mean itself).
    regret : (1/T) sum_t [f_t(w_t) - f_t(u)]. max_grad : max_t ||g_t|| (the class needs <= G).
    projected : the number of steps at which the projection moved y_(t+1) (w_(T+1) included).
    description : one line saying all of this.
    """

    centers: np.ndarray
    w: np.ndarray
    g: np.ndarray
    u: np.ndarray
    regret: float
    max_grad: float
    projected: int
    description: str


class RegretPEP(NamedTuple):
    """One solve (module docstring). upper : certified SDP upper bound of the class's worst average regret
    (the ball projection's included); value / dual : solver primal / dual objective; lower : the replayed
    instance's regret (a lower bound of the worst case, ball projection); gap = upper - lower; bound : the
    closed form :func:`bound`; status : Clarabel's; seconds : the whole solve; instance : the :class:`Instance`."""

    T: int
    lam: float
    G: float
    radius: float | None
    upper: float
    lower: float
    gap: float
    value: float
    dual: float
    bound: float
    status: str
    seconds: float
    instance: Instance


def _check_T(T: object) -> int:  # noqa: N802 - the horizon T
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or not 1 <= int(T) <= MAX_T:
        raise ValueError(f"T: an integer in [1, {MAX_T}] (a 2T x 2T SDP), got {T!r}")
    return int(T)


def bound(T: int, lam: float, G: float) -> float:
    """G^2 (1 + ln T) / (2 lam T): the closed form of `regret` (docs/bounds.md section 4, c = G^2), without
    its (1 + 16 mu) rounding factor."""
    T, lam, G = _check_T(T), _check_positive("lam", lam), _check_positive("G", G)
    return G * G * (1.0 + math.log(T)) / (2.0 * lam * T)


def _project(y: np.ndarray, radius: float | None) -> tuple[np.ndarray, bool]:
    if radius is None:
        return y, False
    norm = math.sqrt(float(y @ y))
    return (y * (radius / norm), True) if norm > radius else (y, False)


def replay(centers: np.ndarray, lam: float, radius: float | None = None) -> Instance:
    """Run the update (w_1 = 0, g_t = lam (w_t - c_t), w_(t+1) = P(w_t - g_t/(lam t)), P the projection onto
    the ball of ``radius`` or none) on f_t(x) = lam/2 ||x - c_t||^2 and measure its average regret against the
    best admissible comparator, u = P(mean_t c_t) (the regret is -lam/2 T ||u - mean c||^2 + const in u)."""
    lam = _check_positive("lam", lam)
    radius = None if radius is None else _check_positive("radius", radius)
    c = np.atleast_2d(np.asarray(centers, dtype=np.float64))
    T, d = c.shape
    w, g = np.zeros((T, d)), np.zeros((T, d))
    x, moved = np.zeros(d), 0
    for t in range(1, T + 1):
        w[t - 1] = x
        g[t - 1] = lam * (x - c[t - 1])
        x, hit = _project(x - g[t - 1] / (lam * t), radius)
        moved += hit
    u, _ = _project(c.mean(axis=0), radius)
    regret = float(np.mean(lam / 2.0 * (((w - c) ** 2).sum(1) - ((u - c) ** 2).sum(1))))
    max_grad = float(np.sqrt((g**2).sum(1)).max())
    where = "no projection" if radius is None else f"projection onto the ball of radius {radius:.6g} ({moved} active)"
    text = (f"f_t(x) = lam/2 ||x - c_t||^2 in R^{d}, T = {T}, lam = {lam:.6g}, {where}; max ||g_t|| = "
            f"{max_grad:.9g}, ||u|| = {float(np.linalg.norm(u)):.6g}, average regret {regret:.9g}")
    return Instance(centers=c, w=w, g=g, u=u, regret=regret, max_grad=max_grad, projected=moved, description=text)


def _sym(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.outer(a, b) + np.outer(b, a)) / 2.0


def _sdp_data(T: int, lam: float, G: float, radius: float | None) -> tuple:
    """(C, A (m, n, n), b, tau): the SDP of the module docstring and its trace bound."""
    n = T + 1 if radius is None else 2 * T
    e = np.eye(n)
    eu, eg = e[0], e[1 : T + 1]
    es = {t: e[T + t - 1] for t in range(2, T + 1)} if radius is not None else {}
    W = [np.zeros(n)]  # W[t-1]: the coefficients of w_t
    for t in range(1, T):
        W.append(W[-1] - (eg[t - 1] + es.get(t + 1, 0.0)) / (lam * t))
    C = sum(_sym(eg[t], W[t] - eu) - lam / 2.0 * np.outer(W[t] - eu, W[t] - eu) for t in range(T)) / T
    A, b = [np.outer(eg[t], eg[t]) for t in range(T)], [G * G] * T
    D = radius if radius is not None else G * (2.0 + math.log(T)) / lam
    A.append(np.outer(eu, eu))
    b.append(D * D)
    tau = D * D + T * G * G
    if radius is not None:
        points = [np.zeros(n), eu] + W[1:]
        for t in range(2, T + 1):
            A.append(np.outer(W[t - 1], W[t - 1]))
            b.append(radius**2)
            for k, z in enumerate(points):
                if k != t:  # points[t] is w_t itself
                    A.append(_sym(es[t], z - W[t - 1]))
                    b.append(0.0)
        tau += sum((radius * lam * t + G) ** 2 for t in range(1, T))
    return C, np.array(A), np.array(b), tau


def _solve(C: np.ndarray, A: np.ndarray, b: np.ndarray) -> tuple[str, np.ndarray | None, np.ndarray | None, float]:
    """Clarabel through cvxpy: (status, K, y, solver value)."""
    import cvxpy as cp
    import scipy.sparse as sp

    m, n = A.shape[0], C.shape[0]
    K = cp.Variable((n, n), symmetric=True)
    vec = cp.vec(K, order="C")
    lin = sp.csr_matrix(A.reshape(m, n * n)) @ vec <= b
    problem = cp.Problem(cp.Maximize(C.reshape(-1) @ vec), [lin, K >> 0])
    status = solve_sdp(problem)
    if K.value is None or lin.dual_value is None:
        return status, None, None, math.nan
    Kv = np.asarray(K.value, dtype=np.float64)
    return status, (Kv + Kv.T) / 2.0, np.asarray(lin.dual_value, dtype=np.float64).ravel(), float(problem.value)


def _certified_upper(C: np.ndarray, A: np.ndarray, b: np.ndarray, y: np.ndarray, tau: float) -> tuple[float, float]:
    """(b.y at the solver's duals, b.y_c + e tau): weak duality at y_c = max(y, 0) with S's negative part paid
    for by the trace bound (module docstring); padded for the rounding of S and of its eigenvalue."""
    yc = np.maximum(y, 0.0)
    S = np.tensordot(yc, A, axes=1) - C
    S = (S + S.T) / 2.0
    eps = float(np.finfo(float).eps)
    pad = 8.0 * S.shape[0] * eps * (float(np.linalg.norm(S)) + float(np.tensordot(yc, np.abs(A), axes=1).max()))
    shift = max(0.0, -float(np.linalg.eigvalsh(S)[0])) + pad
    value = float(b @ yc)
    return float(b @ y), value + shift * tau + 4.0 * len(b) * eps * float(np.abs(b) @ yc)


def _centers(g: np.ndarray, lam: float, radius: float | None) -> np.ndarray:
    """The centres c_t = w_t - g_t/lam of an adaptive adversary playing gradients g_t against the update."""
    x, centers = np.zeros(g.shape[1]), np.zeros_like(g)
    for t in range(1, g.shape[0] + 1):
        centers[t - 1] = x - g[t - 1] / lam
        x, _ = _project(x - g[t - 1] / (lam * t), radius)
    return centers


def _into_ball(g: np.ndarray, G: float) -> np.ndarray:
    norms = np.sqrt((g**2).sum(1))
    return g * np.minimum(1.0, G * (1.0 - SHRINK) / np.maximum(norms, 1e-300))[:, None]


def _extract(K: np.ndarray, T: int, lam: float, G: float, radius: float | None) -> Instance:
    """Factor K, shrink the g_t into the G-ball, replay them adaptively (ball projection) to fix the centres."""
    e, Q = np.linalg.eigh(K)
    keep = e > 1e-9 * max(float(e[-1]), 1e-300)
    V = Q[:, keep] * np.sqrt(e[keep])
    return replay(_centers(_into_ball(V[1 : T + 1], G), lam, radius), lam, radius)


def _polish(inst: Instance, lam: float, G: float, radius: float | None, maxiter: int) -> Instance:
    """Local ascent (SLSQP, finite differences) of the ball-projected regret over the gradients g_t, ||g_t|| <= G,
    from the extracted instance (one spare dimension added); the better of the two instances is returned."""
    from scipy.optimize import minimize

    T, d = inst.g.shape[0], inst.g.shape[1] + 1
    def regret(x: np.ndarray) -> float:
        return -replay(_centers(x.reshape(T, d), lam, radius), lam, radius).regret

    def jac(x: np.ndarray) -> np.ndarray:
        J = np.zeros((T, T * d))
        for t in range(T):
            J[t, t * d : (t + 1) * d] = -2.0 * x[t * d : (t + 1) * d]
        return J

    cons = {"type": "ineq", "fun": lambda x: G * G - (x.reshape(T, d) ** 2).sum(1), "jac": jac}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(regret, np.hstack([inst.g, np.zeros((T, 1))]).ravel(), method="SLSQP", constraints=[cons],
                       options={"maxiter": maxiter, "ftol": 1e-13})
    best = replay(_centers(_into_ball(res.x.reshape(T, d), G), lam, radius), lam, radius)
    return best if best.regret > inst.regret else inst


def worst_regret(T: int, lam: float, G: float, radius: float | None = None, polish: int = 100) -> RegretPEP:
    """The worst average regret of w_(t+1) = P(w_t - g_t/(lam t)), w_1 = 0, over the class of the module
    docstring at horizon T: a certified SDP upper bound and a replayed instance's lower bound.

    Parameters
    ----------
    T : horizon, 1..MAX_T. lam : strong convexity (> 0). G : bound on ||g_t|| (> 0).
    radius : None (no projection, u free) or r > 0 (||u|| <= r, projection onto C in B(r); ball replayed).
    polish : with projection, at most this many SLSQP iterations of :func:`_polish` on the lower bound (0: none).

    Without projection the SDP is exact (upper == lower up to the solver's accuracy); at T = 1 the value is
    G a - lam a^2/2 with a = min(r, G/lam) (a = G/lam without projection: G^2/(2 lam), = :func:`bound`).

    Examples
    --------
    >>> r = worst_regret(1, 0.1, 1.0)
    >>> abs(r.upper - 5.0) < 1e-6, abs(r.lower - 5.0) < 1e-6
    (True, True)
    """
    T, lam, G = _check_T(T), _check_positive("lam", lam), _check_positive("G", G)
    radius = None if radius is None else _check_positive("radius", radius)
    if isinstance(polish, bool) or not isinstance(polish, (int, np.integer)) or polish < 0:
        raise ValueError(f"polish: an integer >= 0 (SLSQP iterations), got {polish!r}")
    C, A, b, tau = _sdp_data(T, lam, G, radius)
    start = time.perf_counter()
    status, K, y, value = _solve(C, A, b)
    seconds = time.perf_counter() - start
    if K is None or y is None:
        raise RuntimeError(f"the regret SDP failed at T={T}, lam={lam}, G={G}, radius={radius}: status {status}")
    dual, upper = _certified_upper(C, A, b, y, tau)
    inst = _extract(K, T, lam, G, radius)
    if radius is not None and polish > 0:
        inst = _polish(inst, lam, G, radius, int(polish))
    if not inst.max_grad <= G:
        raise RuntimeError(f"the extracted instance has ||g_t|| = {inst.max_grad!r} > G = {G!r}")
    return RegretPEP(T=T, lam=lam, G=G, radius=radius, upper=upper, lower=inst.regret, gap=upper - inst.regret,
                     value=value, dual=dual, bound=bound(T, lam, G), status=status, seconds=seconds, instance=inst)
