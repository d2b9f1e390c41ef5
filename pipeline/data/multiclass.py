"""Multiclass data: a margin generator with a known W* and scikit-learn's bundled sets (docs/bounds.md sections 7-9).

The learners of docs/bounds.md sections 7 and 8 (multiclass SGD of UML section 17.2, the multiclass SVM of
Cor. 17.1, one-vs-all and Crammer-Singer) see either fresh i.i.d. draws from a distribution D
(:meth:`MulticlassDataset.draw`) or a fixed sample S. The statistics they are bounded by are measured
on exactly the vectors they can see (docs/bounds.md section 0): the radius R bounds every training, test
and drawn vector, and the generator's margin is certified so that the generalized hinge loss of
W*/gamma is exactly zero in floating point, not only in exact arithmetic.

Floating point. The generator accepts a candidate x only if its computed margin exceeds gamma by an
a-priori bound of the rounding error of every score difference involved, both the generator's own and
that of evaluating the loss at fl(W*/gamma) (Higham, *Accuracy and Stability of Numerical Algorithms*,
2nd ed., eq. 3.5: a dot product of length d errs by at most gamma_d |a|.|b|, for any summation order),
and only if a rigorous upper bound of ||x|| is <= rho. The rejected shells have relative width ~d u
(u = 2^-53): the law of x differs from the one of docs/bounds.md section 9 by a negligible amount, and the
statements R = rho and L^{g-hinge}(W*/gamma) = 0 hold exactly for the floats handed out.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

from pipeline.data.dataset import Source
from pipeline.data.real import PREPROCESS, preprocess
from pipeline.params import (RHO, Param, ParamError, UserError, above, at_least, check_margin_scale, check_params,
                             check_sizes)
from pipeline.solvers.certified import radius

from pipeline.numerics import UNIT_ROUNDOFF, err_factor


@dataclass(frozen=True)
class MulticlassStats:
    """Statistics of a multiclass sample (docs/bounds.md section 9, "Multiclass data").

    Attributes
    ----------
    m, d, k : training sample size, dimension, number of classes.
    R : rigorous upper bound of max ||x|| over every vector the learners can see: the training sample,
        the test sample and every :meth:`MulticlassDataset.draw` (generator: rho, by construction; finite
        set: :func:`pipeline.solvers.certified.radius` over S).
    margin : rigorous lower bound of the realised min_i W*_{y_i}.x_i - max_{j != y_i} W*_j.x_i over the
        training sample, on the clean labels (>= gamma by construction); NaN without a W*.
    acceptance : fraction of the candidates x, uniform in the rho-ball, that the generator's rejection
        step accepted (margin >= gamma), over every candidate drawn for the training and test samples;
        NaN for a finite set.
    """

    m: int
    d: int
    k: int
    R: float
    margin: float
    acceptance: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


class MulticlassSample(Protocol):
    """A multiclass sample as a learner reads it (kind ``multiclass``,
    :class:`pipeline.data.multiclass.MulticlassDataset`): labels 0..k-1, a held-out sample, fresh draws."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def X(self) -> np.ndarray: ...  # noqa: N802 - the field's name
    @property
    def y(self) -> np.ndarray: ...
    @property
    def k(self) -> int: ...
    @property
    def stats(self) -> MulticlassStats: ...
    @property
    def X_test(self) -> np.ndarray: ...  # noqa: N802 - the field's name
    @property
    def y_test(self) -> np.ndarray: ...
    @property
    def population(self) -> str: ...
    def draw(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True)
class MulticlassDataset:
    """A multiclass sample, a held-out sample, and a way to draw fresh examples.

    Attributes
    ----------
    name : registry name of the dataset.
    X, y : (m, d) float64 training sample and its (m,) int64 labels in 0..k-1 (for the learners that
        use a fixed sample: multiclass SVM, one-vs-all, multiclass Pegasos).
    k : number of classes.
    stats : :class:`MulticlassStats`.
    X_test, y_test : held-out sample for population estimates: ``n_test`` fresh draws from D
        (generator), or S itself (finite set).
    population : "D" (risks on X_test estimate L_D) or "S" (finite set: X_test is S and risks on it are
        exactly L_S; :meth:`draw` samples S with replacement, docs/bounds.md section 7, pitfalls).
    W_star : (k, d) generator's W* with ||W*||_F = 1; None for a finite set.
    gamma : the generator's margin: L_D^{g-hinge}(W*/gamma) = 0 exactly when noise = 0; None for a
        finite set.
    directions : comparator directions known by construction (left empty; W_star is the one).
    sampler : how :meth:`draw` samples D (generator only; None draws from S). Not part of equality.
    """

    kind = "multiclass"  # pipeline.data.dataset.KINDS (a class attribute, not a field)
    name: str
    X: np.ndarray
    y: np.ndarray
    k: int
    stats: MulticlassStats
    X_test: np.ndarray
    y_test: np.ndarray
    population: str
    W_star: np.ndarray | None
    gamma: float | None
    directions: dict = field(default_factory=dict)
    sampler: _MarginSampler | None = field(default=None, repr=False, compare=False)

    def draw(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``count`` fresh i.i.d. examples: from D for the generator, with replacement from S for a
        finite set. Deterministic given ``rng`` (use the algorithm's stream, not the data's; one call
        for a whole run is much faster than one call per example)."""
        count = int(count)
        if count < 0:
            raise ParamError("count", count, "an integer >= 0")
        if self.sampler is not None:
            X, y, _, _ = self.sampler.sample(count, rng)
            return X, y
        index = rng.integers(0, self.X_test.shape[0], size=count)
        return self.X_test[index], self.y_test[index]


def check_labels(y: np.ndarray, k: int, where: str) -> np.ndarray:
    """Labels as int64 in 0..k-1 with every class present; else a one-line :class:`UserError`.

    Parameters
    ----------
    y : labels (any numeric dtype holding integer values).
    k : number of classes (>= 2).
    where : what the labels belong to, named in the message (a dataset, a file).
    """
    if int(k) != k or k < 2:
        raise UserError(f"{where}: k={k!r} classes; a multiclass task needs an integer k >= 2")
    k = int(k)
    y = np.asarray(y)
    if y.ndim != 1:
        raise UserError(f"{where}: labels must be a 1-D array, got shape {y.shape}")
    if y.dtype.kind not in "iuf" or (y.dtype.kind == "f" and not np.all(np.isfinite(y))):
        raise UserError(f"{where}: labels must be finite numbers, got dtype {y.dtype}")
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        bad = y[y != np.round(y)][0]
        raise UserError(f"{where}: label {bad:g} is not an integer class 0..{k - 1}")
    outside = (y < 0) | (y > k - 1)
    if outside.any():
        bad = y[outside][0]
        raise UserError(f"{where}: label {bad:g} at row {int(np.flatnonzero(outside)[0])} is outside 0..{k - 1} (k={k})")
    y = y.astype(np.int64)
    counts = np.bincount(y, minlength=k)
    if (counts == 0).any():
        empty = np.flatnonzero(counts == 0)
        listed = ", ".join(str(c) for c in empty[:10])
        many = len(empty) > 1
        raise UserError(f"{where}: class{'es' if many else ''} {listed} of 0..{k - 1} {'have' if many else 'has'} no examples")
    return y


# --- The margin generator (docs/bounds.md section 9) ----------------------------------------------------


def _w_star(k: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """A (k, d) W* with ||W*||_F = 1 whose k classes have equal volumes in the ball.

    For k <= d + 1 the rows are a randomly rotated centred regular simplex; for k > d + 1, a regular
    k-gon in a random 2-plane. x uniform in the ball is rotation invariant, so in both cases a symmetry
    of W* maps any class region onto any other: the classes have equal volumes and ``prior_decay``
    alone sets the imbalance. See :func:`largest_margin` for the largest margin in the rho-ball.
    """
    if k <= d + 1:
        # Rows of H: the vertices e_j - 1/k of the centred simplex in coordinates of the sum-zero
        # hyperplane of R^k (their Gram matrix is I - 1/k); Q embeds them in a random (k-1)-flat of R^d.
        H = np.linalg.svd(np.eye(k) - 1.0 / k)[0][:, : k - 1]
        Q, _ = np.linalg.qr(rng.standard_normal((d, k - 1)))
        W = H @ Q.T
    else:
        Q, _ = np.linalg.qr(rng.standard_normal((d, 2)))
        angle = 2.0 * np.pi * np.arange(k) / k
        W = np.stack([np.cos(angle), np.sin(angle)], axis=1) @ Q.T
    return np.ascontiguousarray(W / np.linalg.norm(W))


def largest_margin(k: int, d: int, rho: float) -> float:
    """max over ||x|| <= rho of W*_y.x - max_{j != y} W*_j.x for the W* of :func:`_w_star`.

    Simplex (k <= d + 1): rows of norm c sqrt(1 - 1/k), c = 1/sqrt(k - 1), pairwise products -c^2/k; at
    x = rho W*_y/||W*_y|| the margin is rho sqrt(k)/(k - 1). Polygon: rows of norm 1/sqrt(k) at angles
    2 pi j/k; at x = rho W*_y/||W*_y|| the margin to the neighbours is rho (1 - cos(2 pi/k))/sqrt(k).
    In both cases the differences W*_y - W*_j to the nearest rows are symmetric about W*_y, so this x is
    optimal.
    """
    if k <= d + 1:
        return rho * math.sqrt(k) / (k - 1)
    return rho * (1.0 - math.cos(2.0 * math.pi / k)) / math.sqrt(k)


class _MarginSampler:
    """Class-conditional rejection sampling from the accepted region of each class (docs/bounds.md section 9).

    y is drawn from the priors first; then x uniform in the rho-ball is drawn in vectorised batches
    until each class has as many accepted points (label argmax_j W*_j.x, certified margin >= gamma,
    certified norm <= rho) as it needs; the first accepted points of a class fill its positions in
    order, so the result is i.i.d. and deterministic given the rng. Noise is applied last: with
    probability ``noise`` the label becomes a uniform other label.
    """

    BATCH_ELEMENTS = 1 << 22  # floats per candidate batch (32 MB)
    PILOT = 1 << 16  # candidates of the pilot estimate of the acceptance rates
    MAX_FLOATS = 5e8  # coordinates drawn for one sample at most (~5 s)

    def __init__(self, W: np.ndarray, gamma: float, rho: float, priors: np.ndarray, noise: float) -> None:
        self.W, self.gamma, self.rho, self.priors, self.noise = W, gamma, rho, priors, noise
        self.k, self.d = W.shape
        self.absW = np.abs(W)
        self.rates = np.full(self.k, np.nan)  # per-class acceptance, set by the pilot

    def candidates(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``count`` points uniform in the rho-ball, their labels, and whether they are accepted."""
        d = self.d
        x = rng.standard_normal((count, d))
        x *= (self.rho * rng.random(count) ** (1.0 / d) / np.linalg.norm(x, axis=1))[:, None]
        scores = x @ self.W.T
        label = np.argmax(scores, axis=1)
        rows = np.arange(count)
        top = scores[rows, label]
        scores[rows, label] = -np.inf
        runner = np.argmax(scores, axis=1)
        margin = top - scores[rows, runner]
        # Rounding of both score differences (the generator's here, and that of the loss at
        # fl(W*/gamma): scores, the division by gamma, the subtraction and the +1), charged twice over.
        a = np.abs(x) @ self.absW.T
        pad = 4.0 * err_factor(d + 4) * (a[rows, label] + a.max(axis=1))
        ok = margin - pad >= self.gamma * (1.0 + 8.0 * UNIT_ROUNDOFF)
        sq = np.einsum("ij,ij->i", x, x)
        ok &= np.sqrt(sq * (1.0 + err_factor(d))) * (1.0 + 2.0 * UNIT_ROUNDOFF) <= self.rho  # as certify.radius
        return x, label, ok

    def pilot(self, rng: np.random.Generator) -> tuple[int, int]:
        """Estimate each class's acceptance rate; raise a :class:`ParamError` when it is hopeless.
        Returns (accepted, drawn)."""
        counts, drawn = np.zeros(self.k, dtype=np.int64), 0
        while drawn < self.PILOT:
            size = min(self.PILOT - drawn, max(1024, self.BATCH_ELEMENTS // self.d))
            _, label, ok = self.candidates(size, rng)
            counts += np.bincount(label[ok], minlength=self.k)
            drawn += size
        self.rates = counts / drawn
        total = counts.sum() / drawn
        if total < 1e-4:
            raise ParamError("gamma", self.gamma, f"smaller: only {total:.1e} of the x uniform in the rho-ball have margin "
                             f">= gamma ({drawn} pilot draws; typical margins are ~rho/sqrt(d) = "
                             f"{self.rho / math.sqrt(self.d):.3g}): "
                             "lower gamma, raise rho or lower d")
        if self.rates.min() < 1e-4 / self.k:
            j = int(np.argmin(self.rates))
            raise ParamError("gamma", self.gamma, f"smaller: class {j} accepts only {self.rates[j]:.1e} of the candidates "
                             f"({drawn} pilot draws): lower gamma or raise rho")
        return int(counts.sum()), drawn

    def check_cost(self, count: int) -> None:
        """Refuse a sample whose rejection sampling would draw more than MAX_FLOATS coordinates."""
        candidates = count * float(np.max(self.priors / self.rates))
        if candidates * self.d > self.MAX_FLOATS:
            raise ParamError("gamma", self.gamma, f"smaller: only {self.rates.sum():.1e} of the candidates are accepted, so "
                             f"{count} examples need ~{candidates:.1e} candidates in d={self.d}: lower gamma, raise rho, "
                             "or lower n_test or n")

    def sample(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
        """``count`` examples (X, noisy y, clean y) and (accepted, drawn) candidate counts."""
        k, d = self.k, self.d
        clean = rng.choice(k, size=count, p=self.priors).astype(np.int64)
        need = np.bincount(clean, minlength=k)
        pools: list[list[np.ndarray]] = [[] for _ in range(k)]
        have = np.zeros(k, dtype=np.int64)
        accepted = drawn = 0
        while (have < need).any():
            missing = need - have
            expected = float(np.max(np.where(missing > 0, missing / self.rates, 0.0)))
            size = int(min(max(1.1 * expected + 64, 256), max(1024, self.BATCH_ELEMENTS // d)))
            x, label, ok = self.candidates(size, rng)
            accepted, drawn = accepted + int(ok.sum()), drawn + size
            for j in np.flatnonzero(missing > 0):
                rows = np.flatnonzero(ok & (label == j))[: missing[j]]
                pools[j].append(x[rows])
                have[j] += rows.size
        X = np.empty((count, d))
        for j in range(k):
            if need[j]:
                X[clean == j] = np.concatenate(pools[j])
        y = clean
        if self.noise > 0:  # last draw: the noise changes labels only
            flip = rng.random(count) < self.noise
            y = np.where(flip, (clean + rng.integers(1, k, size=count)) % k, clean)
        return np.ascontiguousarray(X), y.astype(np.int64), clean, (accepted, drawn)

    def margin_lower(self, X: np.ndarray, y: np.ndarray) -> float:
        """Rigorous lower bound of min_i W*_{y_i}.x_i - max_{j != y_i} W*_j.x_i."""
        if X.shape[0] == 0:
            return math.nan
        rows = np.arange(X.shape[0])
        scores = X @ self.W.T
        top = scores[rows, y].copy()
        scores[rows, y] = -np.inf
        a = np.abs(X) @ self.absW.T
        err = err_factor(self.d + 2) * (a[rows, y] + a.max(axis=1))
        lo = float(np.min(top - scores.max(axis=1) - err))
        return lo * (1.0 - 4.0 * UNIT_ROUNDOFF) if lo > 0 else lo * (1.0 + 4.0 * UNIT_ROUNDOFF)


class MulticlassMargin(Source):
    """Multiclass data with a known W* and margin gamma (docs/bounds.md section 9; UML section 17.2).

    W* in R^{k x d} has ||W*||_F = 1 (:func:`_w_star`: a rotated centred regular simplex for k <= d + 1,
    a regular k-gon in a random plane otherwise; all classes have equal volumes). A
    label y is drawn from the priors (proportional to prior_decay^j), then x uniform in the rho-ball
    conditioned on y = argmax_j W*_j.x and on the margin W*_y.x - max_{j != y} W*_j.x >= gamma
    (rejection sampling in batches). Hence L_D^{g-hinge}(W*/gamma) = 0 (exactly, in floating point:
    see the module docstring) and ||x|| <= rho = R. With ``noise`` p, y is then replaced by a uniform
    other label with probability p. The training sample, the test sample and the pilot estimate of the
    acceptance rates use separate streams spawned from the generator's rng; :meth:`MulticlassDataset.draw`
    uses the rng it is given.

    Parameters
    ----------
    k : number of classes (>= 2).
    gamma : margin (> 0, and below :func:`largest_margin`, e.g. rho sqrt(k)/(k - 1) when k <= d + 1;
        acceptance falls fast as gamma nears it, and a hopeless pilot acceptance is refused).
    rho : radius of the ball x is uniform in (R = rho).
    d : dimension (>= 2).
    n : training sample size.
    n_test : held-out sample size (>= 1000; docs/bounds.md section 9 asks >= 1e5 for population estimates).
    noise : probability in [0, 1) that a label is replaced by a uniform other label.
    prior_decay : class priors proportional to prior_decay^j, j = 0..k-1 (1: uniform).

    Examples
    --------
    >>> ds = MulticlassMargin(k=5, gamma=0.05, rho=1.0, d=10, n=500, n_test=1000).generate(np.random.default_rng(0))
    >>> ds.X.shape, ds.stats.R, bool(ds.stats.margin >= 0.05), ds.population
    ((500, 10), 1.0, True, 'D')
    """

    name = "multiclass_margin"
    kind = "multiclass"
    params = (
        Param("k", int, at_least(2), default=5),
        Param("gamma", float, above(0).because("and below the largest margin in the rho-ball")),
        RHO,
        Param("d", int, at_least(2), default=10),
        Param("n", int, at_least(1), default=1000),
        Param("n_test", int, lambda v: v >= 1000, "an integer >= 1000", default=100_000),
        Param("noise", float, lambda v: 0 <= v < 1, "a probability in [0, 1)", default=0.0),
        Param("prior_decay", float, lambda v: 0 < v <= 1, "a number in (0, 1] (1: uniform class priors)", default=1.0),
    )

    def check(self) -> None:
        """Raise :class:`pipeline.params.ParamError` on an invalid parameter (before any sampling)."""
        check_params(self)
        check_margin_scale(self.gamma, self.rho)
        top = largest_margin(int(self.k), int(self.d), float(self.rho))
        if self.gamma >= top:
            raise ParamError("gamma", self.gamma, f"< {top:.4g}, the largest margin of a point of the rho-ball for k={self.k}, "
                             f"d={self.d} (lower gamma or raise rho)")
        k, d, n, n_test = int(self.k), int(self.d), int(self.n), int(self.n_test)
        batch = max(1024, _MarginSampler.BATCH_ELEMENTS // d)  # candidates per batch
        # the samples (accepted pools, their concatenation, the result), a batch of candidates (x, |x|, the
        # scores and their bounds), W* and |W*|, and the simplex's k x k SVD and d x k QR
        check_sizes({"n": (self.n, 8.0 * 3 * n * d), "n_test": (self.n_test, 8.0 * 3 * n_test * d),
                     "k": (self.k, 8.0 * 5 * batch * k + 8.0 * 4 * k * d + (8.0 * 4 * k * k if k <= d + 1 else 0.0)),
                     "d": (self.d, 8.0 * 3 * batch * d)}, "lower n, n_test, k or d")

    def priors(self) -> np.ndarray:
        p = float(self.prior_decay) ** np.arange(int(self.k), dtype=np.float64)
        return p / p.sum()

    def generate(self, rng: np.random.Generator) -> MulticlassDataset:
        self.check()
        w_rng, pilot_rng, train_rng, test_rng = rng.spawn(4)
        W = _w_star(int(self.k), int(self.d), w_rng)
        sampler = _MarginSampler(W, float(self.gamma), float(self.rho), self.priors(), float(self.noise))
        accepted, drawn = sampler.pilot(pilot_rng)
        sampler.check_cost(int(self.n) + int(self.n_test))
        X, y, clean, (a1, n1) = sampler.sample(int(self.n), train_rng)
        X_test, y_test, _, (a2, n2) = sampler.sample(int(self.n_test), test_rng)
        stats = MulticlassStats(m=int(self.n), d=int(self.d), k=int(self.k), R=float(self.rho),
                                margin=sampler.margin_lower(X, clean),
                                acceptance=(accepted + a1 + a2) / (drawn + n1 + n2))
        return MulticlassDataset(self.name, X, y, int(self.k), stats, X_test, y_test, "D", W, float(self.gamma),
                                 sampler=sampler)


# --- scikit-learn's bundled multiclass sets --------------------------------------------------------

MULTICLASS_BUNDLED = ("digits", "iris", "wine")


class MulticlassBundled(Source):
    """A scikit-learn bundled multiclass set as a finite population S (docs/bounds.md section 7, pitfalls).

    S is the population D: X_test is S itself and :meth:`MulticlassDataset.draw` samples S with
    replacement, so a risk measured on X_test is exactly L_D = L_S (the risk the SGD guarantee then
    bounds). R is :func:`pipeline.solvers.certified.radius` over S after preprocessing (the vectors the
    learner sees): it bounds every row of S, hence every example drawn from it.

    Training sample. Without ``sample``, X, y is S itself and the rng is not used (multiclass_sgd draws
    its own examples from S). With ``sample`` = M, X, y is M examples drawn i.i.d. from S with
    replacement with the dataset's rng (one :meth:`MulticlassDataset.draw`) and ``stats.m`` = M: the
    m i.i.d. draws from D that UML Cor. 17.1 speaks of, so the multiclass SVM is judged on the population
    S, not on its own training set (where RLM optimality alone keeps the excess below lam B^2, half the
    bound: docs/bounds.md section 7, Cor. 17.1). algorithm=multiclass_svm refuses a bundled set without
    a sample.

    Parameters
    ----------
    source : digits (k = 10), iris (k = 3) or wine (k = 3).
    standardize, unit_ball : see :func:`pipeline.data.real.preprocess` (computed on the whole of S).
    sample : training examples drawn from S with replacement (an integer >= 1), or None: train on S.

    Examples
    --------
    >>> ds = MulticlassBundled(source="iris", unit_ball=True).generate(np.random.default_rng(0))
    >>> ds.X.shape, ds.k, ds.population, bool(ds.stats.R <= 1.0 + 1e-15)
    ((150, 4), 3, 'S', True)
    >>> drawn = MulticlassBundled(source="iris", sample=100).generate(np.random.default_rng(0))
    >>> drawn.X.shape, drawn.X_test.shape, drawn.stats.m
    ((100, 4), (150, 4), 100)
    """

    name = "multiclass_bundled"
    kind = "multiclass"
    params = (
        Param("source", str, lambda v: v in MULTICLASS_BUNDLED, f"one of {', '.join(MULTICLASS_BUNDLED)}", default="iris"),
        *PREPROCESS[:2],
        Param("sample", int, lambda v: v >= 1, "an integer >= 1 (training examples drawn from the set with "
              "replacement) or null (train on the whole set)", nullable=True, default=None),
    )

    def get_params(self) -> dict[str, object]:
        params = super().get_params()
        if params["sample"] is None:  # unset: the run keys (Job.key) of the configs from before it existed
            del params["sample"]
        return params

    def check(self) -> None:
        check_params(self)
        if self.sample is not None:  # the drawn training sample, and the index and copy of the draw
            check_sizes({"sample": (self.sample, (3 * 8.0 * self.read()[0].shape[1] + 16.0) * int(self.sample))},
                        "lower sample")
        labels = self.read()[1]
        check_labels(labels, int(labels.max()) + 1 if labels.size else 0, self.source)

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        return _bundled_multiclass(self.source)

    def generate(self, rng: np.random.Generator) -> MulticlassDataset:
        self.check()
        X, labels = self.read()
        k = int(labels.max()) + 1
        y = check_labels(labels, k, self.source)
        X = preprocess(X, self.standardize, self.unit_ball, 0.0)
        stats = MulticlassStats(m=int(X.shape[0]), d=int(X.shape[1]), k=k, R=radius(X), margin=math.nan,
                                acceptance=math.nan)
        population = MulticlassDataset(self.name, X, y, k, stats, X, y, "S", None, None)
        if self.sample is None:
            return population
        from dataclasses import replace

        X_train, y_train = population.draw(int(self.sample), rng)  # the same law as every later draw
        return replace(population, X=X_train, y=y_train, stats=replace(stats, m=int(self.sample)))


@functools.lru_cache(maxsize=None)
def _bundled_multiclass(source: str) -> tuple[np.ndarray, np.ndarray]:
    import sklearn.datasets

    X, labels = getattr(sklearn.datasets, f"load_{source}")(return_X_y=True)
    return X.astype(np.float64), labels.astype(np.int64)
