"""An adaptive adversary for the Perceptron: the most mistakes it can be made to make on a fixed sample
(docs/bounds.md section 1, Novikoff's bound and "Orderings").

:mod:`pipeline.learners.orderings` only *reorders* the sample (one permutation, every pass). Novikoff's
bound is stronger: it holds for every sequence whose examples come from a separable sample, repetition
allowed, chosen with knowledge of the current weights. This module plays that game.

**The game.** A fixed sample (X, y), labels +1/-1. The Perceptron starts at w = 0. At each step the
adversary presents any example of the sample; on a mistake under the learner's ``tie`` convention
(:data:`pipeline.learners.orderings.TIES`) w += y_i x_i, otherwise nothing changes. Presenting an example
that is classified correctly is a no-op, so w.l.o.g. the adversary presents a currently misclassified
one, and the game ends when none is misclassified (on separable data this always happens, after at most
floor((R/gamma)^2) updates). Its *value* is the largest number of mistakes over all choice sequences.
It is also the worst case of the batch Perceptron whose rule may present *any* misclassified example at
each step, and it is at least the mistakes of every permutation, one pass or passes until a clean pass
(the non-mistakes of a pass are no-ops, and a sequence can always be extended until the game ends).

With s_j = y_j w.x_j the score of row j, the mistake rule is, per convention:

- ``negative`` (sgn 0 = -1): s_j < 0, or s_j = 0 and y_j = +1;
- ``positive`` (sgn 0 = +1): s_j < 0, or s_j = 0 and y_j = -1;
- ``mistake``: s_j <= 0.

A state is the vector c of update counts per example (w = sum_i c_i y_i x_i, s = G c with
G_ij = y_i y_j x_i.x_j): what :func:`exhaustive` memoises on.

Two players:

- :func:`exhaustive`: the exact value and an optimal sequence, by depth-first search with memoisation on
  c, for small samples (n <= 8 by default). **Exact arithmetic**: every float64 entry of X is a dyadic
  rational, so X scaled by the largest power of two among the denominators is an integer matrix, and the
  Gram matrix and every score are computed in Python integers: the sign of each score, zero included, is
  the exact one. This is the game on the exact vectors handed to the learner; the project's learner
  computes w.x in floating point, so it agrees with the exact game unless a score along a sequence lies
  within rounding of 0 without being 0 (exact zeros of the tight construction and of w = 0 are seen as
  zeros by both). The tests replay the optimal sequences through the learner.
- :func:`adaptive`: a heuristic lower bound of the value, for any n. Greedy first (present the most-wrong
  misclassified example: lowest s_j, the first in row order on ties), then ``budget`` randomised greedy
  rollouts from w = 0, keeping the longest. A rollout with noise level sigma presents, at each step, the
  misclassified example with the lowest s_j + sigma m xi_j, xi_j standard normal and m the mean |s_j|
  over the misclassified rows (a scale-free perturbation of the greedy choice; when every misclassified
  score is 0, as at w = 0, a uniform choice among them). sigma is drawn log-uniform within one of
  ``LEVELS`` log-spaced bands of [0.01, 10]: each band once, then with probability ``EXPLORE`` a random
  band, otherwise the band with the longest rollouts on average (an epsilon-greedy bandit). Why: on the
  experiment's samples (n = 500, d = 10, gamma = 0.05, seed 0) greedy made 163 mistakes; 100 rollouts of
  noisy greedy reached 191-197 for a fixed sigma in 0.01-0.1 but only 144 at sigma = 1, against 170-182
  for epsilon-greedy among the k = 3..10 most wrong, 183 for a local search that keeps the best
  sequence's prefix and re-plays its tail with noise (200 rollouts), 85 for uniformly random
  misclassified choices and 63 for the least-wrong rule. On samples of 4-8 points the optimum often
  needs far-from-greedy choices: small sigma alone reached the exact value on 19 of 30 samples (200
  rollouts), sigma up to 10 on 28-29 of 30. The bandit serves both. Random restarts of a near-greedy
  policy explore the deep game tree (hundreds of levels and of branches) better than a limited
  discrepancy search, whose budget would go to deviations near the root. Float arithmetic: w
  accumulates y_i x_i exactly as the learner's kernel does (bit-identical w) and the scores are one
  product Z w per update (Z = diag(y) X), so they differ from the learner's only in the summation order.

**Cost.** A rollout is one n x d product per update (~10-25 us at n = 500-2000, d = 10-100), and on separable
data every rollout ends within Novikoff's floor((R/gamma)^2) updates, so at a tiny margin the search is
``budget`` + 1 rollouts of up to millions of updates: hours. :func:`adaptive` says so before it starts, with the
mechanism of the adversarial ordering (:class:`pipeline.learners.orderings.Search`). The cost of an update is
timed on a short prefix of a noisy rollout on this sample (its own generator: the search's draws are unchanged)
and the search estimated from it and ``bound`` (the rollouts' certified cap) before any rollout: an upper
estimate, refused at once when greedy alone could take more than :data:`GREEDY_SECONDS` and the whole search more
than :data:`pipeline.learners.orderings.MAX_SECONDS`. Then again from the greedy rollout's length and time (a noisy
step counted :data:`NOISE_COST` greedy ones): refused above MAX_SECONDS. A refusal is one line naming
``algorithm.ordering`` and the margins that would fit; otherwise the estimates are ``[estimate]`` lines and the
search logs ``[progress]`` lines, also within a long rollout. Every step is Python around one numpy product, so
Ctrl-C and SIGTERM stop it at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike

import pipeline.learners.orderings as orderings
from pipeline.data.dataset import Matrix
from pipeline.learners.orderings import TIES, Search
from pipeline.sweep.progress import Progress, estimate

MAX_N = 8  # exhaustive: the largest sample by default
MAX_STATES = 200_000  # exhaustive: the memoised states (update-count vectors) by default
MAX_UPDATES = 1_000_000  # adaptive: the longest rollout (separable data end after floor((R/gamma)^2) updates)
SIGMA = (0.01, 10.0)  # adaptive: the range of the rollouts' noise levels
LEVELS = 6  # adaptive: log-spaced bands of noise levels the rollouts choose among
EXPLORE = 0.3  # adaptive: the probability that a rollout draws its band at random
TIMED = 256  # adaptive: the updates of the noisy prefix an update's cost is timed on (at most ~TIMED_SECONDS)
TIMED_SECONDS = 0.2
TICK = 1024  # adaptive: a long rollout updates the search's progress every TICK updates
NOISE_COST = 2.0  # adaptive: a noisy step's cost over a greedy one's (a normal draw per misclassified row; 1.5-2.3
# measured at n = 500-2000, d = 10-50)
GREEDY_SECONDS = 60.0  # adaptive: a search whose upper estimate passes MAX_SECONDS is refused before greedy when
# greedy's own rollout could take more than this; otherwise greedy runs and the estimate from its length decides


@dataclass(frozen=True)
class Play:
    """The adversary's result.

    value : mistakes of the Perceptron on ``sequence`` (the game's value for :func:`exhaustive`, the best
        found for :func:`adaptive`).
    sequence : the rows presented, in order, with repetition; every one is a mistake, and after the last
        no example is misclassified.
    trace : :func:`adaptive`: the best value found after greedy (``trace[0]``) and after each further
        rollout (``trace[r]``, r = 1..budget). :func:`exhaustive`: ``[value]``.
    greedy : the value of the greedy rollout (most wrong first).
    states : :func:`exhaustive`: the states (update-count vectors) it memoised; :func:`adaptive`: the
        rollouts played (budget + 1).
    """

    value: int
    sequence: np.ndarray
    trace: np.ndarray = field(repr=False)
    greedy: int
    states: int


def _sample(X: Matrix, y: ArrayLike, tie: str) -> tuple[np.ndarray, np.ndarray]:
    from scipy import sparse

    if tie not in TIES:
        raise ValueError(f"tie={tie!r}: must be one of {', '.join(TIES)}")
    X = X.toarray() if sparse.issparse(X) else X
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64).ravel()
    if X.ndim != 2 or y.shape[0] != X.shape[0]:
        raise ValueError(f"X must be n x d and y of length n: got X {X.shape}, y {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite")
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError("y must hold labels +1 and -1")
    return X, y


def _zero_is_mistake(y: np.ndarray, tie: str) -> np.ndarray:
    """Per row: whether a score s_j = y_j w.x_j of exactly 0 is a mistake under ``tie``."""
    if tie == "mistake":
        return np.ones(y.shape[0], dtype=bool)
    return y > 0 if tie == "negative" else y < 0


def exact_gram(X: np.ndarray, y: np.ndarray) -> list[list[int]]:
    """G_ij = y_i y_j x_i.x_j times 4^k for one k >= 0, in Python integers: exact (every float64 is
    p / 2^e, so X times the largest 2^e among its entries is an integer matrix). The positive factor
    changes no sign."""
    ratios = [[float(v).as_integer_ratio() for v in row] for row in X]
    scale = max((q for row in ratios for _, q in row), default=1)
    Z = [[int(yi) * p * (scale // q) for p, q in row] for row, yi in zip(ratios, y)]
    return [[sum(a * b for a, b in zip(zi, zj)) for zj in Z] for zi in Z]


def exhaustive(X: Matrix, y: ArrayLike, tie: str = "negative", max_states: int = MAX_STATES,
               max_n: int = MAX_N) -> Play:
    """The exact value of the game (module docstring) and an optimal sequence: depth-first search over
    the adversary's choices, memoised on the vector of update counts, in exact integer arithmetic.

    Among optimal choices the first in row order is kept, so the sequence is deterministic.

    Raises ValueError naming ``max_n`` when the sample has more rows, and ``max_states`` when more states
    would be memoised (non-separable data never end: they always exceed it).
    """
    X, y = _sample(X, y, tie)
    n = X.shape[0]
    if n > max_n:
        raise ValueError(f"exhaustive: X has {n} rows, more than max_n={max_n} (the search is exponential "
                         "in n): raise max_n or use adaptive()")
    G = exact_gram(X, y)
    zero = [bool(v) for v in _zero_is_mistake(y, tie)]

    def wrong(s: list[int]) -> list[int]:
        return [j for j in range(n) if s[j] < 0 or (s[j] == 0 and zero[j])]

    memo: dict[tuple[int, ...], tuple[int, int]] = {}  # counts -> (further mistakes, the best first row or -1)
    root = (0,) * n
    # frames: [counts, scores, misclassified rows, next choice, best, best row, the row that led here]
    stack = [[root, [0] * n, wrong([0] * n), 0, 0, -1, -1]]
    while stack:
        frame = stack[-1]
        counts, s, moves, k = frame[0], frame[1], frame[2], frame[3]
        if k < len(moves):
            j = moves[k]
            frame[3] = k + 1
            child = counts[:j] + (counts[j] + 1,) + counts[j + 1:]
            if child in memo:
                v = 1 + memo[child][0]
                if v > frame[4]:
                    frame[4], frame[5] = v, j
                continue
            if len(memo) + len(stack) >= max_states:
                raise ValueError(f"exhaustive: more than max_states={max_states} states (update-count "
                                 "vectors); raise max_states, use a smaller sample or adaptive() "
                                 "(a non-separable sample never ends)")
            cs = [a + b for a, b in zip(s, G[j])]
            stack.append([child, cs, wrong(cs), 0, 0, -1, j])
        else:
            stack.pop()
            memo[counts] = (frame[4], frame[5])
            if stack:
                parent, v = stack[-1], 1 + frame[4]
                if v > parent[4]:
                    parent[4], parent[5] = v, frame[6]
    value, sequence, counts = memo[root][0], [], root
    while memo[counts][1] >= 0:
        j = memo[counts][1]
        sequence.append(j)
        counts = counts[:j] + (counts[j] + 1,) + counts[j + 1:]
    greedy = _rollout(y[:, None] * X, _zero_is_mistake(y, tie), None, 0.0, MAX_UPDATES).size
    return Play(value, np.array(sequence, dtype=np.int64), np.array([value]), greedy, len(memo))


def _rollout(Z: np.ndarray, zero: np.ndarray, rng: np.random.Generator | None, sigma: float,
             max_updates: int, tick: Callable[[int], object] | None = None, steps: int | None = None) -> np.ndarray:
    """One play from w = 0: the most wrong misclassified row each step (``rng`` None), or the lowest
    s_j + sigma m xi_j (module docstring). Returns the rows presented. ``tick(k)`` is called after every
    :data:`TICK` updates (progress); ``steps`` stops the play after that many (a prefix, to time it)."""
    n, d = Z.shape
    w, s = np.zeros(d), np.zeros(n)
    sequence: list[int] = []
    while True:
        wrong = np.flatnonzero((s < 0.0) | ((s == 0.0) & zero))
        if wrong.size == 0 or (steps is not None and len(sequence) >= steps):
            return np.array(sequence, dtype=np.int64)
        if tick is not None and sequence and len(sequence) % TICK == 0:
            tick(len(sequence))
        if len(sequence) >= max_updates:
            raise ValueError(f"adaptive: a rollout passed max_updates={max_updates} updates (is the sample "
                             "separable?): raise max_updates")
        v = s[wrong]
        if rng is not None and wrong.size > 1:
            m = float(np.mean(np.abs(v)))
            v = v + (sigma * m) * rng.standard_normal(wrong.size) if m > 0.0 else rng.random(wrong.size)
        i = int(wrong[np.argmin(v)])  # argmin: the first in row order on ties
        sequence.append(i)
        w += Z[i]  # y_i x_i, the product the learner's kernel adds: w is bit-identical to the learner's
        s = Z @ w


def update_seconds(Z: np.ndarray, zero: np.ndarray, max_updates: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per update of a rollout on this sample: a noisy rollout's prefix of up to :data:`TIMED` updates
    (fewer past :data:`TIMED_SECONDS`), timed, with its own generator (the search's draws are not touched). A
    noisy step costs more than a greedy one (the noise is drawn), so this errs on the high side. 0 when nothing
    is misclassified at w = 0."""
    rng, played, spent = np.random.default_rng(0), 0, 0.0
    while played < TIMED and spent < TIMED_SECONDS:
        start = clock()
        k = _rollout(Z, zero, rng, 0.1, max_updates, steps=min(32, TIMED - played)).size
        spent += clock() - start
        if k == 0:
            break
        played += k
        if k < 32:  # the game ended: the prefix is the whole play
            break
    return spent / played if played else 0.0


def _search(rollouts: int, length: int, per_update: float, bound: int | None, cap: bool) -> Search:
    """The adaptive search's :class:`pipeline.learners.orderings.Search`: ``rollouts`` of ``length`` updates at
    ``per_update`` seconds each; ``cap``: ``length`` is Novikoff's ``bound`` on this sample, every rollout's cap (an
    upper estimate), else greedy's length (a typical one). Refused above MAX_SECONDS, saying which margins fit."""
    seconds = rollouts * length * per_update
    instead = "given, random or adversarial on this sample"
    if bound is not None and seconds > orderings.MAX_SECONDS:  # the cost grows like the bound: what would fit
        instead += f", or adaptive where (R/gamma_lo)^2 <= {int(bound * orderings.MAX_SECONDS / seconds):,} (a larger margin)"
    each = f"up to {length:,} updates each (Novikoff's bound on this sample)" if cap else \
        f"about {length:,} updates each (greedy's)"
    return Search("the adaptive adversary", rollouts, "rollouts", length * per_update, "adaptive", instead,
                  f"its {rollouts:,} rollouts of {each} at ~{per_update * 1e6:.3g} us an update")


def adaptive(X: Matrix, y: ArrayLike, budget: int = 100, rng: np.random.Generator | int | None = 0,
             tie: str = "negative", max_updates: int = MAX_UPDATES, bound: int | None = None) -> Play:
    """A lower bound of the game's value on any sample: greedy (most wrong first), then ``budget``
    randomised greedy rollouts (module docstring), keeping the longest sequence (the earliest on ties).

    Deterministic given ``rng`` (a Generator, or a seed for :func:`numpy.random.default_rng`). The
    returned ``trace`` has budget + 1 entries: the best after greedy and after each rollout. Cost per
    rollout: one n x d product per update (milliseconds at n = 500, d = 10, a few hundred updates).
    ``bound``: the most updates a rollout can make (Novikoff's floor((R/gamma_lo)^2) on certified data). The
    search's cost is estimated (module docstring, "Cost"): before greedy from ``bound`` (an upper estimate,
    refused at once when greedy alone could take more than :data:`GREEDY_SECONDS` and the search more than
    :data:`pipeline.learners.orderings.MAX_SECONDS`), then from greedy's length (refused above MAX_SECONDS);
    a refusal is a :class:`pipeline.params.ParamError` naming ``algorithm.ordering``.
    Raises ValueError naming ``budget`` when it is negative and ``max_updates`` when a rollout passes it.
    """
    X, y = _sample(X, y, tie)
    if int(budget) != budget or budget < 0:
        raise ValueError(f"adaptive: budget={budget!r} must be an integer >= 0 (rollouts after greedy)")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    Z, zero = y[:, None] * X, _zero_is_mistake(y, tie)
    rollouts, per_update = int(budget) + 1, update_seconds(Z, zero, max_updates)
    length = int(max_updates)
    if bound is not None:  # every rollout ends within the bound: the search's upper estimate, before any rollout
        length = max(1, min(int(bound), int(max_updates)))
        if rollouts * length * per_update > orderings.MAX_SECONDS and length * per_update > GREEDY_SECONDS:
            _search(rollouts, length, per_update, bound, cap=True)  # raises: out of reach
        estimate("the adaptive adversary", rollouts * length * per_update,
                 f"its {rollouts:,} rollouts of up to {length:,} updates each (Novikoff's bound on this sample) at "
                 f"~{per_update * 1e6:.3g} us an update, at most (refined after the greedy rollout)")
    first = Progress("the adaptive adversary's greedy rollout", length, "updates at most")
    start = time.perf_counter()
    best = _rollout(Z, zero, None, 0.0, max_updates, first.update)
    greedy = best.size
    if greedy:  # greedy's own cost per update, deep in the game, a noisy step costing NOISE_COST times as much
        per_update = NOISE_COST * (time.perf_counter() - start) / greedy
    length = max(1, greedy)  # a typical rollout's length: the rest of the search is estimated from it
    search = _search(rollouts, length, per_update, bound, cap=False)
    search.update(1)

    def tick(r: int) -> Callable[[int], object]:  # progress within rollout r: its updates against greedy's
        return lambda k: search.update(r + min(k / length, 0.99))

    trace = np.empty(int(budget) + 1, dtype=np.int64)
    trace[0] = greedy
    edges = np.geomspace(SIGMA[0], SIGMA[1], LEVELS + 1)
    total, played = np.zeros(LEVELS), np.zeros(LEVELS)  # per noise level: summed lengths, rollouts
    for r in range(1, int(budget) + 1):
        if r <= LEVELS or rng.random() < EXPLORE:  # each level once, then explore ...
            b = (r - 1) % LEVELS if r <= LEVELS else int(rng.integers(LEVELS))
        else:  # ... or exploit the level with the longest rollouts on average (the first on ties)
            b = int(np.argmax(total / played))
        sigma = float(np.exp(rng.uniform(np.log(edges[b]), np.log(edges[b + 1]))))
        seq = _rollout(Z, zero, rng, sigma, max_updates, tick(r))
        total[b] += seq.size
        played[b] += 1
        if seq.size > best.size:
            best = seq
        trace[r] = best.size
        search.update(r + 1)
    return Play(int(best.size), best, trace, int(greedy), int(budget) + 1)
