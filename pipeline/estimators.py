"""scikit-learn estimators over the learners: one thin adapter, generated per learner class.

``estimator(Learner or name)`` returns a scikit-learn classifier class (``BaseEstimator`` +
``ClassifierMixin``) whose ``__init__`` takes the learner's declared parameters (``Learner.params``) as
keyword arguments with the learner's defaults, so that ``get_params``/``set_params``/``clone``, pipelines,
grid searches and cross-validation work unchanged. Every built-in adapter constructs with no argument, as
scikit-learn's estimators do (``check_estimator`` builds them so): where the learner requires a parameter
(Pegasos's ``lam``, the multiclass SGD's and SVM's ``B``), the adapter gives it a default of its own
(:data:`ADAPTER_DEFAULTS`, each with its reason), for standardised features; the learner's own
declaration, and so the command's config, still requires it. ``fit`` starts a fresh learner, ``partial_fit``
continues the same one (``classes=`` on the first call), ``decision_function`` is w.x with the learner's
output weights (shape (n,) for two classes, (n, k) for more) and ``predict`` applies the learner's own rule.
Labels may be anything ``np.unique`` orders: a binary learner sees ``classes_[1]`` as +1 and ``classes_[0]``
as -1 (docs/bounds.md section 0), a multiclass learner sees class indices 0..k-1 (section 7).

Which learners are adapted, and why (the learners "over feature vectors": a weight vector or matrix
w that scores a new x by w.x):

- ``Perceptron`` (docs/bounds.md sections 1-2): ``fit`` and ``partial_fit`` are its ``learn_stream`` (its
  ``passes`` passes over the data given), on a fresh learner or continuing the last one; with ``passes=1``,
  partial fits over consecutive batches are one fit over their concatenation, bit for bit. ``w_`` is its
  output; a tie w.x = 0 follows its ``tie`` parameter (its ``predict_one``). ``ordering="random"`` or
  ``"adversarial"`` permutes the sample given to ``fit`` first (drawn from ``random_state``); ``"adaptive"``
  presents the adaptive adversary's sequence of its rows instead (docs/bounds.md section 1).
- ``BatchPerceptron`` (section 1, the batch form): ``fit`` is its ``learn_stream``, passes until a clean one
  (at most ``passes``); only ``fit`` is offered, as a batch learner: it stops on the sample it was given.
- ``Pegasos`` (sections 4, 6) and its presets (``pegasos_balanced``, ``pegasos_inorder``,
  ``pegasos_projected``, ``pegasos_weighted`` are parameters of the same class): the output is the
  average w_bar (``w_bar_``), the iterate its expectation and high-probability bounds speak about
  (one-vs-all uses it the same way); ``partial_fit`` continues the step count t, so the step sizes
  1/(lam t) go on decreasing (``T`` more steps per call, drawn from the batch given).
  ``objective="transfer"`` (the ``pegasos_transfer`` preset) is refused: its reference w_r comes from a
  generator's known direction w*, which a plain (X, y) sample does not have.
- ``MulticlassPegasos`` and ``MulticlassSGD`` (sections 7-8): the average W_bar (``W_bar_``);
  ``OneVsAll`` (section 8): the k binary Pegasos averages (``W_``); ``MulticlassSVM`` (section 7, Cor. 17.1):
  the certified solution (``W_``). Only ``fit`` is offered: each fit starts a fresh multiclass training core
  (SGD's step size is fixed by its horizon T; continuing multiclass Pegasos is not offered), one-vs-all trains
  its k binary runs anew and the SVM is a batch solve. ``MulticlassSGD`` draws its T examples i.i.d. from the training sample (the
  population is the sample). Its eta and the SVM's lam use R = the largest row norm of the sample as
  measured here, not the data layer's certified (rounded-up) R, so they may differ from a pipeline run's in
  the last bits.

Not adapted (:data:`REFUSED`; ``estimator`` raises a ``UserError`` with the learner's own reason):
``KernelPegasos`` (section 5) keeps only the dual coefficients over its training points (``alpha_bar_``)
and its Gram kernel only builds the square matrix of one sample, so it cannot score a new point;
``Halving`` and ``WeightedMajority`` (section 3) learn over a finite hypothesis class given as a
prediction table on the sample, not over feature vectors. A plug-in learner (docs/plugins.md, "As a
scikit-learn estimator") over +1/-1 labels with a weight vector ``w_`` is adapted like the Perceptron,
through its ``learn_stream(X, y)``, or else its ``learn_one(x, y)`` fed the rows in order (``passes``
passes if it declares ``passes``, else one).

Pegasos and the multiclass learners train here through their ``run``'s own training core
(:class:`pipeline.learners.pegasos.PegasosCore`, :class:`pipeline.learners.multiclass.MulticlassCore`) with
``run``'s random draws, so that ``partial_fit`` can continue a run where ``run`` always starts one
(tests/test_estimators.py pins ``fit`` to ``run`` bit for bit for Pegasos, MulticlassPegasos and OneVsAll).

Examples
--------
>>> import numpy as np
>>> from sklearn.model_selection import cross_val_score
>>> from pipeline.data import MarginBinary
>>> ds = MarginBinary(gamma=0.2, rho=1.0, n=400, d=5).generate(np.random.default_rng(1))
>>> clf = PerceptronClassifier(passes=3)
>>> clf.fit(ds.X, ds.y).classes_
array([-1.,  1.])
>>> float(cross_val_score(clf, ds.X, ds.y, cv=4).min()) > 0.9
True
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from pipeline.learners import (LEARNERS, BatchPerceptron, MulticlassPegasos, MulticlassSGD, MulticlassSVM, OneVsAll, Pegasos,
                               Perceptron)
from pipeline.learners.halving import Halving, WeightedMajority
from pipeline.learners.kernel_pegasos import KernelPegasos
from pipeline.learners.base import Learner
from pipeline.learners.multiclass import _steps
from pipeline.learners.pegasos import PegasosCore, class_weights, index_stream
from pipeline.numerics import margins_kernel
from pipeline.params import REQUIRED, ParamError, UserError

try:  # scikit-learn >= 1.6; older releases validate through the estimator's own method
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - scikit-learn < 1.6
    def _validate_data(est: BaseEstimator, *args: Any, **kwargs: Any) -> Any:
        return est._validate_data(*args, **kwargs)

__all__ = ["ADAPTER_DEFAULTS", "FITTINGS", "REFUSED", "BatchPerceptronClassifier", "Fitting", "LearnerClassifier",
           "MulticlassPegasosClassifier", "MulticlassSGDClassifier", "MulticlassSVMClassifier", "OneVsAllClassifier",
           "PegasosClassifier", "PerceptronClassifier", "adapted", "estimator", "fitting_for"]


# --- How each learner trains on a sample -----------------------------------------------------------------

@dataclass(frozen=True)
class Fitting:
    """How the adapter trains one learner class on (X, y): a declared record, one generic adapter reads it.

    kind : "binary" (labels +1/-1 as float) or "multiclass" (labels 0..k-1 as int).
    coef : the learned attribute holding the learner's output weights (a vector, or a k x d matrix).
    learn : ``learn(learner, X, y, k, rng, state) -> state``: learn from (X, y) (C-contiguous float64;
        ``k`` the number of classes), continuing ``state`` (None on a fresh learner) and returning what the
        next call continues from.
    online : ``partial_fit`` is offered (``learn`` continues the learner instead of restarting it).
    random : the learner draws random numbers (the estimator then takes ``random_state``).
    """

    kind: str
    coef: str
    learn: Callable[..., Any]
    online: bool
    random: bool


def _learn_stream(learner: Any, X: np.ndarray, y: np.ndarray, k: int, rng: Any, state: Any) -> None:
    # the learner's own online API: it keeps its state (w_, t_) between calls; an ``ordering`` other than
    # "given" permutes the whole sample first (random_state draws it), so it does not continue a learner
    ordering = getattr(learner, "ordering", "given")
    if ordering != "given":
        if getattr(learner, "t_", 0):
            raise ValueError(f"ordering={ordering!r} reorders a whole sample: use fit, or partial_fit with "
                             "ordering='given'")
        order = learner.order(X, y, rng)
        X, y = X[order], y[order]
    learner.learn_stream(X, y)


def _learn_one(learner: Any, X: np.ndarray, y: np.ndarray, k: int, rng: Any, state: Any) -> None:
    # a plug-in with only the single-step API: its ``passes`` passes over the rows in order (one if it
    # declares none), as its run presents them, so fit on a sample is run on it; the learner keeps w_
    check = getattr(learner, "check", None)
    if check is not None:  # a bad parameter is one ParamError before any step
        check()
    for _ in range(int(getattr(learner, "passes", 1))):
        for x, label in zip(X, y):
            learner.learn_one(x, label)


def _radius(X: np.ndarray) -> float:
    return float(np.sqrt(np.einsum("ij,ij->i", X, X).max(initial=0.0)))


def _learn_pegasos(learner: Any, X: np.ndarray, y: np.ndarray, k: int, rng: np.random.Generator,
                   state: PegasosCore | None) -> PegasosCore:
    """``T`` more steps of Pegasos.run's training (its draws, its :class:`PegasosCore`), from step ``state.t`` + 1."""
    learner.check()
    m, d = X.shape
    if learner.intercept:
        raise ParamError("intercept", learner.intercept, "false for the estimator (its decision function has no "
                         "intercept); the biased form runs as boundlab algorithm=pegasos algorithm.intercept=true")
    if learner.objective == "transfer":
        raise ParamError("objective", learner.objective, "hinge or balanced for a plain (X, y) sample (transfer "
                         "needs a generator's known direction w* for its reference w_r)")
    if learner.batch > m:
        raise ParamError("batch", learner.batch, f"at most the number of samples ({m})")
    learner.check_scale(_radius(X))
    lam, T, batch = float(learner.lam), int(learner.T), int(learner.batch)
    weights = class_weights(y) if learner.objective == "balanced" else None
    idx = index_stream(learner.sampling, y, T, batch, rng)
    s_step = weights if weights is not None and learner.sampling != "class_balanced" else None  # None: every weight 1
    radius = 1.0 / math.sqrt(lam) if learner.projection else 0.0
    if state is None:
        state = PegasosCore.start(d, lam, radius)
    grid = np.array([state.t + T], dtype=np.int64)  # one snapshot: the average after the last step
    done = state.advance(X, y, idx, grid, s_step, None)
    learner.w_, learner.w_bar_, learner.t_ = state.u, done.avg[0], state.t
    return state


def _learn_multiclass_pegasos(learner: Any, X: np.ndarray, y: np.ndarray, k: int, rng: np.random.Generator,
                              state: Any) -> None:
    learner.check()
    if learner.intercept:
        raise ParamError("intercept", learner.intercept, "false for the estimator (its decision function has no "
                         "intercept); the biased form runs as boundlab algorithm=multiclass_pegasos algorithm.intercept=true")
    # MulticlassPegasos.run's draws, radius and core (the same bits)
    W, _, avg, *_ = _steps(X, y, learner.stream(y.size, rng), k, 0.0, float(learner.lam), radius=learner.ball(k),
                           cost=learner.cost)
    learner.W_, learner.W_bar_ = W, avg[-1]


def _learn_multiclass_sgd(learner: Any, X: np.ndarray, y: np.ndarray, k: int, rng: np.random.Generator,
                          state: Any) -> None:
    learner.check()
    eta = learner.step_size(_radius(X))  # the literal rho = 2R of [S3], R over the sample (the population here)
    idx = rng.integers(0, y.size, size=int(learner.T))
    W, _, avg, *_ = _steps(X, y, idx, k, eta, 0.0, cost=learner.cost)
    learner.W_, learner.W_bar_ = W, avg[-1]


def _learn_multiclass_svm(learner: Any, X: np.ndarray, y: np.ndarray, k: int, rng: Any, state: Any) -> None:
    from pipeline.solvers.multiclass import multiclass_svm  # the certified solver MulticlassSVM.run uses

    learner.check()
    B, m = float(learner.B), int(y.size)
    rho = 2.0 * _radius(X)
    if rho == 0.0:  # every x is 0: every W scores 0, so W = 0 is optimal (and Cor. 17.1's lam would be 0)
        learner.W_ = np.zeros((k, X.shape[1]))
        return
    lam = math.sqrt(2.0 * rho * rho / (B * B * m))  # UML Cor. 17.1, as MulticlassSVM.run
    learner.W_ = multiclass_svm(X, y, k, lam, cost=learner.cost).W


def _learn_ova(learner: Any, X: np.ndarray, y: np.ndarray, k: int, rng: np.random.Generator, state: Any) -> None:
    learner.check()
    if learner.intercept:
        raise ParamError("intercept", learner.intercept, "false for the estimator (its decision function has no "
                         "intercept); the biased form runs as boundlab algorithm=ova algorithm.intercept=true")
    for j in range(k):
        if not np.any(y == j):
            raise ValueError(f"OneVsAll: class {j} has no training example (n = {y.size})")
    W = np.zeros((k, X.shape[1]))
    for j, child in enumerate(rng.spawn(k)):  # as OneVsAll.run: one child stream per class, in order
        binary = Pegasos(lam=learner.lam, T=learner.T, objective="balanced", sampling="class_balanced")
        _learn_pegasos(binary, X, np.where(y == j, 1.0, -1.0), 2, child, None)
        W[j] = binary.w_bar_
    learner.W_ = W


# The adapter's defaults for the parameters a learner requires (the command asks for them, a scikit-learn
# estimator may not: check_estimator constructs it with no argument), each with why it suits standardised
# features. One regularisation scale for all: lam = 0.01 puts the optimum in the ball ||w|| <= 1/sqrt(lam)
# = 10, and B = 10 is that same ball for the comparator W.
_LAM = (0.01, ("the optimum of lam/2 ||w||^2 + hinge lies in the ball ||w|| <= 1/sqrt(lam) = 10 (docs/bounds.md "
               "section 4): on standardised features, a margin of 1 across a tenth of a standard deviation; and "
               "1/lam = 100 is far below the default T = 10000, so the run converges (its suboptimality bound falls "
               "as 1/(lam T)). scikit-learn's SGDClassifier alpha=1e-4 is this lam for the same objective: pass "
               "lam=1e-4 with T >> 10^4 for it"))
_B = (10.0, ("the comparator radius ||W*|| <= B, the ball 1/sqrt(lam) of the Pegasos adapters' default lam = 0.01: "
             "on standardised features, a margin of 1 between classes a tenth of a standard deviation apart"))
ADAPTER_DEFAULTS: dict[type, dict[str, tuple[Any, str]]] = {  # learner class -> {parameter: (default, why)}
    Pegasos: {"lam": _LAM},
    MulticlassPegasos: {"lam": _LAM},
    OneVsAll: {"lam": _LAM},
    MulticlassSGD: {"B": _B},
    MulticlassSVM: {"B": _B},
}

FITTINGS: dict[type, Fitting] = {  # the learners this module adapts (the module docstring says why these)
    Perceptron: Fitting("binary", "w_", _learn_stream, online=True, random=True),  # random: its ordering
    BatchPerceptron: Fitting("binary", "w_", _learn_stream, online=False, random=True),
    Pegasos: Fitting("binary", "w_bar_", _learn_pegasos, online=True, random=True),
    MulticlassPegasos: Fitting("multiclass", "W_bar_", _learn_multiclass_pegasos, online=False, random=True),
    MulticlassSGD: Fitting("multiclass", "W_bar_", _learn_multiclass_sgd, online=False, random=True),
    MulticlassSVM: Fitting("multiclass", "W_", _learn_multiclass_svm, online=False, random=False),
    OneVsAll: Fitting("multiclass", "W_", _learn_ova, online=False, random=True),
}


class _Shape:
    """A sample's shape as a learner's ``check_with`` reads a dataset's (its declared ``n`` and ``d``, its
    number of classes ``k``; no name a learner treats specially)."""

    name = "estimator"

    def __init__(self, n: int, d: int, k: int) -> None:
        self.n, self.d, self.k = int(n), int(d), int(k)

    def get_params(self) -> dict[str, int]:
        return {"n": self.n, "d": self.d}


# The built-in learners that cannot be estimators, each with its reason and what to use instead (docs/plugins.md
# and the module docstring say the same): a scikit-learn classifier scores new points by weights over features.
_FINITE = ("it learns over a finite hypothesis class given as a prediction table on the sample, not over feature "
           "vectors, so it has no weights to score a new point; run it with boundlab algorithm={name} "
           "dataset=finite_class")
REFUSED: dict[type, str] = {
    KernelPegasos: "it keeps only dual coefficients over its training points (alpha_bar_) and its Gram kernel is "
                   "built on one sample, so it cannot score a new point; use PegasosClassifier (the linear kernel) "
                   "or run it with boundlab algorithm=kernel_pegasos",
    Halving: _FINITE,
    WeightedMajority: _FINITE,
}


def _refuse(cls: type, reason: str) -> UserError:
    name = getattr(cls, "name", cls.__name__)
    return UserError(f"learner {name!r} is not adapted to scikit-learn: {reason.format(name=name)}")


def fitting_for(cls: type) -> Fitting:
    """The :class:`Fitting` of a learner class: its own entry; else, for a plug-in over +1/-1 labels, its
    ``learn_stream(X, y)`` or (failing that) its ``learn_one(x, y)`` fed row by row, with ``w_`` its output.
    A learner that cannot be adapted is refused with a one-line ``UserError`` (a ``ValueError``) naming it
    and saying why: its entry in :data:`REFUSED`, or what a plug-in lacks."""
    for base in cls.__mro__:
        if base in FITTINGS:
            return FITTINGS[base]
        if base in REFUSED:
            raise _refuse(cls, REFUSED[base])
    accepts = getattr(cls, "accepts", None)
    if accepts is not None and "binary" not in accepts:
        raise _refuse(cls, f"it does not accept binary samples (accepts {sorted(accepts)}); the adapter wraps a "
                      "binary plug-in, and sklearn.multiclass.OneVsRestClassifier makes it multiclass")
    if callable(getattr(cls, "learn_stream", None)):
        return Fitting("binary", "w_", _learn_stream, online=True, random=False)
    if callable(getattr(cls, "learn_one", None)):
        return Fitting("binary", "w_", _learn_one, online=True, random=False)
    raise _refuse(cls, "it has neither learn_stream(X, y) nor learn_one(x, y) over +1/-1 labels; give it one, "
                  "with its weight vector in w_ (docs/plugins.md, 'As a scikit-learn estimator')")


# --- The adapter ---------------------------------------------------------------------------------------

def _generator(random_state: Any) -> np.random.Generator:
    """The algorithm's stream from scikit-learn's ``random_state`` (None, a seed, a RandomState or a Generator)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    return np.random.default_rng(None if random_state is None else int(random_state))


def _online(est: LearnerClassifier) -> bool:
    return est._fitting.online


class LearnerClassifier(ClassifierMixin, BaseEstimator):
    """Base of the generated classifiers (:func:`estimator`); not used directly.

    Attributes
    ----------
    learner_ : the wrapped learner, with its own learned state (``w_``, ``t_``...).
    classes_ : the labels, sorted; ``classes_[1]`` is the learner's +1 for a binary learner.
    coef_ : the learner's output weights, (1, d) for two classes (binary learner) or (k, d).
    n_features_in_ : number of features seen in ``fit``.
    """

    _learner_class: type = Learner  # set on each generated class
    _fitting: Fitting

    def __reduce__(self) -> tuple[Any, ...]:
        # the class is generated: pickle it as "the estimator of this learner class", which is importable
        return _restore, (self._learner_class, self.__getstate__())

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._fitting.kind == "multiclass"
        return tags

    def _more_tags(self) -> dict[str, Any]:  # pragma: no cover - the tags of scikit-learn < 1.6
        return {"binary_only": self._fitting.kind == "binary"}

    def _make_learner(self) -> Any:
        params = {p.name: getattr(self, p.name) for p in self._learner_class.params}
        return self._learner_class(**params)

    def _validate(self, X: Any, y: Any, reset: bool) -> tuple[np.ndarray, np.ndarray]:
        X, y = _validate_data(self, X, y, reset=reset, dtype=np.float64, order="C")
        check_classification_targets(y)
        return X, y

    def _set_classes(self, classes: np.ndarray) -> None:
        if classes.size < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; got 1 class ({classes[0]!r})")
        if self._fitting.kind == "binary" and classes.size > 2:
            raise ValueError(f"Only binary classification is supported. {type(self).__name__} got {classes.size} classes "
                             "(use a multiclass learner or sklearn.multiclass.OneVsRestClassifier)")
        self.classes_ = classes

    def _encode(self, y: np.ndarray) -> np.ndarray:
        """Labels as the learner reads them: +1/-1 (binary) or class indices 0..k-1 (multiclass)."""
        index = np.searchsorted(self.classes_, y)
        inside = index < self.classes_.size
        if not np.all(inside) or not np.all(self.classes_[np.where(inside, index, 0)] == y):
            unknown = np.setdiff1d(y, self.classes_)
            raise ValueError(f"y has labels {unknown.tolist()} not in classes {self.classes_.tolist()}")
        if self._fitting.kind == "binary":
            return np.ascontiguousarray(np.where(index == 1, 1.0, -1.0))
        return np.ascontiguousarray(index, dtype=np.int64)

    def _learn(self, X: np.ndarray, y: np.ndarray) -> None:
        # what the command checks before a run: the learner's arrays for a sample of this shape fit in memory
        # (e.g. passes=10**12 would ask for terabytes of trace): a ValueError naming the parameter, first
        check = getattr(self.learner_, "check_with", None)  # optional for a plug-in learner
        if check is not None:
            check(_Shape(*X.shape, self.classes_.size))
        self._state = self._fitting.learn(self.learner_, X, self._encode(y), self.classes_.size, self._rng, self._state)
        coef = np.asarray(getattr(self.learner_, self._fitting.coef), dtype=np.float64)
        self.coef_ = coef.reshape(1, -1) if coef.ndim == 1 else coef

    def fit(self, X: Any, y: Any) -> LearnerClassifier:
        """Train a fresh learner on (X, y) (its whole protocol: e.g. the Perceptron's ``passes`` passes,
        Pegasos's ``T`` steps)."""
        X, y = self._validate(X, y, reset=True)
        self._set_classes(np.unique(y))
        self.learner_ = self._make_learner()
        self._rng = _generator(getattr(self, "random_state", None))
        self._state = None
        self._learn(X, y)
        return self

    @available_if(_online)  # only where the learner can continue: hasattr(est, "partial_fit") says so
    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> LearnerClassifier:
        """Continue learning on (X, y); ``classes`` (all labels) is required on the first call."""
        first = not hasattr(self, "learner_")
        X, y = self._validate(X, y, reset=first)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            self._set_classes(np.unique(np.asarray(classes)))
            self.learner_ = self._make_learner()
            self._rng = _generator(getattr(self, "random_state", None))
            self._state = None
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(f"classes={np.unique(classes).tolist()} is not classes_={self.classes_.tolist()} "
                             "of the first call to partial_fit")
        self._learn(X, y)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """w.x for each row: shape (n,) with two classes (> 0 leans to ``classes_[1]``), else (n, k).

        Sums run in the fixed order of :func:`pipeline._jit.dot_row` (the Perceptron's own order), so a
        row's score does not depend on the other rows of X."""
        check_is_fitted(self, "coef_")
        X = _validate_data(self, X, reset=False, dtype=np.float64, order="C")
        ones = np.ones(X.shape[0])
        scores = np.stack([margins_kernel(X, ones, np.ascontiguousarray(w)) for w in self.coef_], axis=1)
        if self._fitting.kind == "binary":
            return scores[:, 0]
        if self.classes_.size == 2:  # scikit-learn's binary convention: one column, class 1 minus class 0
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """The learner's prediction: sign(w.x) for a binary learner, a tie w.x = 0 decided by the learner's
        ``predict_one`` where it has one (the Perceptron's ``tie``) and as -1 otherwise; argmax_j W_j.x for a
        multiclass learner, a tie going to the first class."""
        scores = self.decision_function(X)
        if scores.ndim == 2:
            return self.classes_[np.argmax(scores, axis=1)]
        positive = scores > 0.0
        ties = np.flatnonzero(scores == 0.0)
        if ties.size and callable(getattr(self.learner_, "predict_one", None)):
            X = _validate_data(self, X, reset=False, dtype=np.float64, order="C")
            positive[ties] = [self.learner_.predict_one(X[i]) > 0 for i in ties]
        return self.classes_[positive.astype(np.int64)]


def _restore(learner_class: type, state: dict[str, Any]) -> LearnerClassifier:
    est = estimator(learner_class).__new__(estimator(learner_class))
    est.__setstate__(state)
    return est


# --- The factory ---------------------------------------------------------------------------------------

def _adapter_defaults(cls: type) -> dict[str, tuple[Any, str]]:
    for base in cls.__mro__:
        if base in ADAPTER_DEFAULTS:
            return ADAPTER_DEFAULTS[base]
    return {}


def _defaults(cls: type) -> dict[str, Any]:
    """Each declared parameter's default: the learner's, else the adapter's (:data:`ADAPTER_DEFAULTS`), else
    :data:`pipeline.params.REQUIRED` (a plug-in's parameter without a default stays required)."""
    from pipeline.params import param_defaults

    own = _adapter_defaults(cls)
    return {name: own[name][0] if default is REQUIRED and name in own else default
            for name, default in param_defaults(cls).items()}


def _docstring(cls: type, fitting: Fitting) -> str:
    lines = [f"scikit-learn classifier over :class:`{cls.__module__}.{cls.__qualname__}` (generated by "
             ":func:`pipeline.estimators.estimator`; see the learner for the algorithm and its bounds).",
             "", "Parameters", "----------"]
    own, defaults = _adapter_defaults(cls), _defaults(cls)
    for p in cls.params:
        default = "" if defaults[p.name] is REQUIRED else f", default={defaults[p.name]!r}"
        lines += [f"{p.name} : {p.type.__name__}{default}", f"    {p.allowed}."]
        if p.name in own:
            lines += [f"    The default is the adapter's (the learner requires it): {own[p.name][1]}."]
    if fitting.random:
        lines += ["random_state : int, numpy Generator or RandomState, default=None",
                  "    Seed of the algorithm's random stream (numpy.random.default_rng(seed))."]
    lines += ["", "Attributes", "----------", "learner_ : the wrapped learner, with its learned state.",
              "classes_ : the labels, sorted.", f"coef_ : the learner's ``{fitting.coef}``, as (1, d) or (k, d).",
              "n_features_in_ : number of features seen in fit."]
    return "\n".join(lines)


_CLASSES: dict[type, type] = {}


def estimator(learner: type | str) -> type:
    """The scikit-learn classifier class of a learner class (or of a registered learner's name).

    Its ``__init__`` takes the learner's declared parameters as keyword-only arguments with the learner's
    defaults, or the adapter's where the learner requires one (:data:`ADAPTER_DEFAULTS`), and
    ``random_state`` too if the learner draws random numbers; the class is made once per learner class.
    Raises a one-line ``UserError`` (a ``ValueError``) with the reason for a learner that cannot be adapted
    (:func:`fitting_for`).

    Examples
    --------
    >>> import inspect
    >>> from pipeline.learners import Pegasos
    >>> str(inspect.signature(estimator("pegasos")))
    "(*, lam=0.01, T=10000, batch=1, sampling='iid', projection=False, objective='hinge', intercept=False, ref_noise=0.5, ref_scale=1.0, delta=0.05, random_state=None)"
    >>> estimator(Pegasos) is PegasosClassifier
    True
    """  # noqa: E501 - a doctest's output line
    if isinstance(learner, str):
        if learner not in LEARNERS:
            raise ParamError("learner", learner, f"one of {', '.join(sorted(LEARNERS))}")
        learner = LEARNERS[learner]
    if learner in _CLASSES:
        return _CLASSES[learner]
    fitting = fitting_for(learner)
    defaults = _defaults(learner)
    if fitting.random:
        defaults["random_state"] = None
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                             default=inspect.Parameter.empty if default is REQUIRED else default)
           for name, default in defaults.items()])

    def __init__(self: LearnerClassifier, **kwargs: Any) -> None:  # noqa: N807 - becomes the class's __init__
        # only store, as scikit-learn requires: the learner validates its parameters in fit (Learner.check)
        try:
            bound = signature.bind(self, **kwargs)
        except TypeError as e:  # an unknown keyword or a missing required one
            raise TypeError(f"{type(self).__name__}(): {e}") from None
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if name != "self":
                setattr(self, name, value)

    __init__.__signature__ = signature
    name = f"{learner.__name__}Classifier"
    __init__.__qualname__ = f"{name}.__init__"
    cls = type(name, (LearnerClassifier,), {"__init__": __init__, "__doc__": _docstring(learner, fitting),
                                            "__module__": __name__, "_learner_class": learner, "_fitting": fitting})
    _CLASSES[learner] = cls
    return cls


def adapted() -> list[type]:
    """The scikit-learn classes of every adapted built-in learner (the keys of :data:`FITTINGS`)."""
    return [estimator(cls) for cls in FITTINGS]


PerceptronClassifier = estimator(Perceptron)
BatchPerceptronClassifier = estimator(BatchPerceptron)
PegasosClassifier = estimator(Pegasos)
MulticlassPegasosClassifier = estimator(MulticlassPegasos)
MulticlassSGDClassifier = estimator(MulticlassSGD)
MulticlassSVMClassifier = estimator(MulticlassSVM)
OneVsAllClassifier = estimator(OneVsAll)
