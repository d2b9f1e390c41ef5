"""The order a mistake-driven learner is shown a fixed sample: as given, at random, or chosen by an
adversary to maximise its mistakes (docs/bounds.md section 1, "Orderings").

A mistake bound such as Novikoff's holds for *every* order of the sample, so the order a run happens to use
says how hard that run tested the bound: a ratio measured/bound of 0.2 under a random order cannot tell
the theorem's slack from easy data. ``ordering=adversarial`` searches for a bad order for the learner at
hand, so the table can show measured(random) <= measured(adversarial) <= bound, setting by setting.

The adversary only *reorders*: every pass presents each example of the sample once, in one permutation
used for every pass. So the statistics the bounds read (R, the margin, the comparators' hinge sums over
passes x the sample) are those of every ordering, and each bound applies as it does to the given order.

The search (:func:`adversarial_order`) is a heuristic over permutations, checked against brute force on
small samples (tests/test_orderings.py):

1. candidates: the given order, the random order of ``ordering=random`` (the same draw from the same
   stream, so the adversary never reports fewer mistakes than either), and the greedy order, which
   presents at each step, among the examples not yet shown, the one the current weights get most wrong
   (lowest y w.x);
2. local search from the best candidate: a random move (swap two positions, or bring one example to the
   front), kept when the mistakes do not fall, ``budget`` evaluations in all, each a compiled run.

Cost. The search is 3 + ``budget`` runs of the learner over the sample, each about what ``ordering=given`` costs.
:class:`Search` says it up front and shows its progress (the adaptive adversary of
:mod:`pipeline.learners.adaptive` uses it too): the first runs are timed, the whole search estimated from them
(``[estimate]`` on the ``boundlab`` log when it reaches a few seconds, :func:`pipeline.sweep.progress.estimate`), then a
``[progress]`` line every few seconds; a search estimated above :data:`MAX_SECONDS` is refused in one line naming
``algorithm.ordering`` (:class:`pipeline.params.ParamError`) before it spends that time. Every step is Python
between compiled calls of one run each, so Ctrl-C and SIGTERM stop it within a run.
"""

from __future__ import annotations

import itertools
import time
from typing import Callable

import numpy as np

from pipeline.params import ParamError
from pipeline.sweep.progress import Progress, duration, estimate

# Tie conventions for w.x = 0 (docs/bounds.md section 1): every update has y w.x <= 0 under each of them,
# so Novikoff's bound holds for all three.
TIES = {
    "negative": 0,  # [S0]: sgn(z) = +1 iff z > 0, so sgn(0) = -1
    "positive": 1,  # [S2]: sign(0) = +1
    "mistake": 2,  # [S1], UML 21.4: update iff y w.x <= 0, a tie is always a mistake
}  # the Perceptron's, here so that it and its adversaries (pipeline.learners.adaptive) share them

ORDERINGS = ("given", "random", "adversarial")
BUDGET = 400  # the local search's evaluations (runs of the learner over the reordered sample)
MAX_SECONDS = 3600.0  # a search (adversarial order, adaptive adversary) estimated above this is refused up front
WARM = 1.0  # s: a first timed run shorter than this may be mostly one-off cost (a kernel loaded): a second is timed

Evaluate = Callable[[np.ndarray], int]  # an order (a permutation of the rows) -> the learner's mistakes under it


class Search:
    """A long search's cost said up front, refused when out of reach, and its progress.

    ``units`` pieces of work (rollouts, runs of the learner) of ``unit`` at ``per_unit`` seconds each (measured on
    this sample; an upper estimate where the caller has one): above :data:`MAX_SECONDS` in all, a
    :class:`pipeline.params.ParamError` naming ``algorithm.ordering`` = ``value``, which says what the option may
    be instead (``instead``), what the search is (``detail``) and how long it would take; otherwise one
    ``[estimate]`` line when it reaches a few seconds (:func:`pipeline.sweep.progress.estimate`) and ``update(done)``
    logs a ``[progress]`` line every few seconds (:class:`pipeline.sweep.progress.Progress`).
    """

    def __init__(self, what: str, units: float, unit: str, per_unit: float, value: str, instead: str,
                 detail: str) -> None:
        self.seconds = float(units) * float(per_unit)
        if self.seconds > MAX_SECONDS:
            raise ParamError("algorithm.ordering", value,
                             f"{instead}: {detail} would take ~{duration(self.seconds)} here, more than the "
                             f"{duration(MAX_SECONDS)} a search may take")
        estimate(what, self.seconds, detail)
        self.progress = Progress(what, units, unit)

    def update(self, done: float) -> str | None:
        return self.progress.update(done)


class _Timed:
    """``evaluate`` with the search's cost measured on its first runs (the second too when the first was under
    :data:`WARM`: it may be mostly a one-off cost), then its :class:`Search` updated after every run."""

    def __init__(self, evaluate: Evaluate, total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.evaluate, self.total, self.clock = evaluate, total, clock
        self.done = 0
        self.times: list[float] = []
        self.search: Search | None = None

    def __call__(self, order: np.ndarray) -> int:
        start = self.clock()
        m = self.evaluate(order)
        self.done += 1
        if self.search is None:
            self.times.append(self.clock() - start)
            if self.times[0] >= WARM or len(self.times) == 2 or self.done == self.total:
                per = min(self.times)
                self.search = Search("the adversarial ordering", self.total, "runs", per, "adversarial",
                                     "given or random here, or adversarial on a smaller sample (or fewer passes)",
                                     f"its {self.total:,} runs of the learner at ~{duration(per)} each")
        if self.search is not None:
            self.search.update(self.done)
        return m


def choose(ordering: str, n: int, rng: np.random.Generator, evaluate: Evaluate,
           greedy: Callable[[], np.ndarray]) -> np.ndarray | None:
    """The permutation a run presents under ``ordering`` (None: the given order). ``random`` draws one
    permutation from ``rng``; ``adversarial`` draws the same one first, then searches
    (:func:`adversarial_order`) from it, the given order and ``greedy()``, with ``evaluate`` the learner's
    mistakes under an order: its first runs timed, the search estimated, refused above :data:`MAX_SECONDS`,
    and its progress shown (:class:`Search`)."""
    if ordering == "given":
        return None
    drawn = rng.permutation(n)
    if ordering == "random":
        return drawn
    timed = _Timed(evaluate, 3 + BUDGET)
    given = np.arange(n)
    first = timed(given)  # timed first: a search out of reach is refused after one or two runs
    found, _ = adversarial_order(timed, n, rng, [given, drawn, greedy()], BUDGET, known=first)
    return found


def greedy_halving(table: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Halving's greedy order over a table of functions (|H| x n, +1/-1) and the labels: at each step, among
    the examples not yet shown, one on which the version space's majority vote (a tie going to +1) is
    wrong, the one whose wrong majority is smallest (it keeps the most hypotheses alive for later
    mistakes); when the vote is right on all of them, the first in row order."""
    n = table.shape[1]
    alive = np.ones(table.shape[0], dtype=bool)
    remaining = np.ones(n, dtype=bool)
    order = np.empty(n, dtype=np.int64)
    votes = table.sum(axis=0, dtype=np.int64)  # over the version space; >= 0: the majority says +1 (a tie goes to +1)
    against = (table != labels[None, :]).sum(axis=0, dtype=np.int64)  # the hypotheses each example would remove
    for t in range(n):
        wrong = remaining & (np.where(votes >= 0, 1, -1) != labels)
        if wrong.any():
            i = int(np.flatnonzero(wrong)[np.argmin(against[wrong])])
        else:
            i = int(np.flatnonzero(remaining)[0])
        order[t], remaining[i] = i, False
        dead = alive & (table[:, i] != labels[i])
        if dead.any():  # each hypothesis leaves once: O(|H| n) over the pass
            votes -= table[dead].sum(axis=0, dtype=np.int64)
            against -= (table[dead] != labels[None, :]).sum(axis=0, dtype=np.int64)
            alive &= ~dead
    return order


def greedy_order(X: np.ndarray, y: np.ndarray, tie: str) -> np.ndarray:
    """One pass of the Perceptron in which each next example is the remaining one with the lowest y w.x
    (the most wrong under the current w; the first such in row order): the order it presented.

    The scores y_i w.x_i of every row are kept up to date, one product with Z = diag(y) X per update, so a
    pass costs O(n d) per mistake plus O(n) per step. ``X`` may be dense or scipy sparse."""
    from scipy import sparse

    n = X.shape[0]
    Z = sparse.csr_matrix(sparse.diags(y) @ X) if sparse.issparse(X) else y[:, None] * np.asarray(X, dtype=np.float64)
    scores = np.zeros(n)
    remaining = np.ones(n, dtype=bool)
    order = np.empty(n, dtype=np.int64)
    progress = Progress("the adversarial ordering's greedy order", n, "examples")  # O(n) a step: long at large n
    for t in range(n):
        if t % 1024 == 0:
            progress.update(t)
        i = int(np.argmin(np.where(remaining, scores, np.inf)))
        order[t], remaining[i] = i, False
        s = scores[i]  # y_i w.x_i
        wrong = s <= 0.0 if tie == "mistake" else (s < 0.0 or (s == 0.0 and (tie == "negative") == (y[i] > 0)))
        if wrong:  # w += y_i x_i: every score moves by z_j . z_i
            zi = Z[i]
            scores += np.asarray(Z @ (zi.T if sparse.issparse(Z) else zi)).ravel()
    return order


def adversarial_order(evaluate: Evaluate, n: int, rng: np.random.Generator, candidates: list[np.ndarray],
                      budget: int = BUDGET, known: int | None = None) -> tuple[np.ndarray, int]:
    """The order with the most mistakes found: the best of ``candidates``, then improved by random moves
    (swap two positions, or move one example to the front), each kept when the mistakes do not fall.
    ``known``: the first candidate's mistakes, already evaluated. Returns (order, its mistakes)."""
    best, most = candidates[0], evaluate(candidates[0]) if known is None else int(known)
    for c in candidates[1:]:
        m = evaluate(c)
        if m > most:
            best, most = c, m
    if n < 2:
        return best, most
    current = best.copy()
    for _ in range(budget):
        trial = current.copy()
        i, j = rng.integers(n, size=2)
        if rng.random() < 0.5:
            trial[i], trial[j] = trial[j], trial[i]
        else:  # bring trial[j] to position i, shifting the rest
            moved = trial[j]
            trial = np.insert(np.delete(trial, j), i, moved)
        m = evaluate(trial)
        if m >= most:
            current = trial
            if m > most:
                best, most = trial.copy(), m
    return best, most


def worst_order(evaluate: Evaluate, n: int) -> tuple[np.ndarray, int]:
    """The true worst case by brute force over all n! orders (small n only: the tests' truth)."""
    if n > 9:
        raise ValueError(f"brute force over {n}! orders: use n <= 9")
    best, most = np.arange(n), -1
    for p in itertools.permutations(range(n)):
        m = evaluate(np.array(p))
        if m > most:
            best, most = np.array(p), m
    return best, most
