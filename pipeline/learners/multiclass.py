"""Multiclass learners with the generalized hinge loss (UML section 17.2, [S3]; docs/bounds.md sections 7, 8):
SGD (Cor. 17.2), the multiclass SVM (Cor. 17.1), one-vs-all over binary Pegasos, and multiclass Pegasos
(Crammer-Singer objective, P11 section 5 Ex. 3).

Multivector feature map: Psi(x, y) puts x in block y of R^(k d), so W is a k x d matrix, <W, Psi(x, y)>
= W_y.x and Psi(x, y') - Psi(x, y) has norm sqrt(2) ||x|| for y' != y. Delta is the label cost of the
learners' ``cost`` parameter (:data:`pipeline.risk.COSTS`; the 0-1 loss by default; docs/bounds.md section 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline._jit import kernel
from pipeline.data.dataset import Source
from pipeline.data.multiclass import MulticlassSample
from pipeline.contract import (CrammerSingerRun, MulticlassBiasRun, MulticlassSgdRun, MulticlassSvmRun,
                               OneVsAllRun, OneVsAllVotes)
from pipeline.learners.base import Learner, Outcome, log_grid
from pipeline.params import (DELTA, INTERCEPT, IN_SCALE, LAM, PROJECTION, T_STEPS, Param, ParamError, UserError,
                             in_scale, one_of)
from pipeline.risk import COST_WORDS, COSTS, Cost, CostMatrix


@kernel
def multiclass_step_kernel(X: np.ndarray, y: np.ndarray, idx: np.ndarray, W: np.ndarray, Wsum: np.ndarray, eta: float,
                           lam: float, radius: float, cost: np.ndarray, t0: int, grid: np.ndarray, avg: np.ndarray,
                           loss: np.ndarray, vnorm2: np.ndarray, wrong: np.ndarray) -> int:
    """Sub-gradient steps t0+1 .. t0+len(idx) on the generalized hinge loss over the rows ``idx`` of (X, y).

    At step t (1-based, counted from the run's start: t0 steps came before), with scores s_j = W_j.x: the
    loss-augmented label yhat = argmax_y'
    (Delta(y', y) + s_y' - s_y), Delta(y', y) = ``cost[y', y]`` (a k x k matrix with a zero diagonal; ties
    keep y, then the first label: no update on a tie with y), loss[t] = lam/2 ||W||^2 + that maximum,
    vnorm2[t] = ||Psi(x, yhat) - Psi(x, y)||^2, wrong[t] = 1 if some y' != y scores >= s_y (0-1 loss,
    ties counted as errors). Wsum accumulates W_t before the update (the average includes W_1 = 0); at
    the steps in ``grid`` the average Wsum/t goes to ``avg``. Update:
      lam = 0 (SGD, [S3]):           W <- W - eta (Psi(x, yhat) - Psi(x, y))
      lam > 0 (Pegasos, P11 5):      W <- (1 - 1/t) W - (lam t)^-1 (Psi(x, yhat) - Psi(x, y))
    then, when ``radius`` > 0, W is projected onto the Frobenius ball ||W|| <= radius (scaled by
    radius / ||W|| when outside it).
    """
    T = idx.shape[0]
    k, d = W.shape
    scores = np.empty(k)
    g = 0
    while g < grid.shape[0] and grid[g] <= t0:
        g += 1
    for r in range(T):
        t = t0 + r + 1
        i = idx[r]
        yi = y[i]
        norm2 = 0.0
        for j in range(k):
            s = 0.0
            for c in range(d):
                Wsum[j, c] += W[j, c]
                s += W[j, c] * X[i, c]
                norm2 += W[j, c] * W[j, c]
            scores[j] = s
        best = yi
        value = 0.0
        err = 0
        for j in range(k):
            if j != yi:
                v = cost[j, yi] + scores[j] - scores[yi]  # (Delta + s_j) - s_y: the bits of 1.0 + ... for 0-1
                if v > value:
                    best = j
                    value = v
                if scores[j] >= scores[yi]:
                    err = 1
        loss[r] = 0.5 * lam * norm2 + value
        wrong[r] = err
        if g < grid.shape[0] and grid[g] == t:
            for j in range(k):
                for c in range(d):
                    avg[g, j, c] = Wsum[j, c] / t
            g += 1
        step = eta
        if lam > 0.0:
            step = 1.0 / (lam * t)
            shrink = 1.0 - 1.0 / t
            for j in range(k):
                for c in range(d):
                    W[j, c] *= shrink
        if best != yi:
            xx = 0.0
            for c in range(d):
                xx += X[i, c] * X[i, c]
                W[best, c] -= step * X[i, c]
                W[yi, c] += step * X[i, c]
            vnorm2[r] = 2.0 * xx
        else:
            vnorm2[r] = 0.0
        if radius > 0.0:
            after = 0.0
            for j in range(k):
                for c in range(d):
                    after += W[j, c] * W[j, c]
            if after > radius * radius:
                scale = radius / math.sqrt(after)
                for j in range(k):
                    for c in range(d):
                        W[j, c] *= scale
    return 0


@kernel
def multiclass_bias_kernel(X: np.ndarray, y: np.ndarray, idx: np.ndarray, W: np.ndarray, b: np.ndarray, Wbar: np.ndarray,
                           bbar: np.ndarray, lam: float, radius: float, cost: np.ndarray, loss: np.ndarray,
                           wrong: np.ndarray) -> int:
    """Multiclass Pegasos with unregularised biases b ([S4] 2.3's Crammer-Singer b^(y)): scores s_j = W_j.x + b_j,
    yhat = argmax_y' (Delta(y', y) + s_y' - s_y) (ties keep y), loss[t] = lam/2 ||W||^2 + that maximum,
    then W <- (1 - 1/t) W and, if yhat != y, W_yhat -= x/(lam t), W_y += x/(lam t), b_yhat -= 1/(lam t),
    b_y += 1/(lam t): b is never shrunk (it is not regularised) and a projection, if any, scales W only.
    Plain O(k d) steps: no bound speaks of this rule. ``Wbar``, ``bbar`` get the averages over t = 1..T."""
    T = idx.shape[0]
    k, d = W.shape
    scores = np.empty(k)
    for r in range(T):
        t = r + 1
        i = idx[r]
        yi = y[i]
        norm2 = 0.0
        for j in range(k):
            s = b[j]
            bbar[j] += b[j]
            for c in range(d):
                Wbar[j, c] += W[j, c]
                s += W[j, c] * X[i, c]
                norm2 += W[j, c] * W[j, c]
            scores[j] = s
        best = yi
        value = 0.0
        err = 0
        for j in range(k):
            if j != yi:
                v = cost[j, yi] + scores[j] - scores[yi]
                if v > value:
                    best = j
                    value = v
                if scores[j] >= scores[yi]:
                    err = 1
        loss[r] = 0.5 * lam * norm2 + value
        wrong[r] = err
        step = 1.0 / (lam * t)
        shrink = 1.0 - 1.0 / t
        for j in range(k):
            for c in range(d):
                W[j, c] *= shrink
        if best != yi:
            for c in range(d):
                W[best, c] -= step * X[i, c]
                W[yi, c] += step * X[i, c]
            b[best] -= step
            b[yi] += step
        if radius > 0.0:
            after = 0.0
            for j in range(k):
                for c in range(d):
                    after += W[j, c] * W[j, c]
            if after > radius * radius:
                scale = radius / math.sqrt(after)
                for j in range(k):
                    for c in range(d):
                        W[j, c] *= scale
    for j in range(k):
        bbar[j] /= T
        for c in range(d):
            Wbar[j, c] /= T
    return 0


@dataclass
class MulticlassSteps:
    """What a block of T steps of :class:`MulticlassCore` records: per step the loss (``loss``), ||v_t||^2
    (``vnorm2``) and the 0-1 mistake (``wrong``); at the snapshot steps of the grid the average W (``avg``, one
    k x d slice per grid entry; slices of grid steps outside the block are left as they were)."""

    avg: np.ndarray
    loss: np.ndarray
    vnorm2: np.ndarray
    wrong: np.ndarray

    @classmethod
    def empty(cls, T: int, snapshots: int, k: int, d: int) -> MulticlassSteps:
        """Fresh (uninitialised) arrays for T steps and ``snapshots`` grid entries."""
        return cls(np.empty((snapshots, k, d)), np.empty(T), np.empty(T), np.empty(T, dtype=np.int8))


@dataclass
class MulticlassCore:
    """The multiclass learners' training state, and the one way to advance it (docs/bounds.md sections 7-8): what
    :class:`MulticlassSGD` (``lam`` = 0, step ``eta``), :class:`MulticlassPegasos` (``lam`` > 0, optional
    projection onto ||W|| <= ``radius``) and their scikit-learn adapters run.

    W after ``t`` steps and the running sum ``Wsum`` of W_1..W_t (:func:`multiclass_step_kernel`), the label
    cost Delta as the k x k matrix ``cost``. :meth:`advance` continues exactly: advancing over idx[:n] and
    then idx[n:] gives the bits of one advance over idx (tests/test_multiclass.py).
    """

    eta: float
    lam: float
    radius: float
    cost: np.ndarray
    W: np.ndarray
    Wsum: np.ndarray
    t: int = 0

    @classmethod
    def start(cls, k: int, d: int, eta: float = 0.0, lam: float = 0.0, radius: float = 0.0,
              cost: Cost = None) -> MulticlassCore:
        """W_1 = 0 for k classes in dimension d; ``cost`` a name of :data:`pipeline.risk.COSTS` or a matrix."""
        from pipeline.risk import cost_matrix

        D = np.ascontiguousarray(cost_matrix(cost, k))
        return cls(float(eta), float(lam), float(radius), D, np.zeros((k, d)), np.zeros((k, d)))

    def advance(self, X: np.ndarray, y: np.ndarray, idx: np.ndarray, grid: np.ndarray,
                out: MulticlassSteps | None = None) -> MulticlassSteps:
        """Steps t+1 .. t+T over the rows ``idx`` (shape (T,)) of (X, y) (X as float64 and y as int64
        class indices, C-contiguous), the averages at the steps of ``grid`` (ascending) into ``out`` (fresh
        arrays by default)."""
        T = idx.shape[0]
        k, d = self.W.shape
        if out is None:
            out = MulticlassSteps.empty(T, grid.shape[0], k, d)
        multiclass_step_kernel(X=X, y=y, idx=idx, W=self.W, Wsum=self.Wsum, eta=self.eta, lam=self.lam,
                               radius=self.radius, cost=self.cost, t0=self.t, grid=grid, avg=out.avg, loss=out.loss,
                               vnorm2=out.vnorm2, wrong=out.wrong)
        self.t += T
        return out


def _steps(X: np.ndarray, y: np.ndarray, idx: np.ndarray, k: int, eta: float, lam: float, points: int = 40,
           radius: float = 0.0, cost: Cost = None) -> tuple[np.ndarray, ...]:
    """A whole run of the core from W_1 = 0 over ``idx``, with ``points`` log-spaced snapshots: W_(T+1), the
    grid, the snapshots' averages and the per-step loss, ||v_t||^2 and mistakes."""
    grid = log_grid(idx.shape[0], points)
    core = MulticlassCore.start(k, X.shape[1], eta=eta, lam=lam, radius=radius, cost=cost)
    done = core.advance(np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(y, dtype=np.int64), idx, grid)
    return core.W, grid, done.avg, done.loss, done.vnorm2, done.wrong


def cost_stats(cost: Cost, k: int) -> dict[str, float]:
    """The constants of the label cost the bounds read: ``cost_max`` = max Delta and ``zero_loss_lo`` =
    min_y max_y' Delta(y', y), a lower bound of the generalized hinge loss of W = 0 on every example (both 1
    for the 0-1 cost; docs/bounds.md section 7)."""
    from pipeline.risk import cost_matrix

    D = cost_matrix(cost, k)
    return {"cost_max": float(D.max()), "zero_loss_lo": float(D.max(axis=0).min())}


_COST_ALLOWED = (f"{COST_WORDS}, or a k x k matrix (a list of k lists of k finite numbers, zero on the diagonal and "
                 "> 0 off it)")


class CostParam(Param):
    """The ``cost`` parameter: a name of :data:`pipeline.risk.COSTS`, or an explicit k x k matrix Delta[y', y]
    (a list of lists), validated here up to k (square, finite, zero diagonal, > 0 off it) and stored as a
    tuple of tuples of floats; its size is checked against the data's k with the data (:meth:`_Multiclass.
    check_with`). A bad value is a one-line :class:`ParamError` naming the key."""

    held = "str | CostMatrix"

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str):
            if value not in COSTS:
                raise ParamError(self.name, value, _COST_ALLOWED)
            return value
        try:
            rows = [list(r) for r in value]  # a ListConfig of ListConfigs too
            ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) for r in rows for v in r)
            D = np.array(rows, dtype=np.float64) if ok else None
        except (TypeError, ValueError):
            D = None
        if D is None or D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] < 2:
            raise ParamError(self.name, value, _COST_ALLOWED)
        off = ~np.eye(D.shape[0], dtype=bool)
        if not np.all(np.isfinite(D)) or np.any(np.diag(D) != 0.0) or not np.all(D[off] > 0.0):
            raise ParamError(self.name, value, _COST_ALLOWED)
        return tuple(tuple(float(v) for v in r) for r in D)


COST_PARAM = CostParam("cost", str, lambda v: True, _COST_ALLOWED, default="zero_one")


class _Multiclass(Learner):
    """Shared declarations and checks: the data must be multiclass, and the run's arrays must fit in memory."""

    accepts = frozenset({"multiclass"})

    def run_bytes(self, n: int | None, d: int | None, k: int | None) -> dict[str, tuple[object, float]]:
        """The run's dominant arrays, ``{param: (value, bytes)}``: per-step arrays and the training sample's
        losses (overridden where the learner draws or loops differently)."""
        T = int(getattr(self, "T", 0) or 0)
        d, k, n = d or 0, k or 0, n or 0
        return {"T": (getattr(self, "T", None), T * (8.0 * 8 + 8.0 * 3 * k)),
                "k": (k, 8.0 * 4 * k * d + 8.0 * 40 * k * d + 8.0 * 4 * n * k)}

    def check_with(self, dataset: Source) -> None:
        from pipeline.learners.base import planned_shape
        from pipeline.params import check_sizes

        n, d = planned_shape(dataset)
        k = getattr(dataset, "k", None)
        k = int(k) if isinstance(k, int) and not isinstance(k, bool) else None
        check_sizes(self.run_bytes(n, d, k), "lower T, k or d", "the run")
        self.check_cost(k)
        rho = getattr(dataset, "rho", None)
        if isinstance(rho, (int, float)) and not isinstance(rho, bool):  # generated data: R <= rho, known before they exist
            self.check_scale(float(rho))

    def check_data(self, dataset: MulticlassSample) -> None:
        self.check_scale(float(dataset.stats.R))
        self.check_cost(int(dataset.k))

    def check_cost(self, k: int | None) -> None:
        """Refuse an explicit cost matrix whose size is not the data's k (a named cost fits every k)."""
        cost = getattr(self, "cost", "zero_one")
        if k is not None and not isinstance(cost, str) and len(cost) != k:
            raise ParamError("cost", [list(r) for r in cost], f"a {k} x {k} matrix: the data have k = {k} classes")

    def check_scale(self, R: float) -> None:
        """Refuse a comparator radius B whose scores B R leave [1e-100, 1e100] (the learners that declare B): the
        step size sqrt(B^2 / (rho^2 T)), the SVM's lam = sqrt(2 rho^2 / (B^2 m)) and the bounds B rho / sqrt(T)
        are then finite, normal doubles (without it B = 1e-300 divided by zero, B = 1e300 overflowed the risks)."""
        B = getattr(self, "B", None)
        if B is not None and not in_scale(float(B) * R):
            raise ParamError("B", B, f"a number with B R in [1e-100, 1e100] (R = {R:.3g}, the data's radius): the scores "
                             "B R of the comparator class must stay finite, normal doubles")


class MulticlassSGD(_Multiclass):
    """SGD on the generalized hinge loss, exactly as in [S3] (UML section 17.2.5).

    w^(1) = 0; for t = 1..T draw a fresh (x, y) ~ D, yhat in argmax_y' (Delta(y', y) + <w, Psi(x, y') -
    Psi(x, y)>), w^(t+1) = w^(t) - eta (Psi(x, yhat) - Psi(x, y)); output w_bar = (1/T) sum_(t<=T) w^(t).
    eta = sqrt(B^2 / (rho^2 T)) with the literal rho = 2R (||Psi|| <= rho/2).

    Guarantees: UML Lemma 14.1 per run (D): for ||u|| <= B, sum_t [l(w_t, z_t) - l(u, z_t)] <=
    ||u||^2/(2 eta) + (eta/2) sum ||v_t||^2 <= B rho sqrt(T); Cor. 17.2 (E): E L_D(w_bar) - min_(||u||<=B)
    L_D(u) <= B rho / sqrt(T), also with the sharper rho' = sqrt(2) R (docs/bounds.md section 7). Because eta
    depends on T, a learning curve is a set of runs over T.

    Parameters
    ----------
    B : radius of the comparator class ||u|| <= B.
    T : steps (fresh examples).
    cost : the label cost Delta (:data:`pipeline.risk.COSTS`). Lemma 14.1 and Cor. 17.2 hold for any cost
        (the loss's Lipschitz constant does not depend on it); the realisable comparator needs
        B >= max Delta / gamma (docs/bounds.md section 7).

    Examples
    --------
    >>> from pipeline.data.multiclass import MulticlassMargin
    >>> ds = MulticlassMargin(k=3, gamma=0.1, rho=1.0, d=5, n=200, n_test=2000).generate(np.random.default_rng(0))
    >>> from pipeline.job.statistics import measure  # the run, with the comparator's statistics its bounds read
    >>> out = measure(MulticlassSGD(B=10.0, T=2000), ds, np.random.default_rng(1))
    >>> s = out.stats
    >>> out.quantities["regret"] <= s["u_norm2"] / (2 * s["eta"]) + s["eta"] / 2 * s["vnorm2_sum"]  # Lemma 14.1
    True
    """

    name = "multiclass_sgd"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    B: float
    T: int
    cost: str | CostMatrix
    params = (
        Param("B", float, IN_SCALE),
        T_STEPS,
        COST_PARAM,
    )

    def run_bytes(self, n: int | None, d: int | None, k: int | None) -> dict[str, tuple[object, float]]:
        """Besides the per-step arrays: the T fresh examples drawn at once (T x d, with the sampler's copies)."""
        terms = super().run_bytes(n, d, k)
        T = int(self.T)
        terms["T"] = (self.T, terms["T"][1] + 8.0 * 3 * T * (d or 0))
        return terms

    def step_size(self, R: float) -> float:
        """eta = sqrt(B^2 / (rho^2 T)) with rho = 2R ([S3]); 0 when every x is 0 (no step moves W)."""
        B, T = float(self.B), int(self.T)
        rho = 2.0 * R
        return math.sqrt(B * B / (rho * rho * T)) if rho > 0 else 0.0

    def run(self, dataset: MulticlassSample, rng: np.random.Generator) -> Outcome:
        """The run on T fresh draws, and what it did: per-step losses and ||v_t||^2, the snapshots' averages.
        Their held-out risks, the comparator U (min over the ball), the regret against it and the excess
        come from :mod:`pipeline.job.statistics` (:class:`~pipeline.contract.MulticlassSgdRun`)."""
        B, T, k = float(self.B), int(self.T), int(dataset.k)
        R = float(dataset.stats.R)
        rho = 2.0 * R
        eta = self.step_size(R)
        X, y = dataset.draw(T, rng)
        W, grid, avg, loss, vnorm2, wrong = _steps(X, y, np.arange(T), k, eta, 0.0, cost=self.cost)
        self.W_, self.W_bar_ = W, avg[-1]
        return Outcome(
            quantities={},  # the held-out risk_01 and its interval: pipeline.job.statistics
            curves={},
            trace={"loss": loss, "vnorm2": vnorm2, "mistake": wrong},
            steps={"vnorm2_sum": np.cumsum(vnorm2)},
            stats={"T": T, "B": B, "R": R, "rho": rho, "rho_sharp": math.sqrt(2.0) * R, "eta": eta,
                   "vnorm2_sum": float(vnorm2.sum()), "k": k, "population": dataset.population,
                   **cost_stats(self.cost, k)},
            run=MulticlassSgdRun(X=X, y=y, B=B, eta=eta, loss=loss, vnorm2=vnorm2, grid=grid, avg=avg, cost=self.cost),
        )


class MulticlassSVM(_Multiclass):
    """The multiclass SVM as regularised loss minimisation (UML Cor. 17.1, [S3]): W minimises
    lam ||W||^2 + (1/m) sum_i l^(g-hinge)(W; x_i, y_i) (no 1/2) with lam = sqrt(2 rho^2 / (B^2 m)), solved
    with a certified duality gap. Guarantee (E): E L_D(W) <= min_(||u||<=B) L_D(u) + sqrt(8 rho^2 B^2 / m).

    The guarantee is about data the SVM did not train on (docs/bounds.md section 7, Cor. 17.1): on its own
    training set RLM optimality alone keeps the excess below lam B^2, half the bound. On a finite
    population S (``population == "S"``: dataset=multiclass_bundled with ``sample``) the training sample
    is m i.i.d. draws from S, L_D = L_S is measured exactly on the whole of S, and the comparator's lower
    value is the certified min over the ball of L_S, on S too: the bound then applies exactly. A bundled set
    without a training sample is refused (:meth:`check_with`, :meth:`check_data`).

    Parameters
    ----------
    B : radius of the comparator class.
    cost : the label cost Delta (:data:`pipeline.risk.COSTS`); Cor. 17.1 holds for any cost (docs/bounds.md
        section 7), the solver is the Crammer-Singer dual with the costs as its linear term.
    """

    name = "multiclass_svm"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    B: float
    cost: str | CostMatrix
    params = (Param("B", float, IN_SCALE), COST_PARAM)
    NEEDS_SAMPLE = ("algorithm=multiclass_svm on dataset=multiclass_bundled needs dataset.sample=M (training examples "
                    "drawn from the set; the risk is then measured on the whole set as the population)")

    def check_with(self, dataset: Source) -> None:
        """Before any data exist: a bundled set needs a training sample drawn from it."""
        if dataset.name == "multiclass_bundled" and dataset.get_params().get("sample") is None:  # declared, unset
            raise UserError(self.NEEDS_SAMPLE)
        super().check_with(dataset)

    def check_data(self, dataset: MulticlassSample) -> None:
        """Refuse a finite population S that is also the training sample (the risk would be measured on the
        training set, where the bound holds by construction)."""
        super().check_data(dataset)
        if dataset.population == "S" and dataset.X is dataset.X_test:
            if dataset.name == "multiclass_bundled":
                raise UserError(self.NEEDS_SAMPLE)
            raise UserError(f"algorithm=multiclass_svm on dataset={dataset.name}: the file is the whole population, so the "
                            "SVM would be judged on its own training set; use dataset=multiclass_bundled with dataset.sample=M "
                            "or dataset=multiclass_margin")

    def run(self, dataset: MulticlassSample, rng: np.random.Generator) -> Outcome:
        # the multiclass SVM's training is the certified solve itself (regularised loss minimisation): the one
        # learner that runs a solver of pipeline.solvers (tests/test_layers.py lists it, with this reason)
        from pipeline.solvers.multiclass import multiclass_svm

        B, k, m = float(self.B), int(dataset.k), int(dataset.y.size)
        R = float(dataset.stats.R)
        rho = 2.0 * R
        lam = math.sqrt(2.0 * rho * rho / (B * B * m))
        cert = multiclass_svm(dataset.X, dataset.y, k, lam, cost=self.cost)
        self.W_ = cert.W
        return Outcome(
            quantities={},  # the held-out risk_01 and its interval: pipeline.job.statistics
            curves={},
            trace={},  # no steps: one certified solve
            stats={"T": m, "B": B, "R": R, "rho": rho, "lam_uml": lam, "svm_primal": cert.primal, "svm_dual": cert.dual,
                   "dual_gap": cert.gap, "k": k, "m": m, "population": dataset.population, **cost_stats(self.cost, k)},
            run=MulticlassSvmRun(B=B, m=m, W=cert.W, cost=self.cost),
        )


class MulticlassPegasos(_Multiclass):
    """Multiclass Pegasos on the Crammer-Singer objective (P11 section 5 Ex. 3; [S4] 2.3; docs/bounds.md section 8):
    f(W) = lam/2 ||W||^2 + (1/m) sum_i l^(g-hinge)(W; x_i, y_i), W_(t+1) = (1 - 1/t) W_t -
    (lam t)^-1 (Psi(x, yhat) - Psi(x, y)) over examples drawn from S. The bounds of section 4 hold with
    c = 4 G^2, G = sqrt(2) R (||Psi(x, y') - Psi(x, y)|| <= sqrt(2) R), so c = 8 R^2; f* is the multiclass
    SVM's (lam_UML = lam / 2), certified by its duality gap.

    Parameters
    ----------
    lam : regularisation (Pegasos convention lam/2 ||W||^2).
    T : steps.
    sampling : "iid", "perm" or "inorder".
    projection : project W onto the Frobenius ball of radius sqrt(max Delta / lam) (1/sqrt(lam) for the 0-1
        cost) after each step. It holds the optimum: by strong duality lam ||W*||^2 = (1/m) sum_i sum_y'
        alpha_(i,y') Delta(y', y_i) - loss(W*) <= max Delta (docs/bounds.md section 8); then
        c = (sqrt(lam max Delta) + sqrt(2) R)^2.
    delta : confidence of the high-probability bound (not applicable when max Delta > 1).
    cost : the label cost Delta (:data:`pipeline.risk.COSTS`).
    """

    name = "multiclass_pegasos"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    lam: float
    T: int
    sampling: str
    projection: bool
    delta: float
    cost: str | CostMatrix
    intercept: bool
    params = (
        LAM,
        T_STEPS,
        Param("sampling", str, one_of("iid", "perm", "inorder"), default="iid"),
        PROJECTION,
        DELTA,
        COST_PARAM,
        INTERCEPT,
    )

    def stream(self, m: int, rng: np.random.Generator) -> np.ndarray:
        """The T example indices of a run on m examples, drawn from ``rng`` by :func:`pipeline.learners.pegasos.index_stream`."""
        from pipeline.learners.pegasos import index_stream

        return index_stream(self.sampling, np.ones(m), int(self.T), 1, rng)[:, 0]

    def ball(self, k: int) -> float:
        """The projection's radius sqrt(max Delta) / sqrt(lam) (0: no projection); for the 0-1 cost
        sqrt(1.0) = 1.0, the bits of 1/sqrt(lam)."""
        return math.sqrt(cost_stats(self.cost, k)["cost_max"]) / math.sqrt(float(self.lam)) if self.projection else 0.0

    def run(self, dataset: MulticlassSample, rng: np.random.Generator) -> Outcome:
        """The run, and what it did: the per-step losses, the index stream, the snapshots' averages. The
        held-out risks of the last average, f* (the multiclass SVM's certified optimum), the regret and c
        come from :mod:`pipeline.job.statistics` (:class:`~pipeline.contract.CrammerSingerRun`)."""
        lam, T, k = float(self.lam), int(self.T), int(dataset.k)
        X, y = dataset.X, dataset.y
        idx = self.stream(y.size, rng)
        constants = cost_stats(self.cost, k)
        radius = self.ball(k)
        if self.intercept:
            return self._run_biased(dataset, idx, radius, constants)
        W, grid, avg, loss, vnorm2, wrong = _steps(X, y, idx, k, 0.0, lam, radius=radius, cost=self.cost)
        self.W_, self.W_bar_ = W, avg[-1]
        R = float(dataset.stats.R)
        return Outcome(
            quantities={},
            curves={},
            trace={"loss": loss, "mistake": wrong},
            stats={"T": T, "lam": lam, "R": R, "sampling": self.sampling, "delta": float(self.delta), "k": k,
                   **constants},
            run=CrammerSingerRun(X=X, y=y, k=k, lam=lam, idx=idx, grid=grid, avg=avg, W=W, loss=loss,
                                 feature_radius=math.sqrt(2.0) * R, projection=bool(self.projection), s_max=1.0,
                                 radius=radius, cost=self.cost),
        )

    def _run_biased(self, dataset: MulticlassSample, idx: np.ndarray, radius: float, constants: dict[str, float]) -> Outcome:
        """The run with unregularised biases b (:func:`multiclass_bias_kernel`): its averages, whose held-out
        risks :mod:`pipeline.job.statistics` computes (:class:`~pipeline.contract.MulticlassBiasRun`);
        ``not_covered`` says why no bound is judged (P11 section 6)."""
        from pipeline.risk import cost_matrix

        lam, T, k = float(self.lam), int(self.T), int(dataset.k)
        X = np.ascontiguousarray(dataset.X, dtype=np.float64)
        y = np.ascontiguousarray(dataset.y, dtype=np.int64)
        d = X.shape[1]
        W, b, Wbar, bbar = np.zeros((k, d)), np.zeros(k), np.zeros((k, d)), np.zeros(k)
        loss, wrong = np.empty(T), np.empty(T, dtype=np.int8)
        multiclass_bias_kernel(X=X, y=y, idx=idx, W=W, b=b, Wbar=Wbar, bbar=bbar, lam=lam, radius=radius,
                               cost=np.ascontiguousarray(cost_matrix(self.cost, k)), loss=loss, wrong=wrong)
        self.W_, self.W_bar_, self.b_, self.b_bar_ = W, Wbar, b, bbar
        R = float(dataset.stats.R)
        return Outcome(
            quantities={},
            curves={},
            trace={"loss": loss, "mistake": wrong},
            stats={"T": T, "lam": lam, "R": R, "sampling": self.sampling, "delta": float(self.delta), "k": k,
                   **constants, "not_covered": NO_BOUND_WITH_BIASES},
            run=MulticlassBiasRun(W_bar=Wbar, b_bar=bbar, cost=self.cost),
        )


NO_BOUND_WITH_BIASES = ("algorithm.intercept=true: unregularised biases b leave the Crammer-Singer objective not strongly "
                        "convex in b, so Lemma 1 and the rates built on it do not hold (P11 section 6); the notes give no "
                        "bound for the biased form")


class OneVsAll(_Multiclass):
    """One-vs-all ([S4] 2.3; docs/bounds.md section 8): k binary Pegasos models, class j against the rest, each on the
    class-weighted objective with class-balanced sampling (every subproblem is 1 : (k-1) imbalanced,
    docs/bounds.md section 6); predict argmax_j w_j.x. Only the per-subproblem bounds of section 4 apply: one row per
    class and bound, the class in the ``comparator`` column.

    Parameters
    ----------
    lam, T : of each binary Pegasos run.
    intercept : give each binary model an unregularised bias b_j ([S4] 2.3's (w_k, b_k); Pegasos with ``bias``):
        predict argmax_j w_j.x + b_j. No bound of the notes covers it, so each part's bounds are reported
        not applicable with the reason.
    """

    name = "ova"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    lam: float
    T: int
    intercept: bool
    params = (
        LAM,
        T_STEPS,
        INTERCEPT,
    )

    def check_data(self, dataset: MulticlassSample) -> None:
        super().check_data(dataset)
        for j in range(dataset.k):
            if not np.any(dataset.y == j):
                raise UserError(f"algorithm=ova: class {j} has no training example (n = {dataset.y.size})")

    def run(self, dataset: MulticlassSample, rng: np.random.Generator) -> Outcome:
        from pipeline.data.certify import Stats
        from pipeline.data.dataset import Dataset
        from pipeline.learners.pegasos import Pegasos

        k = int(dataset.k)
        R = float(dataset.stats.R)
        stats = Stats(m=int(dataset.y.size), d=int(dataset.X.shape[1]), R=R, gamma_lo=math.nan, gamma_hi=math.nan,
                      separable=False, gap=math.nan)
        W, b = np.zeros((k, dataset.X.shape[1])), np.zeros(k)
        per_class, traces = {}, {}
        for j, child in enumerate(rng.spawn(k)):
            binary = Dataset(f"{dataset.name} class {j} vs rest", dataset.X, np.where(dataset.y == j, 1.0, -1.0), stats)
            learner = Pegasos(lam=self.lam, T=self.T, objective="balanced", sampling="class_balanced", intercept=self.intercept)
            out = learner.run(binary, child)
            W[j] = learner.w_bar_
            b[j] = learner.b_bar_ if self.intercept else 0.0
            per_class[j] = out
            traces[f"active_{j}"] = out.trace["active"]
        self.W_, self.b_ = W, b
        return Outcome(
            quantities={},
            parts={f"class {j}": out for j, out in per_class.items()},
            curves={},
            trace=traces,
            stats={"T": int(self.T), "k": k, "R": R, "lam": float(self.lam)},  # the held-out risk: pipeline.job.statistics
            # with intercepts no constant c is read: the votes only, for their held-out risk
            run=OneVsAllVotes(W=W, b=b) if self.intercept else OneVsAllRun(W=W),
        )
