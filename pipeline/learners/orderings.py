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
"""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

ORDERINGS = ("given", "random", "adversarial")
BUDGET = 400  # the local search's evaluations (runs of the learner over the reordered sample)

Evaluate = Callable[[np.ndarray], int]  # an order (a permutation of the rows) -> the learner's mistakes under it


def choose(ordering: str, n: int, rng: np.random.Generator, evaluate: Evaluate,
           greedy: Callable[[], np.ndarray]) -> np.ndarray | None:
    """The permutation a run presents under ``ordering`` (None: the given order). ``random`` draws one
    permutation from ``rng``; ``adversarial`` draws the same one first, then searches
    (:func:`adversarial_order`) from it, the given order and ``greedy()``, with ``evaluate`` the learner's
    mistakes under an order."""
    if ordering == "given":
        return None
    drawn = rng.permutation(n)
    if ordering == "random":
        return drawn
    found, _ = adversarial_order(evaluate, n, rng, [np.arange(n), drawn, greedy()], BUDGET)
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
    for t in range(n):
        i = int(np.argmin(np.where(remaining, scores, np.inf)))
        order[t], remaining[i] = i, False
        s = scores[i]  # y_i w.x_i
        wrong = s <= 0.0 if tie == "mistake" else (s < 0.0 or (s == 0.0 and (tie == "negative") == (y[i] > 0)))
        if wrong:  # w += y_i x_i: every score moves by z_j . z_i
            zi = Z[i]
            scores += np.asarray(Z @ (zi.T if sparse.issparse(Z) else zi)).ravel()
    return order


def adversarial_order(evaluate: Evaluate, n: int, rng: np.random.Generator, candidates: list[np.ndarray],
                      budget: int = BUDGET) -> tuple[np.ndarray, int]:
    """The order with the most mistakes found: the best of ``candidates``, then improved by random moves
    (swap two positions, or move one example to the front), each kept when the mistakes do not fall.
    Returns (order, its mistakes)."""
    best, most = candidates[0], evaluate(candidates[0])
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
