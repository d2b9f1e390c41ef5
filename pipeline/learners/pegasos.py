"""Pegasos (Shalev-Shwartz, Singer, Srebro & Cotter, Math. Program. 127(1), 2011 [P11]), linear, with
the seeds' variants: mini-batches (P11 Fig. 2), projection, random-permutation and in-order epochs ([S4]
Alg. 1), the class-weighted and class-balanced imbalanced forms and transfer towards w_r ([S4] 2.1-2.2).
docs/bounds.md sections 4 and 6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from pipeline._jit import dot, dot_row, helper, kernel
from pipeline.data.dataset import Sample, Source
from pipeline.contract import SvmRun
from pipeline.learners.base import Learner, Outcome, log_grid
from pipeline.learners.base import planned_shape
from pipeline.numerics import margins_kernel
from pipeline.params import (BATCH, DELTA, INTERCEPT, LAM, PROJECTION, STATE_LIMIT, T_STEPS, Param, ParamError,
                             UserError, check_sizes, one_of)

SAMPLINGS = {
    "iid": "i.i.d. with replacement (P11 Fig. 1-2; the expectation bounds need this)",
    "perm": "a fresh random permutation every epoch",
    "inorder": "the sample's order, epoch after epoch, t never reset ([S4] Alg. 1)",
    "class_balanced": "a class with probability 1/2, then an example of it uniformly ([S4] 2.1, update B)",
}
OBJECTIVES = {
    "hinge": "lam/2 ||w||^2 + mean hinge (P11 eq. 1)",
    "balanced": "lam/2 ||w||^2 + (1/m) sum s_j hinge_j, s_j = m / (2 m_(y_j)) ([S4] 2.1)",
    "transfer": "lam/2 ||w - w_r||^2 + mean hinge ([S4] 2.2)",
}
SNAPSHOTS = 40  # points of the suboptimality curves (each costs one pass over the sample)
RESTART = 2.0**-8  # pegasos_kernel restarts its scale once a projection has shrunk it by this factor
MAX_DENSE = 50_000_000  # sparse input is densified up to this many entries (400 MB)


def index_stream(sampling: str, y: np.ndarray, T: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """The (T, k) indices A_1..A_T a Pegasos run visits. i.i.d. batches are multisets (docs/bounds.md section 4:
    covered by the analysis); epochs cut a permutation (or the sample order) into consecutive batches."""
    m = y.shape[0]
    if sampling == "iid":
        return rng.integers(0, m, size=(T, k))
    if sampling == "inorder":  # arange(T k) mod m, without an integer division per index
        n = T * k
        if n <= m:
            return np.arange(n, dtype=np.int64).reshape(T, k)
        return np.resize(np.arange(m, dtype=np.int64), n).reshape(T, k) if m > 0 else np.zeros((T, k), dtype=np.int64)
    if sampling == "perm":
        epochs = -(-T * k // m)
        return np.concatenate([rng.permutation(m) for _ in range(epochs)])[: T * k].reshape(T, k)
    if sampling == "class_balanced":
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        positive = rng.random((T, k)) < 0.5
        within = rng.random((T, k))
        return np.where(positive, pos[(within * pos.size).astype(np.int64)], neg[(within * neg.size).astype(np.int64)])
    raise ValueError(f"unknown sampling {sampling!r}")


@helper
def batch_hinge(X: np.ndarray, y: np.ndarray, ref_margin: np.ndarray, s: np.ndarray, idx: np.ndarray, r: int, a: float,
                v: np.ndarray, buf: np.ndarray) -> tuple[float, int]:
    """Step r's batch (the rows idx[r]) at w = w_r + a v: the weighted hinge losses' sum and the count of the
    examples of margin < 1 (A+), whose s y x are added to ``buf``, in the batch's order."""
    d = X.shape[1]
    hinge = 0.0
    n_active = 0
    for b in range(idx.shape[1]):
        i = idx[r, b]
        p = dot_row(v, X, i)
        margin = ref_margin[i] + y[i] * a * p
        if margin < 1.0:
            hinge += s[i] * (1.0 - margin)
            n_active += 1
            sy = s[i] * y[i]
            for j in range(d):
                buf[j] += sy * X[i, j]
    return hinge, n_active


@helper
def project_scaled(v: np.ndarray, a: float, vv: float, A: float, q: float, t: int,
                   radius: float) -> tuple[float, float, float, float]:
    """u = a v projected onto ||u|| <= radius by its scale a, restarting the representation (v <- a v, a <- 1,
    A <- 0, q <- t) once a t falls below RESTART q: the new (a, ||v||^2, A, q)."""
    norm2 = a * a * vv
    if norm2 > radius * radius:
        a *= radius / math.sqrt(norm2)
        if a * t < RESTART * q:
            for j in range(v.shape[0]):
                v[j] *= a
            vv = dot(v, v)
            A = 0.0
            a = 1.0
            q = float(t)
    return a, vv, A, q


@helper
def scaled_row_update(X: np.ndarray, i: int, sy: float, c: float, Ac: float, v: np.ndarray,
                      z: np.ndarray) -> tuple[float, float]:
    """b = sy x_i: v += c b and z += Ac b in one pass over the row, returning (v.b, b.b) with v before its
    update, in the accumulators and order of :func:`pipeline._jit.dot`."""
    d = X.shape[1]
    quads = d >> 2
    vb0 = 0.0
    vb1 = 0.0
    vb2 = 0.0
    vb3 = 0.0
    bb0 = 0.0
    bb1 = 0.0
    bb2 = 0.0
    bb3 = 0.0
    for q in range(quads):
        j = 4 * q
        b0 = sy * X[i, j]
        b1 = sy * X[i, j + 1]
        b2 = sy * X[i, j + 2]
        b3 = sy * X[i, j + 3]
        vb0 += v[j] * b0
        vb1 += v[j + 1] * b1
        vb2 += v[j + 2] * b2
        vb3 += v[j + 3] * b3
        bb0 += b0 * b0
        bb1 += b1 * b1
        bb2 += b2 * b2
        bb3 += b3 * b3
        v[j] += c * b0
        v[j + 1] += c * b1
        v[j + 2] += c * b2
        v[j + 3] += c * b3
        z[j] += Ac * b0
        z[j + 1] += Ac * b1
        z[j + 2] += Ac * b2
        z[j + 3] += Ac * b3
    for j in range(4 * quads, d):
        b0 = sy * X[i, j]
        vb0 += v[j] * b0
        bb0 += b0 * b0
        v[j] += c * b0
        z[j] += Ac * b0
    return (vb0 + vb1) + (vb2 + vb3), (bb0 + bb1) + (bb2 + bb3)


@helper
def running_average_into(avg: np.ndarray, g: int, A: float, v: np.ndarray, z: np.ndarray, t: int) -> None:
    """Snapshot g of the running average (1/t) sum_(s<=t) u_s = (A_t v - z) / t, without projection."""
    for j in range(v.shape[0]):
        avg[g, j] = (A * v[j] - z[j]) / t


@kernel
def pegasos_kernel(X: np.ndarray, y: np.ndarray, ref_margin: np.ndarray, s: np.ndarray, idx: np.ndarray,
                   lam: float, radius: float, t0: int, grid: np.ndarray, state: np.ndarray, v: np.ndarray, z: np.ndarray,
                   buf: np.ndarray, loss: np.ndarray, active: np.ndarray, avg: np.ndarray, last: np.ndarray,
                   grad2: np.ndarray) -> int:
    """Steps t0+1 .. t0+len(idx) of Pegasos on u = w - w_r, with w_t = a v (P11 Fig. 1-2; [S4] 2.1-2.2).

    Each step: f_t(w_t) = lam/2 ||u_t||^2 + (1/k) sum_(i in A_t) s_i max(0, 1 - y_i w_t.x_i) goes to
    ``loss``, and the squared norm of its sub-gradient grad_t = lam u_t - (1/k) sum_(A+) s_i y_i x_i to ``grad2``
    (lam^2 a^2 ||v||^2 - 2 lam a v.buf / k + ||buf||^2 / k^2, from the products the update needs anyway); with A+
    the examples of margin < 1 (strict), u <- (1 - 1/t) u + (1/(lam t k)) sum_(A+) s_i y_i x_i;
    then the projection onto ||u|| <= radius if radius > 0. The shrink is the scale a (O(1) per step):
    without projection a = 1/t exactly, so v = (1/(lam k)) sum s y x is a plain sum.
    ``state`` = [a, ||v||^2, A_t = sum_(s<=t) a_s, q]. Without projection z = sum_r A_r delta_r, so that
    sum_(s<=t) u_s = A_t v_t - z_(t-1) (the running average without an O(d) step). With projection z is the
    plain running sum sum_(s<=t) u_s, one O(d) step each: the representation's increments (A c buf) scale with
    the unprojected step ||x|| / lam, far above the ball's radius on long rows, and A v - z lost the average to
    cancellation there (an average of norm 1e34 from iterates of norm 3.2, rows of norm 1e50: caught by its
    range, docs/bounds.md section 4). At the steps listed in ``grid`` the average (1/t) sum_(s<=t) u_s goes to
    ``avg`` and u_(t+1) to ``last``.

    Without projection a t stays 1 (a = 1/t). With it, a t shrinks by the projections' factors; once it falls
    below 2^-8 q (q: its value at the last restart, 1 at the start) the representation restarts: the scale
    moves into v (v <- a v, a <- 1, q <- t). Without that, a underflowed within a few hundred steps on long
    rows (||v||^2 overflowing).
    """
    T, k = idx.shape
    d = X.shape[1]
    a, vv, A, q = state[0], state[1], state[2], state[3]
    g = 0
    while g < grid.shape[0] and grid[g] <= t0:
        g += 1
    for r in range(T):
        t = t0 + r + 1
        hinge, n_active = batch_hinge(X, y, ref_margin, s, idx, r, a, v, buf)
        loss[r] = 0.5 * lam * a * a * vv + hinge / k
        active[r] = n_active
        A += a
        if radius > 0.0:  # z is the plain running sum of the iterates (their scale is the ball's, no cancellation)
            for j in range(d):
                z[j] += a * v[j]
        snap = g < grid.shape[0] and grid[g] == t
        if snap:
            for j in range(d):
                avg[g, j] = (z[j] / t) if radius > 0.0 else (A * v[j] - z[j]) / t
        if radius > 0.0:
            new_a = a * (1.0 - 1.0 / t) if t > 1 else a  # u_1 = 0: nothing to shrink
        else:
            new_a = 1.0 / t
        if n_active > 0:
            c = 1.0 / (lam * t * k * new_a)
            vb = dot(v, buf)
            bb = dot(buf, buf)
            grad2[r] = lam * lam * a * a * vv - 2.0 * lam * a * vb / k + bb / (k * k)
            vv += 2.0 * c * vb + c * c * bb
            Ac = A * c if radius == 0.0 else 0.0
            for j in range(d):
                v[j] += c * buf[j]
                z[j] += Ac * buf[j]
                buf[j] = 0.0
        else:
            grad2[r] = lam * lam * a * a * vv
        a = new_a
        if radius > 0.0:
            a, vv, A, q = project_scaled(v, a, vv, A, q, t, radius)
        if snap:
            for j in range(d):
                last[g, j] = a * v[j]
            g += 1
    state[0], state[1], state[2], state[3] = a, vv, A, q
    return 0


@kernel
def pegasos_single_kernel(X: np.ndarray, y: np.ndarray, ref_margin: np.ndarray | None, s: np.ndarray | None, idx: np.ndarray,
                          lam: float, radius: float, t0: int, grid: np.ndarray, state: np.ndarray, v: np.ndarray, z: np.ndarray,
                          buf: np.ndarray, loss: np.ndarray, active: np.ndarray, avg: np.ndarray, last: np.ndarray,
                          grad2: np.ndarray) -> int:
    """:func:`pegasos_kernel` for k = 1 without projection (``radius`` is not read; :meth:`PegasosCore.advance` chooses
    it): the same arithmetic in the same order, so the same bits, with less work per step. 1/k, the batch loop and
    the projection are gone; the snapshot test is one comparison. An active step computes b = s y x, v.b and b.b
    (the accumulators and order of :func:`pipeline._jit.dot`, v before its update) and updates v and z: in one pass
    over the row, or, when s y = +-1 (b = +-x exactly), with v.b = s y p from the margin's own dot product p (the
    same chains, negated exactly, but for the sign of a zero, which grad2 and ||v||^2 ignore), b.b = x.x, and the
    update in a loop of its own that the compiler vectorizes. ``buf`` is not touched: the general kernel's b is 0 +
    s y x, which differs from s y x only in the sign of a zero, and no sum here can turn that sign into a different
    bit (v, z and the accumulators start at +0, and x + (-0) = x, +0 + (-0) = +0). ``s`` may be None (every weight
    1) and ``ref_margin`` None (a zero reference): numba compiles that case without the two reads a step, with the
    same bits (a weight of 1 multiplies exactly; a zero reference changes only the sign of a zero margin, which the
    comparison with 1 and 1 - margin ignore). ``state[3]`` (q, the projection's restart mark) is neither read nor
    written: a = 1/t exactly. ``grad2`` as in the general kernel."""
    T = idx.shape[0]
    d = X.shape[1]
    a, vv, A = state[0], state[1], state[2]
    half_lam = 0.5 * lam
    g = 0
    n_grid = grid.shape[0]
    while g < n_grid and grid[g] <= t0:
        g += 1
    snap_t = grid[g] if g < n_grid else -1  # the next snapshot step (t >= 1 never equals -1)
    for r in range(T):
        t = t0 + r + 1
        i = idx[r, 0]
        p = dot_row(v, X, i)
        if ref_margin is None:  # a zero reference: 0 + x is x but for the sign of a zero, which the margin's uses ignore
            margin = y[i] * a * p
        else:
            margin = ref_margin[i] + y[i] * a * p
        A += a
        new_a = 1.0 / t
        if margin < 1.0:
            if s is None:  # unit weights: 1 x is x
                hinge = 0.0 + (1.0 - margin)
                sy = y[i]
            else:
                hinge = 0.0 + s[i] * (1.0 - margin)
                sy = s[i] * y[i]
            loss[r] = half_lam * a * a * vv + hinge
            active[r] = 1
            if t == snap_t:
                running_average_into(avg, g, A, v, z, t)
            c = 1.0 / (lam * t * new_a)
            Ac = A * c
            if sy == 1.0 or sy == -1.0:
                # b = +-x exactly: v.b = sy p and b.b = x.x (see above); no sum across j in the update
                vb = sy * p
                bb = dot_row(X[i], X, i)
                for j in range(d):
                    b = sy * X[i, j]
                    v[j] += c * b
                    z[j] += Ac * b
            else:
                vb, bb = scaled_row_update(X, i, sy, c, Ac, v, z)
            grad2[r] = lam * lam * a * a * vv - 2.0 * lam * a * vb + bb  # the general kernel's, k = 1 (exact / 1)
            vv += 2.0 * c * vb + c * c * bb
        else:
            loss[r] = half_lam * a * a * vv + 0.0
            active[r] = 0
            grad2[r] = lam * lam * a * a * vv
            if t == snap_t:
                running_average_into(avg, g, A, v, z, t)
        a = new_a
        if t == snap_t:
            for j in range(d):
                last[g, j] = a * v[j]
            g += 1
            snap_t = grid[g] if g < n_grid else -1
    state[0], state[1], state[2] = a, vv, A
    return 0


@dataclass
class PegasosSteps:
    """What a block of T steps of :class:`PegasosCore` records: per step, f_t(w_t) (``loss``), |A+| (``active``)
    and ||grad_t||^2 (``grad2``); at the snapshot steps of the block's grid, the average (``avg``) and the next
    iterate (``last``), one row per grid entry (rows of grid steps outside the block are left as they were)."""

    loss: np.ndarray
    active: np.ndarray
    grad2: np.ndarray
    avg: np.ndarray
    last: np.ndarray

    @classmethod
    def empty(cls, T: int, snapshots: int, d: int) -> PegasosSteps:
        """Fresh (uninitialised) arrays for T steps and ``snapshots`` grid entries in dimension d."""
        return cls(np.empty(T), np.empty(T, dtype=np.int32), np.empty(T), np.empty((snapshots, d)), np.empty((snapshots, d)))


@dataclass
class PegasosCore:
    """Linear Pegasos' training state, and the one way to advance it (docs/bounds.md section 4): what
    :meth:`Pegasos.run`, the scikit-learn adapter (:mod:`pipeline.estimators`, ``fit`` and ``partial_fit``)
    and the benchmark all run.

    u_t = w_t - w_r = a v (``scalars`` = [a, ||v||^2, A_t, q] and the vectors v, z of :func:`pegasos_kernel`;
    ``buf`` its zeroed work row), after ``t`` steps, for the objective's ``lam`` and the projection's
    ``radius`` (0: none). :meth:`advance` runs steps t+1 .. t+len(idx) and continues exactly: advancing
    over idx[:n] and then idx[n:] gives the bits of one advance over idx (tests/test_pegasos.py).
    """

    lam: float
    radius: float
    v: np.ndarray
    z: np.ndarray
    buf: np.ndarray
    scalars: np.ndarray
    t: int = 0

    @classmethod
    def start(cls, d: int, lam: float, radius: float = 0.0) -> PegasosCore:
        """u_1 = 0 (a = 1, q = 1: the kernel's starting state)."""
        return cls(float(lam), float(radius), np.zeros(d), np.zeros(d), np.zeros(d), np.array([1.0, 0.0, 0.0, 1.0]))

    @property
    def u(self) -> np.ndarray:
        """u_(t+1) = a v, the iterate after the last step (w minus the reference)."""
        u: np.ndarray = self.scalars[0] * self.v
        return u

    def advance(self, X: np.ndarray, y: np.ndarray, idx: np.ndarray, grid: np.ndarray, s: np.ndarray | None,
                ref_margin: np.ndarray | None, out: PegasosSteps | None = None) -> PegasosSteps:
        """Steps t+1 .. t+T over the (T, k) batches ``idx`` of (X, y) (C-contiguous float64), with per-example
        weights ``s`` (None: every weight 1) and margins of the reference ``ref_margin`` = y w_r.x (None: no
        reference); the snapshots at the steps of ``grid`` (ascending). The kernel is chosen here: batch 1
        without projection, the common case, runs :func:`pegasos_single_kernel` (the bits of
        :func:`pegasos_kernel`, tests/test_pegasos.py), anything else the general kernel. ``out`` (for len(idx)
        steps and grid.size snapshots): arrays to write into (the benchmark's, allocated beforehand); fresh ones
        otherwise."""
        T, m = idx.shape[0], y.shape[0]
        if out is None:
            out = PegasosSteps.empty(T, grid.shape[0], X.shape[1])
        step: kernel[..., int]  # the two kernels' signatures differ in what may be None
        if idx.shape[1] == 1 and not self.radius > 0.0:
            step = cast("kernel[..., int]", pegasos_single_kernel)  # reads s and ref_margin only where not None
        else:  # the general kernel reads both arrays
            step = pegasos_kernel
            s = np.ones(m) if s is None else s
            ref_margin = np.zeros(m) if ref_margin is None else ref_margin
        step(X=X, y=y, ref_margin=ref_margin, s=s, idx=idx, lam=self.lam, radius=self.radius, t0=self.t, grid=grid,
             state=self.scalars, v=self.v, z=self.z, buf=self.buf, loss=out.loss, active=out.active, avg=out.avg,
             last=out.last, grad2=out.grad2)
        self.t += T
        return out


@kernel
def pegasos_bias_kernel(X: np.ndarray, y: np.ndarray, ref_margin: np.ndarray, s: np.ndarray, idx: np.ndarray, lam: float,
                        radius: float, u: np.ndarray, ubar: np.ndarray, bias: np.ndarray, loss: np.ndarray,
                        active: np.ndarray) -> int:
    """Pegasos with an unregularised bias b (P11 section 6; [S4] 2.2-2.3's b): the margin is
    y (w.x + b) with w = w_r + u, and with A+ the examples of margin < 1 (strict),
    u <- (1 - 1/t) u + (1/(lam t k)) sum_(A+) s_i y_i x_i, b <- b + (1/(lam t k)) sum_(A+) s_i y_i (b is not
    shrunk: it is not regularised), then u is projected onto ||u|| <= radius if radius > 0 (b is free).
    ``loss`` gets f_t = lam/2 ||u_t||^2 + (1/k) sum_(A_t) s_i hinge_i at (u_t, b_t). Plain O(d) steps: no
    bound speaks of this rule, so it needs neither snapshots nor the scaled state of :func:`pegasos_kernel`.
    ``ubar`` gets (1/T) sum_t u_t and ``bias`` = [b_(T+1), (1/T) sum_t b_t].
    """
    T, k = idx.shape
    d = X.shape[1]
    b = 0.0
    bsum = 0.0
    g = np.zeros(d)
    for r in range(T):
        t = r + 1
        uu = 0.0
        for j in range(d):
            ubar[j] += u[j]
            uu += u[j] * u[j]
        bsum += b
        hinge = 0.0
        gb = 0.0
        n_active = 0
        for q in range(k):
            i = idx[r, q]
            p = 0.0
            for j in range(d):
                p += u[j] * X[i, j]
            margin = ref_margin[i] + y[i] * (p + b)
            if margin < 1.0:
                hinge += s[i] * (1.0 - margin)
                n_active += 1
                sy = s[i] * y[i]
                gb += sy
                for j in range(d):
                    g[j] += sy * X[i, j]
        loss[r] = 0.5 * lam * uu + hinge / k
        active[r] = n_active
        eta = 1.0 / (lam * t * k)
        shrink = 1.0 - 1.0 / t
        norm2 = 0.0
        for j in range(d):
            u[j] = shrink * u[j] + eta * g[j]
            g[j] = 0.0
            norm2 += u[j] * u[j]
        b += eta * gb
        if radius > 0.0 and norm2 > radius * radius:
            scale = radius / math.sqrt(norm2)
            for j in range(d):
                u[j] *= scale
    for j in range(d):
        ubar[j] /= T
    bias[0] = b
    bias[1] = bsum / T
    return 0


NO_BOUND_WITH_BIAS = ("algorithm.intercept=true: an unregularised bias b leaves f(w, b) not strongly convex in b, "
                      "so Lemma 1 and the rates built on it do not hold (P11 section 6: only O(1/sqrt(T))); the notes "
                      "give no bound for the biased form")


def class_weights(y: np.ndarray) -> np.ndarray:
    """s_j = m / (2 m_(y_j)) ([S4] 2.1 divided by C m): mean 1, s+/s- = m-/m+."""
    m_pos = int((y > 0).sum())
    m_neg = y.shape[0] - m_pos
    if m_pos == 0 or m_neg == 0:
        raise UserError(f"algorithm.objective=balanced: the sample has only one class ({m_pos} positive, {m_neg} negative)")
    weights: np.ndarray = np.where(y > 0, y.shape[0] / (2.0 * m_pos), y.shape[0] / (2.0 * m_neg))
    return weights


class Pegasos(Learner):
    """Pegasos: primal estimated sub-gradient solver for the SVM objective (P11; [S1]; [S4] Alg. 1).

    w_1 = 0 (w_r for transfer); at step t draw A_t (k examples), eta_t = 1/(lam t), and with
    A+ = {i in A_t : y_i w_t.x_i < 1}: w_(t+1) = (1 - eta_t lam) w_t + (eta_t / k) sum_(A+) y_i x_i,
    optionally projected onto the ball of radius 1/sqrt(lam) (docs/bounds.md section 4). The output is the average
    w_bar = (1/T) sum_(t<=T) w_t (w_1 included) and the last iterate w_(T+1) (no guarantee).

    Guarantees (docs/bounds.md section 4): Lemma 1 of P11 for every run and every sampling scheme (D); with
    sampling with replacement, E f(w_bar) - f* <= c (1 + ln T) / (2 lam T) (E, P11 Cor. 1; UML 14.11) and
    a high-probability version (P, P11 Lemma 2 / Cor. 2), where c = 4 R^2 (no projection) or
    (sqrt(lam) + R)^2 (projection), scaled by the class weights for the weighted update.

    Parameters
    ----------
    lam : regularisation lambda > 0 (convention lam/2 ||w||^2; lam = 1/(C m) in the C-form).
    T : steps.
    batch : examples per step k (1 <= k <= m).
    sampling : "iid", "perm", "inorder" or "class_balanced" (see ``SAMPLINGS``).
    projection : project onto the ball that holds the optimum.
    objective : "hinge", "balanced" (class-weighted; with sampling=class_balanced the update is the
        unweighted one of [S4] 2.1 B, otherwise the weighted update A) or "transfer" (towards w_r).
    intercept : an unregularised bias b (intercept), y (w.x + b), updated by b <- b + (1/(lam t k)) sum_(A+) s_i y_i and never
        shrunk (P11 section 6; [S4]'s b_d of transfer and b_k of one-vs-all). No bound of the notes covers it:
        every bound is reported not applicable with the reason (``NO_BOUND_WITH_BIAS``); the run reports
        the objective of its average (w_bar, b_bar) and its training error instead.
    ref_noise, ref_scale : transfer reference w_r = ref_scale * unit(w* + ref_noise * xi), xi ~ N(0, I/d)
        from the algorithm's stream, w* the dataset's known direction.
    delta : confidence of the high-probability bound.

    Examples
    --------
    >>> from pipeline.data import MarginBinary
    >>> ds = MarginBinary(gamma=0.1, rho=1.0, n=500, d=5, flip=0.1).generate(np.random.default_rng(0))
    >>> out = Pegasos(lam=0.01, T=2000).run(ds, np.random.default_rng(1))
    >>> int(out.trace["active"].sum())
    998

    The regret against the certified optimum and the constant c are statistics, not part of the run:

    >>> from pipeline.job.statistics import measure
    >>> out = measure(Pegasos(lam=0.01, T=2000), ds, np.random.default_rng(1))
    >>> out.quantities["regret"] <= out.stats["c"] * (1 + math.log(2000)) / (2 * 0.01 * 2000)
    True
    """

    name = "pegasos"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    lam: float
    T: int
    batch: int
    sampling: str
    projection: bool
    objective: str
    intercept: bool
    ref_noise: float
    ref_scale: float
    delta: float
    params = (
        LAM,
        T_STEPS,
        BATCH,
        Param("sampling", str, one_of(*SAMPLINGS), default="iid"),
        PROJECTION,
        Param("objective", str, lambda v: v in OBJECTIVES, f"one of {', '.join(OBJECTIVES)}", default="hinge"),
        INTERCEPT,
        Param("ref_noise", float, lambda v: v >= 0, "a number >= 0", default=0.5),
        Param("ref_scale", float, lambda v: v >= 0, "a number >= 0", default=1.0),
        DELTA,
    )

    def check(self) -> None:
        super().check()
        if self.sampling == "class_balanced" and self.objective != "balanced":
            raise ParamError("sampling", self.sampling, "used with objective=balanced (class-balanced sampling "
                             "optimises the class-weighted objective)")

    def check_with(self, dataset: Source) -> None:
        """Checks against the dataset's configuration, before any data exist."""
        n = getattr(dataset, "n", None)
        if isinstance(n, int) and self.batch > n:
            raise ParamError("batch", self.batch, f"at most the sample size n = {n}")
        rho = getattr(dataset, "rho", None)
        if isinstance(rho, (int, float)):  # generated data: R <= rho (1 + rounding), known before they exist
            self.check_scale(float(rho) * (1.0 + 1e-12))
        self.check_memory(*planned_shape(dataset))

    def check_memory(self, n: int | None, d: int | None) -> None:
        """Refuse T, batch or a sample whose arrays exceed the available memory: the index stream (T x batch
        int64) and the comparator's losses on it, ~8 per-step float arrays, and the dense sample's copies."""
        T, k = int(self.T), int(self.batch)
        sample = 8.0 * 4 * n * d + 8.0 * 2 * SNAPSHOTS * d if n is not None and d is not None else 0.0
        check_sizes({"T": (self.T, T * (24.0 * k + 64.0)), "batch": (self.batch, 0.0), "n": (n, sample)},
                    "lower T, batch, n or d", "the run")

    def check_scale(self, R: float) -> None:
        """Refuse lam < T (R + 1)^2 / 2^500: below it the state ||v||^2 <= (T R / lam)^2 of the kernel and
        the constant c / (lam T) of the bounds (c <= 4 (R + 1)^2) leave float64's range."""
        need = int(self.T) * (R + 1.0) * (R + 1.0) / STATE_LIMIT
        if not self.lam >= need:
            raise ParamError("lam", self.lam, f"a number >= T (R + 1)^2 / 2^500 = {need:.3g} (T = {self.T}, R = {R:.3g}): "
                             "below it Pegasos's state (T R / lam)^2 overflows float64")

    def check_data(self, dataset: Sample) -> None:
        m, d = dataset.X.shape
        self.check_scale(float(dataset.stats.R))
        self.check_memory(m, d)
        if hasattr(dataset.X, "toarray") and m * d > MAX_DENSE:
            raise UserError(f"algorithm={self.name}: dataset {dataset.name} is sparse with m x d = {m * d:.3g} entries; "
                            f"Pegasos reads dense rows, at most {MAX_DENSE:.0e} entries (use a smaller dataset.d or n)")
        if self.batch > m:
            raise ParamError("algorithm.batch", self.batch, f"at most the sample size m = {m}")
        if self.objective == "transfer" and "w*" not in dataset.directions:
            raise UserError(f"algorithm.objective=transfer: dataset {dataset.name} has no known direction w* to transfer "
                            "from; use dataset=margin_binary or dataset=sparse_margin")
        if self.objective == "balanced":
            class_weights(dataset.y)

    # -- the pieces of the objective --------------------------------------------------------------

    def reference(self, dataset: Sample, rng: np.random.Generator) -> np.ndarray | None:
        """w_r for transfer (drawn first from the algorithm's stream), else None."""
        if self.objective != "transfer":
            return None
        w_star = dataset.directions["w*"]
        w = w_star + self.ref_noise * rng.standard_normal(w_star.shape[0]) / math.sqrt(w_star.shape[0])
        return self.ref_scale * w / np.linalg.norm(w)

    def weights(self, y: np.ndarray) -> np.ndarray | None:
        """The objective's class weights s (None: all 1)."""
        return class_weights(y) if self.objective == "balanced" else None

    # -- the run -----------------------------------------------------------------------------------

    def run(self, dataset: Sample, rng: np.random.Generator) -> Outcome:
        """The run, and what it did: the per-step losses f_t(w_t), the index stream, the average and last
        iterates at the snapshot steps, the objective (:class:`~pipeline.contract.SvmRun`: X, y, lam, weights, w_r, the ball). The
        certified optimum, the regret against it and c come from :mod:`pipeline.job.statistics`."""
        X = dataset.X.toarray() if hasattr(dataset.X, "toarray") else dataset.X
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.ascontiguousarray(dataset.y, dtype=np.float64)
        m, d = X.shape
        lam, T, k = float(self.lam), int(self.T), int(self.batch)
        w_ref = self.reference(dataset, rng)
        weights = self.weights(y)
        idx = index_stream(self.sampling, y, T, k, rng)

        # the per-step objective f_t: weighted unless class-balanced sampling does the weighting
        s_step = weights if weights is not None and self.sampling != "class_balanced" else np.ones(m)
        ref_margin = np.zeros(m) if w_ref is None else margins_kernel(X, y, w_ref)
        radius = 0.0
        if self.projection:  # the ball that holds the optimum, by strong duality (docs/bounds.md section 4 and 6)
            radius = math.sqrt(np.maximum(0.0, 1.0 - ref_margin).mean() / lam) if w_ref is not None else 1.0 / math.sqrt(lam)

        if self.intercept:
            return self._run_biased(X, y, w_ref, weights, s_step, ref_margin, idx, radius)
        grid = log_grid(T, SNAPSHOTS)
        # the random iterate w_r, r uniform in 1..T (P07 Thm 2-3): drawn after everything else, so the run
        # itself is unchanged; w_r = u_r is the kernel's "last" snapshot at step r - 1 (w_1 when r = 1)
        r = int(rng.integers(1, T + 1))
        extra = r > 1 and not np.any(grid == r - 1)
        steps = np.union1d(grid, np.array([r - 1], dtype=grid.dtype)) if extra else grid
        core = PegasosCore.start(d, lam, radius)
        unit = weights is None or self.sampling == "class_balanced"  # s_step is all ones
        done = core.advance(X, y, idx, steps, None if unit else s_step, None if w_ref is None else ref_margin)
        loss, active, grad2, avg, last = done.loss, done.active, done.grad2, done.avg, done.last
        u_r = last[int(np.flatnonzero(steps == r - 1)[0])].copy() if r > 1 else np.zeros(d)
        if extra:  # the snapshots of the grid only
            keep = steps != r - 1
            avg, last = avg[keep], last[keep]
        self.w_ = core.u + (0.0 if w_ref is None else w_ref)
        self.w_bar_ = avg[-1] + (0.0 if w_ref is None else w_ref)
        self.w_random_ = u_r + (0.0 if w_ref is None else w_ref)
        self.t_ = T
        return Outcome(
            quantities={},
            curves={},
            trace={"active": active, "loss": loss},
            stats={"T": T, "lam": lam, "sampling": self.sampling, "batch": int(self.batch), "delta": float(self.delta),
                   "r": r},
            run=SvmRun(X=X, y=y, lam=lam, weights=weights, w_ref=w_ref, s_step=s_step, ref_margin=ref_margin,
                       radius=radius, projection=bool(self.projection), idx=idx, grid=grid, avg=avg, last=last,
                       loss=loss, random=u_r, r=r, grad2=grad2, feature_radius=float(dataset.stats.R),
                       s_max=float(s_step.max())),
        )

    def _run_biased(self, X: np.ndarray, y: np.ndarray, w_ref: np.ndarray | None, weights: np.ndarray | None,
                    s_step: np.ndarray, ref_margin: np.ndarray, idx: np.ndarray, radius: float) -> Outcome:
        """The run with an unregularised bias (:func:`pegasos_bias_kernel`): what it did and what it reaches,
        the (biased) objective of its average and its training error; ``not_covered`` says why no bound is
        judged (:meth:`pipeline.bounds.base.Bound.evaluate`)."""
        m, d = X.shape
        lam, T = float(self.lam), int(self.T)
        u, ubar, bias = np.zeros(d), np.zeros(d), np.zeros(2)
        loss, active = np.empty(T), np.empty(T, dtype=np.int32)
        pegasos_bias_kernel(X=X, y=y, ref_margin=ref_margin, s=s_step, idx=idx, lam=lam, radius=radius, u=u, ubar=ubar,
                            bias=bias, loss=loss, active=active)
        shift = 0.0 if w_ref is None else w_ref
        self.w_, self.w_bar_ = u + shift, ubar + shift
        self.b_, self.b_bar_ = float(bias[0]), float(bias[1])
        self.t_ = T
        s = np.ones(m) if weights is None else weights
        margins = margins_kernel(X, y, self.w_bar_) + y * self.b_bar_  # a fixed order: the same bits at any thread count
        objective = 0.5 * lam * float(ubar @ ubar) + float(np.mean(s * np.maximum(0.0, 1.0 - margins)))
        return Outcome(
            quantities={},
            curves={},
            trace={"active": active, "loss": loss},
            stats={"T": T, "lam": lam, "sampling": self.sampling, "batch": int(self.batch), "delta": float(self.delta),
                   "b_bar": self.b_bar_, "b_last": self.b_, "objective_bar": objective,
                   "train_error": float(np.mean(margins <= 0.0)), "not_covered": NO_BOUND_WITH_BIAS},
        )

