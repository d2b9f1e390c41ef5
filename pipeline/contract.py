"""The contract between a learner and the statistic providers: one frozen record per problem a run hands over.

A learner reports what it did in :class:`pipeline.learners.base.Outcome`; what the statistic providers
(:mod:`pipeline.job.statistics`) need beyond its per-step losses and statistics (the data of the objective, the
index stream, the iterates at the snapshot steps) it hands over as one of the records below, in
``Outcome.run``. A provider declares the record type it reads (``Provider.record``) and reads its typed
attributes: a reader, or a type checker (``tests/test_lint.py`` runs mypy on this module and on
:mod:`pipeline.job.statistics`), can follow every value from the learner that set it to the provider that uses it.

The records sit in the records layer (docs/architecture.md), below the learners and the statistics, and import
nothing of the project: a plug-in learner hands over one of them (or its own subclass of :class:`Run`, with a
provider registered for it under the ``boundlab.statistics`` entry points, docs/plugins.md).

Shapes use m (training examples), d (features), k (classes, or the Pegasos mini-batch size where said),
T (steps), S (snapshot steps of the grid), |H| (distinct hypotheses). The records are frozen (no field is
rebound after the run); the arrays they hold are the run's own and are not copied.

>>> import numpy as np
>>> HalvingRun(class_table=np.zeros((2, 3), dtype=np.int8)).class_table.shape
(2, 3)
>>> issubclass(SvmRun, StronglyConvexRun) and issubclass(KernelSvmRun, StronglyConvexRun)
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.risk import Cost  # the label cost's type, beside the costs it names


@dataclass(frozen=True, kw_only=True)
class Run:
    """Base of every record a learner hands to the statistic providers. A provider declared for a record
    type serves its subclasses too (:func:`pipeline.job.statistics.provider_for` walks the MRO)."""


@dataclass(frozen=True, kw_only=True)
class StronglyConvexRun(Run):
    """A run of a Pegasos-family learner on a lam-strongly convex objective: what its constant c = G^2 is made
    of (P11 Thm 1; docs/bounds.md sections 4, 5, 8).

    lam : the regularisation lam of lam/2 ||w||^2.
    feature_radius : the radius of the feature vectors the sub-gradients are made of (the data's R; the feature
        space's for a kernel; sqrt(2) R for the multivector map of the multiclass learner).
    projection : whether every step projects onto the ball of radius ``radius``.
    s_max : the largest class weight of the per-step objective (1 unweighted).
    radius : the ball's radius (0.0 without projection).
    """

    lam: float
    feature_radius: float
    projection: bool
    s_max: float
    radius: float


@dataclass(frozen=True, kw_only=True)
class SvmRun(StronglyConvexRun):
    """Linear Pegasos on the (weighted, possibly shifted) SVM objective of docs/bounds.md sections 4 and 6:
    lam/2 ||w - w_ref||^2 + mean_i weights_i hinge_i(w).

    X : (m, d) float64, the training sample. y : (m,) float64 labels in {-1, +1}.
    weights : (m,) class weights s of the objective, or None for all 1.
    w_ref : (d,) the reference w_r the run is regularised towards (objective=transfer), or None (0).
    s_step : (m,) the weight of each example in the per-step objective f_t (all 1 under class-balanced sampling).
    ref_margin : (m,) y_i w_ref.x_i (zeros without a reference).
    idx : (T, k) int, the examples of each step's mini-batch (k = the batch size).
    grid : (S,) int, the snapshot steps (1-based, increasing, T last).
    avg : (S, d) the averages u_bar at the snapshot steps (relative to w_ref).
    last : (S, d) the iterates u_(t+1) at the snapshot steps (relative to w_ref).
    loss : (T,) the per-step objective f_t(w_t).
    random : (d,) the random iterate u_r (relative to w_ref), r uniform in 1..T, or None.
    r : the step r of ``random`` (0 when there is none).
    grad2 : (T,) ||grad_t||^2 of the sub-gradients the run used, for the realised Lemma 1, or None.
    """

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray | None
    w_ref: np.ndarray | None
    s_step: np.ndarray
    ref_margin: np.ndarray
    idx: np.ndarray
    grid: np.ndarray
    avg: np.ndarray
    last: np.ndarray
    loss: np.ndarray
    random: np.ndarray | None = None
    r: int = 0
    grad2: np.ndarray | None = None


@dataclass(frozen=True, kw_only=True)
class KernelSvmRun(StronglyConvexRun):
    """Kernel Pegasos on the SVM objective over the run's certified Gram matrix (docs/bounds.md section 5).

    K : (m, m) the Gram matrix the run used (shifted to be PSD if it had to be).
    y : (m,) float64 labels in {-1, +1}.
    idx : (T, k) int, each step's mini-batch (k = the batch size).
    grid : (S,) int, the snapshot steps.
    avg : (S, m) the average's coefficients a (w = sum_i a_i y_i phi(x_i)) at the snapshot steps.
    last : (m,) the coefficients of w_(T+1).
    loss : (T,) the per-step objective f_t(w_t).
    """

    K: np.ndarray
    y: np.ndarray
    idx: np.ndarray
    grid: np.ndarray
    avg: np.ndarray
    last: np.ndarray
    loss: np.ndarray


@dataclass(frozen=True, kw_only=True)
class CrammerSingerRun(StronglyConvexRun):
    """Multiclass Pegasos on the Crammer-Singer objective lam/2 ||W||^2 + mean generalized hinge
    (docs/bounds.md section 8).

    X : (m, d) the training sample. y : (m,) int labels in 0..k-1. k : the number of classes.
    idx : (T,) int, the example of each step.
    grid : (S,) int, the snapshot steps.
    avg : (S, k, d) the averages W_bar at the snapshot steps (the last is judged on the held-out sample).
    W : (k, d) the last iterate W_(T+1).
    loss : (T,) the per-step objective f_t(W_t).
    cost : the label cost Delta of the objective.
    """

    X: np.ndarray
    y: np.ndarray
    k: int
    idx: np.ndarray
    grid: np.ndarray
    avg: np.ndarray
    W: np.ndarray
    loss: np.ndarray
    cost: Cost = None


@dataclass(frozen=True, kw_only=True)
class MulticlassSgdRun(Run):
    """SGD on the generalized hinge loss over T fresh draws, against the ball ||U|| <= B (Lemma 14.1,
    Cor. 17.2; docs/bounds.md section 7).

    X : (T, d) the draws, one a step. y : (T,) int labels in 0..k-1.
    B : the comparator ball's radius. eta : the step size.
    loss : (T,) the loss of each step. vnorm2 : (T,) ||v_t||^2 of each step's sub-gradient.
    grid : (S,) int, the snapshot steps. avg : (S, k, d) the averages W_bar at the snapshot steps (the last,
        W_bar after step T, is the predictor judged on the held-out sample).
    cost : the label cost Delta.
    """

    X: np.ndarray
    y: np.ndarray
    B: float
    eta: float
    loss: np.ndarray
    vnorm2: np.ndarray
    grid: np.ndarray
    avg: np.ndarray
    cost: Cost = None


@dataclass(frozen=True, kw_only=True)
class MulticlassSvmRun(Run):
    """The multiclass SVM's certified solve (regularised loss minimisation, Cor. 17.1; docs/bounds.md section 7).

    B : the comparator ball's radius. m : the training sample's size. cost : the label cost Delta.
    W : (k, d) the certified minimiser, the predictor judged on the held-out sample.
    """

    B: float
    m: int
    W: np.ndarray
    cost: Cost = None


@dataclass(frozen=True, kw_only=True)
class MulticlassBiasRun(Run):
    """Multiclass Pegasos with unregularised biases b (``intercept=true``; no bound covers it, P11 section 6):
    the predictor argmax_j W_j.x + b_j, judged on the held-out sample only.

    W_bar : (k, d) the average of the W_t. b_bar : (k,) the average of the b_t. cost : the label cost Delta.
    """

    W_bar: np.ndarray
    b_bar: np.ndarray
    cost: Cost = None


@dataclass(frozen=True, kw_only=True)
class OneVsAllVotes(Run):
    """One-vs-all's k binary models voting, argmax_j w_j.x + b_j (docs/bounds.md section 8): its held-out 0-1
    risk. Each binary run is a part of the outcome (``Outcome.parts``), with its own record.

    W : (k, d) the binary models' averages w_bar_j. b : (k,) their biases b_bar_j, or None (no intercept).
    """

    W: np.ndarray
    b: np.ndarray | None = None


@dataclass(frozen=True, kw_only=True)
class OneVsAllRun(OneVsAllVotes):
    """One-vs-all without biases: k binary Pegasos runs on the SVM objective (each part an :class:`SvmRun`);
    the run as a whole reports the first part's constant c beside it (docs/bounds.md section 8)."""


@dataclass(frozen=True, kw_only=True)
class HalvingRun(Run):
    """Halving on a finite class (docs/bounds.md section 3).

    class_table : (|H|, m) int8 in {-1, +1}, the run's table of distinct functions on the run's points: the
        class whose exact game the statistics solve beside the bound.
    """

    class_table: np.ndarray


@dataclass(frozen=True, kw_only=True)
class PresentedRun(Run):
    """A mistake-driven run whose rounds are not passes over the sample (the Perceptron's ``ordering=adaptive``,
    docs/bounds.md section 2).

    presented : (T,) int, the row of the sample each round presented.
    """

    presented: np.ndarray


__all__ = ["Cost", "CrammerSingerRun", "HalvingRun", "KernelSvmRun", "MulticlassBiasRun", "MulticlassSgdRun",
           "MulticlassSvmRun", "OneVsAllRun", "OneVsAllVotes", "PresentedRun", "Run", "StronglyConvexRun", "SvmRun"]
