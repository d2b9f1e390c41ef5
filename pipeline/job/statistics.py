"""The statistic providers: where every statistic a bound ``requires`` (and every quantity it bounds) that
neither the data's certificates nor the learner's run give comes from, in one registry.

A learner reports what it did (:class:`pipeline.learners.base.Outcome`: its per-step losses and statistics,
and in ``Outcome.run`` one typed record of :mod:`pipeline.contract` holding the objective's data, the index
stream and its iterates at the snapshot steps). A provider is a record, in the manner of
:class:`pipeline.bounds.base.Bound`: the names it provides, the record type it reads (None for any run on a
materialised sample), its reference, and one function ``(dataset, learner, outcome) -> Outcome`` that
computes them from the record's attributes, with the certified solvers of :mod:`pipeline.solvers`
(docs/bounds.md: section 2 for the comparators, 4-6 for the Pegasos family, 7-8 for the multiclass learners).
:func:`complete` asks the registry for exactly the names the evaluated bounds read (``requires``,
``quantity``, ``quantity_low``) that are still missing, and merges what the providers return: a provider
computes its names together (one certified solve gives f*_lo, f*_hi and the regret against its optimum).
A provider declared ``always`` is run for every run of its record whatever the bounds read, before the others:
the held-out risks of the multiclass predictors and their intervals (docs/bounds.md section 9), columns of
every such run that the comparators' providers read too.

>>> sorted(record.__name__ for record in REGISTRY["f_star_hi"] if record is not None)
['CrammerSingerRun', 'KernelSvmRun', 'SvmRun']
>>> list(REGISTRY["comparators"])
[None]
>>> provider_for("c", SvmRun).name, provider_for("comparators", SvmRun).name
('svm_constant', 'comparators')
>>> sorted(record.__name__ for record in REGISTRY["risk_01"] if record is not None)  # held-out, always computed
['CrammerSingerRun', 'MulticlassBiasRun', 'MulticlassSgdRun', 'MulticlassSvmRun', 'OneVsAllVotes']

A plug-in brings its own providers under the ``boundlab.statistics`` entry points (docs/plugins.md,
:data:`pipeline.plugins.STATISTICS`); :func:`registry` holds them beside the built-ins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, TypedDict, TypeVar

import numpy as np

from pipeline.contract import (Cost, CrammerSingerRun, HalvingRun, KernelSvmRun, MulticlassBiasRun, MulticlassSgdRun,
                               MulticlassSvmRun, OneVsAllRun, OneVsAllVotes, PresentedRun, Run, StronglyConvexRun,
                               SvmRun)
from pipeline.learners.base import Outcome, log_grid
from pipeline._jit import kernel
from pipeline.numerics import UNIT_ROUNDOFF, margins_kernel
from pipeline.risk import (clopper_pearson, cost_losses, cost_matrix, ghinge_losses, mean_ci, zero_loss,
                           zero_one_losses)
from pipeline.solvers import dual
from pipeline.solvers.comparators import comparator_margins
from pipeline.solvers.multiclass import ball_comparator, multiclass_svm


@dataclass(frozen=True)
class Provider:
    """Statistics computed from a run, for the bounds that require them.

    Attributes
    ----------
    name : short identifier.
    record : the :mod:`pipeline.contract` record type (``Outcome.run``) whose runs it computes for, and its
        subclasses; None for every run on a sample.
    provides : the names it computes (``Bound.requires`` statistics and ``Bound.quantity`` quantities).
    compute : (dataset, learner, outcome) -> an :class:`Outcome` holding what it computed (stats,
        quantities, curves, per-step ``steps``, ``trace``), merged into the run's.
    reference : where the statistic is defined and certified.
    needs_sample : it reads the whole sample (a streamed dataset, never materialised, has none: the
        bounds requiring its names are not evaluated on a stream).
    layout : per field of :class:`Outcome` (``"stats"``, ``"trace"``), the order of its keys after the
        merge: the columns of the results table and the arrays of ``trace.npz`` keep the order they have
        always had, the learner's and the provider's interleaved.
    always : computed for every run of its record, whatever the bounds read, before the providers they ask
        for: what describes the run beside its bounds (the held-out risks), and what other providers read.
    """

    name: str
    record: type[Run] | None
    provides: tuple[str, ...]
    compute: Callable[[Any, Any, Outcome], Outcome]
    reference: str
    needs_sample: bool = False
    layout: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    always: bool = False


_R = TypeVar("_R", bound=Run)


def record_of(out: Outcome, kind: type[_R]) -> _R:
    """``out.run``, checked to be a ``kind`` (the record a provider declared): a provider reads typed attributes."""
    if not isinstance(out.run, kind):
        raise TypeError(f"a provider for {kind.__name__} was given a run of {type(out.run).__name__}")
    return out.run


# --- The constant of the Pegasos bounds ----------------------------------------------------------------


def pegasos_constant(R: float, lam: float, projection: bool, s_max: float = 1.0, radius: float = 0.0) -> float:
    """c = G^2, the squared bound on the sub-gradients' norm (P11 Thm 1).

    Without projection ||u_t|| <= s_max R / lam, so G = 2 s_max R; with projection onto ||u|| <= radius,
    G = lam radius + s_max R ((sqrt(lam) + R)^2 for the plain radius 1/sqrt(lam)).
    """
    g = lam * radius + s_max * R if projection else 2.0 * s_max * R
    return g * g * (1.0 + 8.0 * UNIT_ROUNDOFF)


def iterate_ball(run: StronglyConvexRun) -> dict[str, float]:
    """The ball every iterate of a Pegasos-family run lies in, around its start w_1, and the Lipschitz constant
    of its objective's loss part (docs/bounds.md section 4, "Ranges from the theory"): ``iterate_radius`` r is
    the projection's radius, or s_max G_x / lam without projection (by induction, u_(t+1) = (1 - 1/t) u_t +
    (1/(lam t)) g_t with ||g_t|| <= s_max G_x, G_x the feature radius); ``loss_lipschitz`` L = G_x times the
    mean of the objective's weights (1 unweighted; the imbalanced objective's weights average 1), each rounded up."""
    weights = getattr(run, "weights", None)
    mean_w = 1.0 if weights is None else float(np.max([1.0, math.fsum(np.asarray(weights, dtype=np.float64)) / len(weights)
                                                      * (1.0 + 4.0 * UNIT_ROUNDOFF)]))
    up = 1.0 + 8.0 * UNIT_ROUNDOFF
    r = run.radius if run.projection else run.s_max * run.feature_radius / run.lam * up
    return {"iterate_radius": float(r) * up, "loss_lipschitz": float(run.feature_radius * mean_w) * up,
            "hull_top": hull_top(run)}


HULL_MAX = 5000  # the largest sample whose steps' hull is searched (m^2 d work: 0.09 s at m = 1000, d = 20, loaded)
_HULL_BLOCK = 512  # vertices (Gram columns) evaluated at once


def hull_top(run: StronglyConvexRun) -> float:
    """The largest value of the objective f on the hull the iterates of a binary Pegasos run lie in (docs/bounds.md
    section 4, "Ranges from the theory"): u_(t+1) = (1 - 1/t) u_t + (1/(lam t)) g_t with g_t a mean of terms in
    {0} u {s_j y_j x_j}, so by induction every iterate (and every average of iterates) is in w_1 + (1/lam) conv{0,
    s_j y_j x_j}; a projection scales u by a factor <= 1 and keeps it there. f is convex, so its largest value on
    that polytope is at a vertex: f(w_1) or, at u = s_j y_j x_j / lam, s_j^2 K_jj / (2 lam) + (1/m) sum_i w_i
    max(0, 1 - r_i - s_j y_i y_j K_ij / lam), with K the Gram matrix of what the learner sees and r_i the
    reference's margins. Rounded up: the Gram's rounding (at most (d + 2) u R^2 an entry for the linear kernel;
    the kernel run's own K is exact by definition) charged to every hinge, and the sums' rounding. NaN (no top
    from the hull) for a sample above :data:`HULL_MAX` examples or a run of another kind."""
    X: Any = getattr(run, "X", None)
    K: Any = getattr(run, "K", None)
    y = np.asarray(getattr(run, "y", np.zeros(0)), dtype=np.float64)
    m = y.shape[0]
    if m == 0 or m > HULL_MAX or (X is None and K is None) or (X is not None and hasattr(X, "toarray")) \
            or isinstance(run, CrammerSingerRun):
        return math.nan
    lam = float(run.lam)
    weights = getattr(run, "weights", None)
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
    step = np.asarray(getattr(run, "s_step", np.ones(m)), dtype=np.float64)
    ref = np.asarray(getattr(run, "ref_margin", np.zeros(m)), dtype=np.float64)
    if X is not None:
        X = np.asarray(X, dtype=np.float64)
        diag = np.einsum("ij,ij->i", X, X)
        err = (X.shape[1] + 2) * 2.0 * UNIT_ROUNDOFF * float(diag.max())  # |fl(K_ij) - K_ij| <= this
    else:
        diag, err = np.asarray(np.diagonal(K), dtype=np.float64), 0.0
    best = -math.inf
    top = 1.0 - ref
    for a in range(0, m, _HULL_BLOCK):
        b = min(a + _HULL_BLOCK, m)
        # the hinges 1 - r_i - (y_i K_ij) s_j y_j / lam + e_j, each operation in this order, in place in the block
        # of the Gram (an (m, block) temporary per operation cost more than the rest: page faults)
        cols = X @ X[a:b].T if X is not None else np.array(K[:, a:b], dtype=np.float64)  # (m, block), a copy
        hinge = _hinges(cols, y, top, step[a:b] * y[a:b] / lam, err * np.abs(step[a:b]) / lam)
        f = (step[a:b] ** 2) * (diag[a:b] + err) / (2.0 * lam) + (w @ hinge) / m
        best = max(best, float(f.max()))
    return best * (1.0 + (m + 16) * 4.0 * UNIT_ROUNDOFF) if math.isfinite(best) else math.nan


@kernel
def _hinges(cols: np.ndarray, y: np.ndarray, top: np.ndarray, scale: np.ndarray, e: np.ndarray) -> np.ndarray:
    """In place, ``cols[i, j]`` (K_ij) becomes max(0, top_i - (y_i K_ij) scale_j + e_j): each operation in numpy's
    order for ``np.maximum(0.0, top[:, None] - y[:, None] * K * scale[None, :] + e[None, :])`` (the same bits; a NaN
    stays NaN, -0 becomes 0), in one pass over the block instead of one per operation."""
    m, k = cols.shape
    for i in range(m):
        yi = y[i]
        ti = top[i]
        for j in range(k):
            x = (ti - (yi * cols[i, j]) * scale[j]) + e[j]
            cols[i, j] = 0.0 if 0.0 >= x else x
    return cols


def _constant(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """c from the run's feature radius (the data's R; the feature space's for kernels; sqrt(2) R for the
    multivector map), its projection ball and its largest class weight; beside it the iterates' ball
    (:func:`iterate_ball`), which the ranges of the suboptimalities read."""
    run = record_of(out, StronglyConvexRun)
    c = pegasos_constant(run.feature_radius, run.lam, run.projection, run.s_max, run.radius)
    return Outcome(quantities={}, curves={}, trace={}, stats={"c": c, **iterate_ball(run)})


def _first_part_constant(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """One-vs-all: the first binary problem's c and ball, reported beside the run (each part is judged with its own)."""
    first = next(iter(out.parts.values()))
    return Outcome(quantities={}, curves={}, trace={}, stats={k: first.stats[k] for k in ("c", *_BALL) if k in first.stats})


# --- Certified optima of the Pegasos family (docs/bounds.md sections 4-6, 8) ------------------------------

_PEGASOS_QUANTITIES = ("regret", "suboptimality", "suboptimality_low", "suboptimality_last")
_OPTIMUM = ("regret_still", "f_star_lo", "f_star_hi", "dual_gap", "f_start")
_TELESCOPED = ("telescoped", "telescoped_allowance")


def _svm_optimum(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """F* in [D(alpha), F(w)] by SDCA (docs/bounds.md section 4, "Computing the comparator"); the regret
    of Lemma 1 against u = its w (projected into the ball when the run projects), the suboptimality of the
    snapshots' averages and last iterates."""
    run = record_of(out, SvmRun)
    X, y, lam, weights, w_ref = run.X, run.y, run.lam, run.weights, run.w_ref
    idx, radius, s_step = run.idx, run.radius, run.s_step
    T, k, d = int(out.stats["T"]), idx.shape[1], X.shape[1]
    cert = dual.sdca(X, y, lam, weights=weights, w_ref=w_ref, tol=1e-9)
    shift = 0.0 if w_ref is None else w_ref
    u = cert.w - shift
    if radius > 0.0 and np.linalg.norm(u) > radius:  # Lemma 1 needs u in the ball
        u *= radius / np.linalg.norm(u)
    hinge_u = np.maximum(0.0, 1.0 - margins_kernel(X, y, u + shift)) * s_step
    f_u = 0.5 * lam * float(u @ u) + hinge_u[idx].sum(axis=1) / k
    steps = np.arange(1, T + 1)
    regret = np.cumsum(run.loss - f_u) / steps
    # the learner that never moves from w_1: f_t(w_1) is the hinge at w_r (0 margin without transfer)
    f_still = (np.maximum(0.0, 1.0 - run.ref_margin) * s_step)[idx].sum(axis=1) / k
    regret_still = float(np.mean(f_still - f_u))

    def sub(ws: np.ndarray) -> np.ndarray:
        return dual.objectives(X, y, lam, ws + shift, weights=weights, w_ref=w_ref) - cert.dual

    sub_avg, sub_last = sub(run.avg), sub(run.last)
    t, grid = log_grid(T), run.grid
    telescoped = _telescoped(run, run.grad2, u, f_u, lam, T, d) if run.grad2 is not None else {}
    random = {}
    if run.random is not None:  # the random iterate w_r (linear Pegasos)
        sub_random = float(sub(run.random[None, :])[0])
        random = {"suboptimality_random": sub_random, "suboptimality_random_low": sub_random - (cert.primal - cert.dual)}
    return Outcome(
        quantities={"regret": float(regret[-1]), "suboptimality": float(sub_avg[-1]),
                    "suboptimality_low": float(sub_avg[-1]) - (cert.primal - cert.dual),
                    "suboptimality_last": float(sub_last[-1]), **random},
        curves={"regret": (t, regret[t - 1]), "suboptimality": (grid, sub_avg), "suboptimality_last": (grid, sub_last)},
        trace={"comparator_loss": f_u},
        steps={"regret": regret},
        stats={"regret_still": regret_still, "f_star_lo": cert.dual, "f_star_hi": cert.primal, "dual_gap": cert.gap,
               "f_start": dual.objective(X, y, lam, np.zeros(d) + shift, weights=weights, w_ref=w_ref), **telescoped},
    )


def _telescoped(run: SvmRun, grad2: np.ndarray, u: np.ndarray, f_u: np.ndarray, lam: float, T: int,
                d: int) -> dict[str, float]:
    """The realised form of Lemma 1 (docs/bounds.md section 4): the proof's telescoped sum before ||grad_t|| <= G,
    (1/T) [sum_t ||grad_t||^2 / (2 lam t) - (lam T / 2) ||u_(T+1) - u||^2], from the run's own sub-gradient norms
    (``grad2``, each clamped at 0 from below: a true square) and last iterate, plus a rounding allowance.

    The inequality has no slack where every hinge term of iterate and comparator lies on one linear piece (T = 1
    with u active is an equality), so rounding alone could tip it. The allowance covers the rounding of the
    sums (64 (T + d + 8) units of rounding times the magnitudes summed: the two sums, the square at the end,
    sum |f_t(w_t)| and sum |f_t(u)|) and that of the steps themselves: a step's rounding e_t (a few units of
    rounding of ||u_t|| + ||x||/(lam t), with ||u_t|| <= G/lam) enters the telescoped sum as lam t <u_(t+1) - u, e_t>,
    at most about G^2 T^2 / lam over the run; 64 units of rounding of c T / lam on the mean. At lam = 0.01,
    T = 5000, c = 4 it is 1.4e-8, against gaps of 1e-3 and more between the realised bound and the regret."""
    t = np.arange(1, T + 1)
    squares = math.fsum(np.maximum(grad2, 0.0) / (2.0 * lam * t))
    last = run.last[-1]  # u_(T+1): the last snapshot is at step T
    diff = last - u
    end = 0.5 * lam * T * float(diff @ diff)
    reach = 0.5 * lam * T * (float(np.linalg.norm(last)) + float(np.linalg.norm(u))) ** 2
    magnitude = squares + reach + math.fsum(np.abs(run.loss)) + math.fsum(np.abs(f_u))
    c = pegasos_constant(run.feature_radius, lam, run.projection, run.s_max, run.radius)
    allowance = 64.0 * UNIT_ROUNDOFF * ((T + d + 8) * magnitude / T + c * T / lam)
    return {"telescoped": (squares - end) / T + allowance, "telescoped_allowance": allowance}


def _hindsight(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """Lemma 1 against the hardest comparator: the best u in hindsight for the run's own steps (docs/bounds.md
    section 4, ``regret_hindsight``). (1/T) sum_t f_t(u) is an SVM objective on the examples the run drew,
    each weighted by how often it was drawn: lam/2 ||u||^2 + (1/(T k)) sum_i c_i s_i hinge_i(u), i.e. the
    objective of :func:`pipeline.solvers.dual.sdca` on those rows with weights m' c_i s_i / (T k). Its
    certified minimum [D, F] gives the regret's upper estimate mean f_t(w_t) - D; the lower estimate is the
    regret against a point of the ball (the solver's u, projected into it when the run projects): the
    unconstrained minimum is at most the ball's, so the upper estimate stays one."""
    run = record_of(out, SvmRun)
    X, y, lam, w_ref, idx, s_step, radius = run.X, run.y, run.lam, run.w_ref, run.idx, run.s_step, run.radius
    T, k = int(out.stats["T"]), idx.shape[1]
    counts = np.bincount(idx.ravel(), minlength=X.shape[0])
    rows = np.nonzero(counts)[0]
    weights = rows.size * counts[rows] * s_step[rows] / (T * k)
    Xs, ys = X[rows], y[rows]
    cert = dual.sdca(Xs, ys, lam, weights=weights, w_ref=w_ref, tol=1e-9)
    shift = 0.0 if w_ref is None else w_ref
    u = cert.w - shift
    if radius > 0.0 and np.linalg.norm(u) > radius:  # Lemma 1 covers the ball only: a point of it for the low side
        u *= radius / np.linalg.norm(u)
    at_u = dual.objective(Xs, ys, lam, u + shift, weights=weights, w_ref=w_ref)
    mean_loss = math.fsum(run.loss) / T
    f_still = (np.maximum(0.0, 1.0 - run.ref_margin) * s_step)[idx].sum(axis=1) / k
    return Outcome(
        quantities={"regret_hindsight": mean_loss - cert.dual, "regret_hindsight_low": mean_loss - max(at_u, cert.primal)},
        curves={}, trace={},
        stats={"regret_still_hindsight": math.fsum(f_still) / T - max(at_u, cert.primal),
               "hindsight_gap": cert.primal - cert.dual},
    )


def _kernel_svm_optimum(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """Kernel SDCA on the run's (certified, possibly shifted) Gram matrix (docs/bounds.md section 5)."""
    run = record_of(out, KernelSvmRun)
    K, y, lam, idx, avg = run.K, run.y, run.lam, run.idx, run.avg
    T, k, m = int(out.stats["T"]), idx.shape[1], y.shape[0]
    cert = dual.kernel_sdca(K, y, lam, tol=1e-9)
    u = cert.w
    Kay = K @ (u * y)
    u_norm2 = float((u * y) @ Kay)
    radius = float(run.radius)
    if radius > 0.0 and u_norm2 > radius * radius:  # Lemma 1 needs u in the ball the run projects onto
        u = u * (radius / math.sqrt(u_norm2))
        Kay = K @ (u * y)
        u_norm2 = float((u * y) @ Kay)
    hinge_u = np.maximum(0.0, 1.0 - y * Kay)
    f_u = 0.5 * lam * u_norm2 + hinge_u[idx].sum(axis=1) / k
    steps = np.arange(1, T + 1)
    regret = np.cumsum(run.loss - f_u) / steps
    regret_still = float(np.mean(1.0 - f_u))  # beta = 0 throughout: f_t(0) = 1
    sub_avg = dual.kernel_objectives(K, y, lam, avg) - cert.dual
    sub_last = np.array([dual.kernel_objective(K, y, lam, run.last) - cert.dual])  # w_(T+1) only
    t, grid = log_grid(T), run.grid
    return Outcome(
        quantities={"regret": float(regret[-1]), "suboptimality": float(sub_avg[-1]),
                    "suboptimality_low": float(sub_avg[-1]) - (cert.primal - cert.dual),
                    "suboptimality_last": float(sub_last[-1])},
        curves={"regret": (t, regret[t - 1]), "suboptimality": (grid, sub_avg),
                "suboptimality_last": (grid[-1:], sub_last)},
        trace={"comparator_loss": f_u},
        steps={"regret": regret},
        stats={"regret_still": regret_still, "f_star_lo": cert.dual, "f_star_hi": cert.primal, "dual_gap": cert.gap,
               "f_start": dual.kernel_objective(K, y, lam, np.zeros(m))},
    )


def _crammer_singer_optimum(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """f* of lam/2 ||W||^2 + mean generalized hinge: the multiclass SVM's certified optimum with lam_UML =
    lam / 2 (docs/bounds.md section 8), for the run's label cost."""
    run = record_of(out, CrammerSingerRun)
    X, y, k, lam, idx, avg, W = run.X, run.y, run.k, run.lam, run.idx, run.avg, run.W
    T = int(out.stats["T"])
    cost = cost_matrix(run.cost, k)
    cert = multiclass_svm(X, y, k, lam / 2.0, cost=cost)  # lam_UML ||W||^2 = (lam/2) ||W||^2

    def f(Wm: np.ndarray) -> float:
        return 0.5 * lam * float(np.sum(Wm * Wm)) + float(ghinge_losses(X, y, Wm, cost).mean())

    u = cert.W
    radius = float(run.radius)
    if radius > 0.0 and np.linalg.norm(u) > radius:  # Lemma 1 needs u in the ball the run projects onto
        u = u * (radius / np.linalg.norm(u))
    hinge_u = ghinge_losses(X, y, u, cost)
    f_u = 0.5 * lam * float(np.sum(u * u)) + hinge_u[idx]
    regret = np.cumsum(run.loss - f_u) / np.arange(1, T + 1)
    # W = 0 throughout: f_t(0) = max_y' Delta(y', y_t) (1 for the 0-1 cost, the same bits as 1.0 - f_u)
    regret_still = float(np.mean(zero_loss(y[idx], cost, k) - f_u))
    sub = np.array([f(a) for a in avg]) - cert.dual
    sub_last = f(W) - cert.dual
    t = log_grid(T)
    return Outcome(
        quantities={"regret": float(regret[-1]), "suboptimality": float(sub[-1]), "suboptimality_last": sub_last,
                    "suboptimality_low": float(sub[-1]) - (cert.primal - cert.dual)},
        curves={"regret": (t, regret[t - 1]), "suboptimality": (run.grid, sub)},
        trace={"comparator_loss": f_u},
        steps={"regret": regret},
        stats={"regret_still": regret_still, "f_star_lo": cert.dual, "f_star_hi": cert.primal, "dual_gap": cert.gap,
               "f_start": f(np.zeros_like(W))},
    )


# --- Held-out risks of the multiclass predictors (docs/bounds.md section 9) --------------------------------


def held_out_risks(dataset: Any, W: np.ndarray, cost: Cost = "zero_one") -> dict[str, float]:
    """Held-out generalized hinge and 0-1 risks of W with 95 % intervals (docs/bounds.md section 9), both for
    the label cost ``cost``; for a cost other than 0-1 also its risk E Delta(h(x), y) (``risk_cost``, ties
    resolved to the costliest tied label, :func:`pipeline.risk.cost_losses`), with a Hoeffding/t interval
    on [0, max Delta]. For the 0-1 cost that risk is ``risk_01``, and no column is added."""
    D = cost_matrix(cost, W.shape[0])
    top_cost = float(D.max())
    hinge = ghinge_losses(dataset.X_test, dataset.y_test, W, D)
    top = top_cost + 2.0 * float(np.linalg.norm(W, axis=1).max()) * float(dataset.stats.R)
    mean, lo, hi = mean_ci(hinge, lo=0.0, hi=top)
    errors = int(zero_one_losses(dataset.X_test, dataset.y_test, W).sum())
    e_lo, e_hi = clopper_pearson(errors, hinge.size)
    out = {"risk_hinge": mean, "risk_hinge_lo": lo, "risk_hinge_hi": hi, "risk_01": errors / hinge.size,
           "risk_01_lo": e_lo, "risk_01_hi": e_hi, "n_test": int(hinge.size)}
    if not (isinstance(cost, str) and cost == "zero_one"):  # a named cost other than 0-1, or a matrix
        c_mean, c_lo, c_hi = mean_ci(cost_losses(dataset.X_test, dataset.y_test, W, D), lo=0.0, hi=top_cost)
        out |= {"risk_cost": c_mean, "risk_cost_lo": c_lo, "risk_cost_hi": c_hi}
    return out


def _held_out_sgd(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """The last average W_bar's held-out risks; its 0-1 risk is also the run's measured ``risk_01``."""
    run = record_of(out, MulticlassSgdRun)
    final = held_out_risks(ds, run.avg[-1], run.cost)
    return Outcome(quantities={"risk_01": final["risk_01"]}, curves={}, trace={}, stats=final)


def _held_out_svm(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """The certified minimiser's held-out risks; its 0-1 risk is also the run's measured ``risk_01``."""
    run = record_of(out, MulticlassSvmRun)
    final = held_out_risks(ds, run.W, run.cost)
    return Outcome(quantities={"risk_01": final["risk_01"]}, curves={}, trace={}, stats=final)


def _held_out_crammer_singer(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """The last average W_bar's held-out risks."""
    run = record_of(out, CrammerSingerRun)
    return Outcome(quantities={}, curves={}, trace={}, stats=held_out_risks(ds, run.avg[-1], run.cost))


def _held_out_biased(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """The held-out risks of argmax_j W_j.x + b_j: [x, 1] scored against [W_j, b_j], the loss range with the
    radius of [x, 1], sqrt(R^2 + 1)."""
    from types import SimpleNamespace

    run = record_of(out, MulticlassBiasRun)
    R = float(ds.stats.R)
    X_test = np.asarray(ds.X_test, dtype=np.float64)
    augmented = SimpleNamespace(X_test=np.hstack([X_test, np.ones((X_test.shape[0], 1))]), y_test=ds.y_test,
                                stats=SimpleNamespace(R=math.sqrt(R * R + 1.0)))
    risks = held_out_risks(augmented, np.hstack([run.W_bar, run.b_bar[:, None]]), run.cost)
    return Outcome(quantities={}, curves={}, trace={}, stats=risks)


def _held_out_votes(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """One-vs-all's held-out 0-1 risk with its Clopper-Pearson interval (w_j.x + b_j as the score of [x, 1]
    against [w_j, b_j] with biases)."""
    run = record_of(out, OneVsAllVotes)
    X_test, W = ds.X_test, run.W
    if run.b is not None:
        X_test = np.hstack([np.asarray(X_test, dtype=np.float64), np.ones((X_test.shape[0], 1))])
        W = np.hstack([W, run.b[:, None]])
    errors = int(zero_one_losses(X_test, ds.y_test, W).sum())
    lo, hi = clopper_pearson(errors, ds.y_test.size)
    return Outcome(quantities={}, curves={}, trace={},
                   stats={"risk_01": errors / ds.y_test.size, "risk_01_lo": lo, "risk_01_hi": hi})


# --- The comparator ball of the multiclass bounds (docs/bounds.md section 7) ------------------------------


class Comparator(TypedDict):
    """The ball's comparator (:func:`population_comparator`): its risk's certified ``lower`` value and the
    ``upper`` estimate, the comparator ``U`` ((k, d)) and ``how`` they were found, in words."""

    lower: float
    upper: float
    U: np.ndarray
    how: str


def population_comparator(dataset: Any, B: float, cost: Any = None,
                          extra: Mapping[str, np.ndarray] | None = None) -> Comparator:
    """min over ||U|| <= B of the population generalized hinge risk with the label cost ``cost`` (None is
    0-1; docs/bounds.md section 7, "Comparator").

    Exactly 0 for the realisable generator (no noise) when B >= max Delta / gamma: W* has margins >= gamma,
    so U = (max Delta / gamma) W* has margins >= max Delta >= Delta(y', y) and L_D(U) = 0 (for the 0-1 cost
    U = W*/gamma and B >= 1/gamma; for max Delta > 1 the 1/gamma of the 0-1 cost does not suffice). Otherwise
    the lower estimate min_ball L_S1 on the training sample (rigorous for S1 itself; for a finite set S
    the population is S, so it is exact) and the upper estimate: a one-sided 95 % upper confidence limit of
    L_D(U) on the held-out sample (t and Hoeffding on the loss range [0, max Delta + 2 max_j ||U_j|| R], the
    wider), for each candidate U in the ball (the solver's U_hat and W* scaled into the ball), Bonferroni over
    the candidates so that the smallest limit is one for min_ball L_D; a finite population S is the
    comparator's own sample, where the held-out mean is exact. The lower one is used to declare a bound
    satisfied, the upper one to claim a violation (the conservative side of each).
    """
    gamma = getattr(dataset, "gamma", None)
    noise = float(getattr(getattr(dataset, "sampler", None), "noise", 0.0) or 0.0)
    cost = cost_matrix(cost, dataset.k)
    top = float(cost.max())  # 1.0 for the 0-1 cost: every product and quotient below keeps its bits
    if dataset.W_star is not None and gamma and noise == 0.0 and B * gamma >= top:
        U = dataset.W_star / gamma * top
        # The generator certifies the margins of fl(W*/gamma) with its rounding charged twice over, which covers
        # the one more rounding of the product by max Delta; checked on the held-out draws all the same.
        if top == 1.0 or ghinge_losses(dataset.X_test, dataset.y_test, U, cost).max() == 0.0:
            how = ("exact: L_D(W*/gamma) = 0 with B >= 1/gamma" if top == 1.0 else
                   f"exact: L_D(W* max Delta / gamma) = 0 with B >= max Delta / gamma = {top / gamma:.4g}")
            return {"lower": 0.0, "upper": 0.0, "U": U, "how": how}
    # a finite population S is the comparator's own sample (the training rows may be a draw from it)
    X, y = (dataset.X_test, dataset.y_test) if dataset.population == "S" else (dataset.X, dataset.y)
    ball = ball_comparator(X, y, dataset.k, B, cost)
    candidates = {"U_hat": ball.U}
    if dataset.W_star is not None and gamma:  # W* max Delta / gamma, scaled into the ball
        candidates["W*/gamma"] = dataset.W_star / gamma * top * min(1.0, B * gamma / top)
    for name, W in (extra or {}).items():  # e.g. the learner's own average, projected into the ball: Pi_B(W_bar)
        norm = float(np.linalg.norm(W))
        candidates[name] = W * min(1.0, B / norm) if norm > 0 else W
    exact = dataset.population == "S"  # X_test is S itself: the mean is L_D
    level = 1.0 - 2.0 * 0.05 / len(candidates)  # two-sided level whose upper end is a one-sided 95 %/|C| limit
    held: dict[str, float] = {}
    for name, U in candidates.items():
        losses = ghinge_losses(dataset.X_test, dataset.y_test, U, cost)
        if exact:
            held[name] = float(losses.mean())
            continue
        top_loss = top + 2.0 * float(np.linalg.norm(U, axis=1).max()) * float(dataset.stats.R)
        held[name] = float(mean_ci(np.minimum(losses, top_loss), level, lo=0.0, hi=top_loss)[2])
    best = min(held, key=held.__getitem__)
    where = (f"the whole population S (n = {y.size})" if dataset.population == "S"
             else f"the training sample (m = {y.size})")
    upper = f"{best} on the whole population" if exact else f"95 % upper confidence limit of {best}'s held-out risk"
    return {"lower": float(ball.lower), "upper": held[best], "U": ball.U,
            "how": f"lower: min over the ball on {where}; upper: {upper}"}


def _comparator_stats(comp: Comparator) -> dict[str, object]:
    return {"comparator_lower": comp["lower"], "comparator_upper": comp["upper"], "comparator_how": comp["how"]}


def _sgd_comparator(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """Lemma 14.1's regret against the ball's comparator U on the run's own stream, and the excess risk
    of the snapshots' averages over the comparator's lower value (Cor. 17.2)."""
    run = record_of(out, MulticlassSgdRun)
    X, y, T = run.X, run.y, int(out.stats["T"])
    cost = cost_matrix(run.cost, ds.k)
    comp = population_comparator(ds, run.B, cost, extra={"Pi_B(W_bar)": run.avg[-1]})
    U = comp["U"]
    u_loss = ghinge_losses(X, y, U, cost)
    regret = np.cumsum(run.loss - u_loss)
    u2 = float(np.sum(U * U))
    # W = 0 throughout: its generalised hinge loss is max_y' Delta(y', y_t) (1 for the 0-1 cost)
    regret_still = float(np.sum(zero_loss(y, cost, ds.k) - u_loss))
    risks = [held_out_risks(ds, a, run.cost)["risk_hinge"] for a in run.avg]  # each snapshot's average
    excess = np.array(risks) - comp["lower"]
    t = log_grid(T)
    return Outcome(
        quantities={"regret": float(regret[-1]), "excess": float(excess[-1]),
                    "excess_upper_comparator": out.stats["risk_hinge_lo"] - comp["upper"]},
        curves={"regret": (t, regret[t - 1]), "excess": (run.grid, excess)},  # the bound's curve: Bound.curve_of
        trace={"comparator_loss": u_loss},
        steps={"regret": regret},
        stats={"u_norm2": u2, "regret_still": regret_still, **_comparator_stats(comp)},
    )


def _svm_comparator(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """The multiclass SVM's excess risk over the ball's comparator (Cor. 17.1)."""
    run = record_of(out, MulticlassSvmRun)
    comp = population_comparator(ds, run.B, run.cost)
    excess = out.stats["risk_hinge"] - comp["lower"]
    return Outcome(
        quantities={"excess": excess, "excess_upper_comparator": out.stats["risk_hinge_lo"] - comp["upper"]},
        curves={"excess": (np.array([run.m]), np.array([excess]))},
        trace={},
        stats=_comparator_stats(comp),
    )


# --- The perceptron's comparators (docs/bounds.md section 2) -------------------------------------------------


def _comparators(ds: Any, learner: Any, out: Outcome) -> Outcome:
    """Rigorous lower bounds of the normalised margins of each comparator direction fixed without looking
    at the run (:func:`pipeline.solvers.comparators.comparator_margins`): one per example of the sample, or,
    when the run says which example each round presented (:class:`pipeline.contract.PresentedRun`), one per round."""
    margins = comparator_margins(ds.X, ds.y, ds.directions)
    if isinstance(out.run, PresentedRun):  # rounds that are not passes over the sample (ordering=adaptive): one margin a round
        margins = {name: m[out.run.presented] for name, m in margins.items()}
    return Outcome(quantities={}, curves={}, trace={}, stats={"comparators": margins})


# --- The registry ------------------------------------------------------------------------------------------

_PEGASOS_STATS = ("T", "lam", "c", "regret_still", "sampling", "delta", "f_star_lo", "f_star_hi", "dual_gap", "f_start")
_HELD_OUT = ("risk_hinge", "risk_hinge_lo", "risk_hinge_hi", "risk_01", "risk_01_lo", "risk_01_hi", "n_test")
_HELD_OUT_COST = (*_HELD_OUT, "risk_cost", "risk_cost_lo", "risk_cost_hi")  # risk_cost*: a cost other than 0-1
_HELD_OUT_REFERENCE = "docs/bounds.md section 9 (Student t and Hoeffding, Clopper-Pearson; pipeline.risk)"
_C_REFERENCE = "P11 Thm 1 (c = G^2); docs/bounds.md sections 4, 5, 8 (the iterates' ball: \"Ranges from the theory\")"
_BALL = ("iterate_radius", "loss_lipschitz", "hull_top")

# --- The exact worst case of Halving's game, beside its bound -------------------------------------------

# Budget of the exact game search beside each Halving run (:func:`exact_game`): memoised version spaces
# times distinct points, each search's state budget being GAME_WORK // points (at most pipeline.solvers.games.MAX_STATES).
# A count, not a time, so that the columns are the same on every machine: about 0.5 s per run at worst
# (measured on classes that exhaust it; the halving_classes grid needs at most 15 ms a run).
GAME_WORK = 1_000_000


def exact_game(table: np.ndarray) -> dict[str, object]:
    """The exact worst case of Halving's own game on the class ``table`` (|H| x m, the run's table of
    distinct functions on the run's points), by :func:`pipeline.solvers.games.halving_value` and
    :func:`~pipeline.solvers.games.littlestone_dimension` (docs/bounds.md section 3).

    The game is the learner's: ``halving_kernel`` predicts +1 iff 2 |{h in V : h(x) = +1}| >= |V| (a tie to
    +1), exactly the vote the search plays, and Halving has no other tie rule. Returns the stats

    - ``game_value`` (int): the most mistakes any realisable sequence over these points (any order,
      repetitions allowed) forces on Halving; so in a realisable run (the only kind
      :meth:`pipeline.learners.halving.Halving.check_data` lets through) measured mistakes <= game_value <= floor(log2 |H|).
    - ``littlestone`` (int): Ldim of the class on these points, the optimal learner's worst case
      (<= game_value).
    - ``game_status`` (str, always present): ``"exact"`` when both were computed; otherwise
      ``"too_large: |H| = N > 64"`` (the search's states are subsets of H) or ``"budget: more than S
      version spaces"`` (the search would exceed its state budget, GAME_WORK // distinct points), and
      the two integer columns are left out (NaN in a table of runs, never a sentinel value).
    """
    from pipeline.data.finite import distinct_rows
    from pipeline.solvers import games

    H = int(table.shape[0])
    if H > games.MAX_HYPOTHESES:
        return {"game_status": f"too_large: |H| = {H} > {games.MAX_HYPOTHESES}"}
    t = np.ascontiguousarray(table.T)  # games' layout: m points x |H| hypotheses
    points = max(1, len(distinct_rows(t)))
    max_states = max(1, min(games.MAX_STATES, GAME_WORK // points))
    try:
        value = games.halving_value(t, max_states=max_states).value
        ldim = games.littlestone_dimension(t, max_states=max_states)
    except ValueError as e:
        if not str(e).startswith("max_states"):
            raise
        return {"game_status": f"budget: more than {max_states} version spaces"}
    return {"game_value": int(value), "littlestone": int(ldim), "game_status": "exact"}


def _halving_game(ds: Any, learner: Any, out: Outcome) -> Outcome:  # ds unused: the run's class is in out
    return Outcome({}, {}, {}, stats=exact_game(record_of(out, HalvingRun).class_table))


PROVIDERS: tuple[Provider, ...] = (
    # the held-out risks, in the columns where the learners wrote them before they were providers
    Provider("held_out_sgd", MulticlassSgdRun, _HELD_OUT_COST, _held_out_sgd, _HELD_OUT_REFERENCE, always=True,
             layout={"stats": ("T", "B", "R", "rho", "rho_sharp", "eta", "vnorm2_sum", "k", "population", *_HELD_OUT_COST)}),
    Provider("held_out_svm", MulticlassSvmRun, _HELD_OUT_COST, _held_out_svm, _HELD_OUT_REFERENCE, always=True,
             layout={"stats": ("T", "B", "R", "rho", "lam_uml", "svm_primal", "svm_dual", "dual_gap", "k", "m",
                               "population", *_HELD_OUT_COST)}),
    Provider("held_out_crammer_singer", CrammerSingerRun, _HELD_OUT_COST, _held_out_crammer_singer, _HELD_OUT_REFERENCE,
             always=True, layout={"stats": ("T", "lam", "R", "sampling", "delta", "k", *_HELD_OUT_COST)}),
    Provider("held_out_biased", MulticlassBiasRun, _HELD_OUT_COST, _held_out_biased, _HELD_OUT_REFERENCE, always=True,
             layout={"stats": ("T", "lam", "R", "sampling", "delta", "k", *_HELD_OUT_COST)}),
    Provider("held_out_votes", OneVsAllVotes, ("risk_01", "risk_01_lo", "risk_01_hi"), _held_out_votes,
             _HELD_OUT_REFERENCE, always=True, layout={"stats": ("T", "k", "R", "risk_01", "risk_01_lo", "risk_01_hi")}),
    Provider("halving_game", HalvingRun, ("game_value", "littlestone", "game_status"), _halving_game,
             "docs/bounds.md section 3, 'The exact game' (pipeline.solvers.games)"),
    Provider("comparators", None, ("comparators",), _comparators,
             "docs/bounds.md section 2: the generator's w* and soft-margin SVM directions", needs_sample=True),
    Provider("svm_constant", SvmRun, ("c", *_BALL), _constant, _C_REFERENCE, layout={"stats": _PEGASOS_STATS}),
    Provider("svm_optimum", SvmRun, (*_OPTIMUM, *_PEGASOS_QUANTITIES, *_TELESCOPED, "suboptimality_random",
                                     "suboptimality_random_low"),
             _svm_optimum,
             "docs/bounds.md section 4, 'Computing the comparator' (SDCA duality gap, pipeline.solvers.dual)",
             layout={"stats": _PEGASOS_STATS, "trace": ("active", "loss", "comparator_loss")}),
    Provider("svm_hindsight", SvmRun, ("regret_hindsight", "regret_hindsight_low", "regret_still_hindsight"), _hindsight,
             "docs/bounds.md section 4, regret_hindsight (the run's own steps as an SVM objective, SDCA duality gap)",
             needs_sample=True),
    Provider("kernel_svm_constant", KernelSvmRun, ("c", *_BALL), _constant, _C_REFERENCE,
             layout={"stats": ("T", "lam", "R", "regret_still", "c")}),
    Provider("kernel_svm_optimum", KernelSvmRun, (*_OPTIMUM, *_PEGASOS_QUANTITIES), _kernel_svm_optimum,
             "docs/bounds.md section 5 (kernel SDCA duality gap, pipeline.solvers.dual)",
             layout={"stats": ("T", "lam", "R", "regret_still", "c", "sampling", "delta", "f_star_lo", "f_star_hi",
                               "dual_gap", "f_start", "gram_min_eig", "gram_shift"),
                     "trace": ("active", "loss", "comparator_loss")}),
    Provider("crammer_singer_constant", CrammerSingerRun, ("c", *_BALL), _constant, _C_REFERENCE,
             layout={"stats": ("T", "lam", "R", "c")}),
    Provider("crammer_singer_optimum", CrammerSingerRun, (*_OPTIMUM, *_PEGASOS_QUANTITIES), _crammer_singer_optimum,
             "docs/bounds.md section 8 (the multiclass SVM's certified optimum, pipeline.solvers.multiclass)",
             layout={"stats": ("T", "lam", "R", "c", "regret_still", "sampling", "delta", "f_star_lo", "f_star_hi",
                               "dual_gap", "f_start", "k", *_HELD_OUT),
                     "trace": ("loss", "comparator_loss", "mistake")}),
    Provider("one_vs_all_constant", OneVsAllRun, ("c", *_BALL), _first_part_constant, _C_REFERENCE),
    Provider("sgd_comparator", MulticlassSgdRun,
             ("u_norm2", "regret_still", "comparator_lower", "comparator_upper", "comparator_how", "regret", "excess",
              "excess_upper_comparator"), _sgd_comparator,
             "docs/bounds.md section 7, 'Comparator' (the ball's certified minimum, pipeline.solvers.multiclass)",
             layout={"stats": ("T", "B", "R", "rho", "rho_sharp", "eta", "u_norm2", "regret_still", "vnorm2_sum",
                               "comparator_lower", "comparator_upper", "comparator_how", "k", "population", *_HELD_OUT),
                     "trace": ("loss", "comparator_loss", "vnorm2", "mistake")}),
    Provider("svm_comparator", MulticlassSvmRun, ("comparator_lower", "comparator_upper", "comparator_how", "excess",
                                              "excess_upper_comparator"), _svm_comparator,
             "docs/bounds.md section 7, 'Comparator' (the ball's certified minimum, pipeline.solvers.multiclass)",
             layout={"stats": ("T", "B", "R", "rho", "lam_uml", "svm_primal", "svm_dual", "dual_gap",
                               "comparator_lower", "comparator_upper", "comparator_how", "k", "m", "population",
                               *_HELD_OUT)}),
)


Key = type[Run] | None
"""A provider's key beside the name it provides: the record type it reads, None for any run on a sample."""


def _index(providers: Iterable[Provider]) -> dict[str, dict[Key, Provider]]:
    out: dict[str, dict[Key, Provider]] = {}
    for p in providers:
        for name in p.provides:
            if p.record in out.setdefault(name, {}):
                raise ValueError(f"two providers of {name!r} for record {_label(p.record)}")
            out[name][p.record] = p
    return out


def _label(record: Key) -> str:
    return "any run" if record is None else record.__name__


REGISTRY: dict[str, dict[Key, Provider]] = _index(PROVIDERS)
"""boundlab's own providers: statistic or quantity name -> record type (None for any run) -> its provider."""


def plugin_providers() -> tuple[Provider, ...]:
    """The providers plug-ins register under the ``boundlab.statistics`` entry points (docs/plugins.md), each
    entry point naming a :class:`Provider` or a tuple of them. A provider whose (name, record) a built-in or an
    earlier plug-in already serves is ignored, and an entry point that does not load is skipped, each with a
    warning (:func:`pipeline.plugins.warn`): a run is never judged with a guessed statistic."""
    from pipeline.plugins import STATISTICS, warn

    taken = {(name, record) for name, by in REGISTRY.items() for record in by}
    found: list[Provider] = []
    for entry, obj in STATISTICS.loaded():
        records = (obj,) if isinstance(obj, Provider) else tuple(obj) if isinstance(obj, (tuple, list)) else None
        if records is None or not all(isinstance(p, Provider) for p in records):
            warn(f"{entry.describe()} names a {type(obj).__name__}; a statistics entry point names a "
                 "pipeline.job.statistics.Provider or a tuple of them (docs/plugins.md) (skipped)")
            continue
        for p in records:
            clash = [name for name in p.provides if (name, p.record) in taken]
            if clash:
                warn(f"{entry.describe()}: provider {p.name!r} provides {', '.join(clash)} for {_label(p.record)}, "
                     "which another provider already gives; it is ignored (rename what it provides or its record)")
                continue
            taken |= {(name, p.record) for name in p.provides}
            found.append(p)
    return tuple(found)


def registry() -> dict[str, dict[Key, Provider]]:
    """Every provider, boundlab's and the plug-ins': name -> record type (None for any run) -> provider."""
    plugins = plugin_providers()
    return _index((*PROVIDERS, *plugins)) if plugins else REGISTRY


def provider_for(name: str, record: type[Run] | None, providers: Mapping[str, Mapping[Key, Provider]] | None = None,
                 ) -> Provider | None:
    """The provider of ``name`` for runs of the record type ``record``: the one declared for the nearest type of
    its MRO (a subclass of a contract record is served as its base), else the one for any run; or None.
    ``providers`` defaults to :func:`registry`."""
    by_record = (registry() if providers is None else providers).get(name, {})
    for kind in record.__mro__ if record is not None else ():
        if kind in by_record:
            return by_record[kind]
    return by_record.get(None)


def reads(bounds: Iterable[Any]) -> list[str]:
    """Every name the bounds read: their statistics (``requires``), what their rows show beside them
    (``beside``) and their quantities, first-seen order."""
    names: dict[str, None] = {}
    for b in bounds:
        for name in (*b.requires, *b.beside, b.quantity, b.quantity_low):
            if name:
                names[name] = None
    return list(names)


def available(bound: Any, dataset: Any) -> bool:
    """False when ``bound`` requires a statistic that cannot be computed for ``dataset``: one a provider
    reads off the whole sample, and the data are streamed (never materialised)."""
    if dataset.kind != "stream":
        return True
    providers = registry()
    return not any(p.needs_sample for name in bound.requires for p in providers.get(name, {}).values())


def _ordered(d: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    return {k: d[k] for k in order if k in d} | {k: v for k, v in d.items() if k not in order}


def _merge(out: Outcome, new: Outcome, layout: Mapping[str, tuple[str, ...]]) -> None:
    out.quantities |= new.quantities
    out.curves |= new.curves
    out.steps |= new.steps
    out.trace = _ordered(out.trace | new.trace, layout.get("trace", ()))
    out.stats = _ordered(out.stats | new.stats, layout.get("stats", ()))


def _always(providers: Mapping[str, Mapping[Key, Provider]], record: type[Run] | None) -> list[Provider]:
    """The providers computed for every run of ``record`` (``Provider.always``), each where it is the one
    :func:`provider_for` resolves for its names (a subclass's own provider replaces its base's), in order."""
    found: dict[str, Provider] = {}
    for name, by_record in providers.items():
        for p in by_record.values():
            if p.always and provider_for(name, record, providers) is p:
                found.setdefault(p.name, p)
    return list(found.values())


def _fill(dataset: Any, learner: Any, out: Outcome, names: list[str]) -> None:
    certified = dataset.stats.as_dict() if dataset.stats is not None else {}  # (a sample not certified: none)
    providers = registry()
    record = None if out.run is None else type(out.run)
    for first in _always(providers, record):  # first: the bounds' providers may read what they give
        if not set(first.provides) & (set(out.stats) | set(out.quantities)):  # (not once more on a completed run)
            _merge(out, first.compute(dataset, learner, out), first.layout)
    have = set(certified) | set(out.stats) | set(out.quantities)
    todo: dict[str, Provider] = {}
    for name in names:
        p = provider_for(name, record, providers) if name not in have else None
        if p is not None:
            todo.setdefault(p.name, p)
    for p in todo.values():
        _merge(out, p.compute(dataset, learner, out), p.layout)


def complete(dataset: Any, learner: Any, outcome: Outcome, bounds: Iterable[Any]) -> Outcome:
    """``outcome`` with every statistic and quantity ``bounds`` read that the data and the run do not give,
    from the registered providers (each part of a split run on its own first, then the whole). Names no
    provider gives stay missing: :meth:`pipeline.bounds.base.Bound.evaluate` then says which. In place;
    returns ``outcome``."""
    names = reads(bounds)
    for part in outcome.parts.values():
        _fill(dataset, learner, part, names)
    _fill(dataset, learner, outcome, names)
    return outcome


def measure(learner: Any, dataset: Any, rng: np.random.Generator, bounds: Iterable[Any] | None = None) -> Outcome:
    """``learner.run(dataset, rng)`` completed with what ``bounds`` read (default: every registered bound
    of the learner that can be evaluated on ``dataset``), as :func:`pipeline.job.run.run` does."""
    if bounds is None:
        from pipeline.bounds.registry import bounds_for

        bounds = [b for b in bounds_for(learner.name) if available(b, dataset)]
    return complete(dataset, learner, learner.run(dataset, rng), bounds)


__all__ = ["PROVIDERS", "REGISTRY", "Comparator", "Key", "Provider", "available", "complete", "held_out_risks", "measure",
           "pegasos_constant", "plugin_providers", "population_comparator", "provider_for", "reads", "record_of",
           "registry"]
