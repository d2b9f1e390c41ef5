"""Weighted Majority's game: the largest number of mistakes an adversary can force on deterministic Weighted
Majority with factor beta, against an adversary whose best expert errs at most ``best_mistakes`` times; exact
arithmetic (fractions), over sequences of at most ``horizon`` rounds, or over all sequences at beta = 0 (a
finite game). An analysis tool (docs/bounds.md section 3, tests/test_games.py): no job calls it. The table's
layout, the distinct experts and the state budget are those of :mod:`pipeline.solvers.games` (Halving's game).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from pipeline.solvers.games import MAX_STATES, GameValue, _budget, _prepare

MAX_EXPERTS = 6  # distinct experts weighted_majority_value accepts
MAX_BEST_MISTAKES = 3  # its largest best_mistakes
MAX_HORIZON = 16  # its largest horizon


def _beta(beta: object) -> Fraction:
    """beta as an exact fraction: a float is taken at its exact binary value (the number a learner given
    that float holds); pass Fraction(3, 10) for exactly 3/10."""
    try:
        b = Fraction(beta)
    except (TypeError, ValueError) as e:
        raise ValueError(f"beta: must be a number in [0, 1), got {beta!r}") from e
    if not 0 <= b < 1:
        raise ValueError(f"beta: must be in [0, 1), got {beta!r}")
    return b


def weighted_majority_value(table: object, beta: object, best_mistakes: int, horizon: int | None = None,
                            max_states: int = MAX_STATES) -> GameValue:
    """The largest number of mistakes an adversary can force on deterministic Weighted Majority.

    The learner (``weighted_majority_kernel``, in exact arithmetic). Expert i (a distinct column) has made
    c_i mistakes so far and weighs beta^c_i; at beta = 0 the weights are the beta -> 0 limit of the normalised
    ones: 1 on the experts with the fewest mistakes so far, 0 elsewhere. The prediction is +1 if the weight
    saying +1 is at least the weight saying -1 (a tie goes to +1), else -1; every expert that disagrees with
    the label gets one more mistake.

    The game. The adversary picks any point and any label, repetitions allowed, subject to the best expert
    making at most m* = ``best_mistakes`` mistakes over the whole sequence, and may stop at any time; with
    ``horizon`` = T the sequence has at most T rounds. Counts never decrease, so "min_i c_i <= m* at the
    end" is the same as "at every step": a move is legal iff it keeps some expert at <= m*. The value is the
    supremum of the learner's mistakes; it never exceeds the [LW94] bound (ln|H| + m* ln(1/beta)) /
    ln(2/(1+beta)) (docs/bounds.md section 3), and grows with T up to the unbounded game's value.

    The search, and why it is exact. A state is the vector c of the experts' mistake counts (with the rounds
    left). A move whose label every expert gives is a no-op: nobody's count changes and the vote is unanimous
    (all the positive weight is on the label's side), so it is never a mistake and is skipped. Every other move
    raises some count, so the states form a DAG and

        val(c, r) = max over legal moves (x, y) of [learner errs at (c, x, y)] + val(c + wrong(x, y), r - 1),

    val(c, 0) = 0, memoised; weights are exact fractions beta^c_i, so ties are decided exactly. Branches are
    cut only at proven ceilings: a state's value never exceeds r (one mistake per round), nor, for beta > 0,
    the largest k with Phi(c) ((1+beta)/2)^k >= beta^m* (Phi = total weight: a mistake puts at least half
    of it on the wrong side, so it shrinks by (1+beta)/2, no round increases it, and the best expert keeps
    at least beta^m* to the end).

    - beta = 0: an expert with more than m* mistakes is never a leader while the best stays <= m*, so its
      weight is 0 for the rest of the game: counts are capped at m* + 1 without changing any vote, the
      constraint, or any future. A move that then changes nothing only adds mistakes to experts of weight
      0 (never a learner mistake: the leaders are all on the label's side) and is skipped. The capped states
      are finite and the game is exact without a horizon (``horizon=None`` allowed; any horizon >= |H| (m*+1)
      gives the same value). At m* = 0 it is the Halving game of :func:`halving_value`.
    - beta > 0: an expert's count can grow without end while another stays <= m*, and its ever smaller weight
      can still decide an exact tie, so no cap on counts is exact in general: a finite ``horizon`` is required
      and the value is that of the T-round game.

    Parameters
    ----------
    table : (m points, |H| experts), 0/1 or -1/+1; at most 6 distinct experts.
    beta : the factor, in [0, 1): a float (taken at its exact binary value), int, Fraction or a decimal string
        such as "0.3" (exactly 3/10).
    best_mistakes : m*, an integer in [0, 3].
    horizon : the largest number of rounds, an integer in [0, 16]; None only at beta = 0.
    max_states : budget of memoised states; beyond it a ValueError names ``max_states``.

    Returns
    -------
    GameValue(value, sequence, H): ``sequence`` (point, label) pairs, at most ``horizon`` of them.

    Examples
    --------
    >>> two_experts = np.array([[1, 0]])  # one point, the experts disagree on it
    >>> g = weighted_majority_value(two_experts, 0, 1)  # the tie goes to +1: -1, then always against the leader
    >>> g.value, g.sequence
    (3, ((0, -1), (0, 1), (0, -1)))
    >>> weighted_majority_value(two_experts, 0.5, 1, horizon=6).value  # the bound: 4.82
    3
    """
    b, m_star = _wm_arguments(beta, best_mistakes, horizon)
    t, points = _prepare(table)
    n = t.shape[1]
    if n > MAX_EXPERTS:
        raise ValueError(f"table: {n} distinct experts, more than the {MAX_EXPERTS} this exhaustive search accepts")
    game = _WeightedMajorityGame(_wm_moves(t), b, m_star, horizon, max_states)
    start = (tuple([0] * n), None if horizon is None else int(horizon))
    value = game.val(*start)
    return GameValue(int(value), _optimal_sequence(game.memo, start, points), n)


def _wm_arguments(beta: object, best_mistakes: int, horizon: int | None) -> tuple[Fraction, int]:
    """beta as an exact fraction and m* as an int, once beta, best_mistakes and horizon are checked (a ValueError
    names the first one out of range)."""
    b = _beta(beta)
    if isinstance(best_mistakes, bool) or not isinstance(best_mistakes, (int, np.integer)) \
            or not 0 <= best_mistakes <= MAX_BEST_MISTAKES:
        raise ValueError(f"best_mistakes: must be an integer in [0, {MAX_BEST_MISTAKES}], got {best_mistakes!r}")
    if horizon is None:
        if b != 0:
            raise ValueError("horizon: required when beta > 0 (an expert's count can grow without end and its weight "
                             "still decide exact ties, so only the game of at most horizon rounds is finite); "
                             f"an integer in [0, {MAX_HORIZON}]")
    elif isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or not 0 <= horizon <= MAX_HORIZON:
        raise ValueError(f"horizon: must be None (beta = 0 only) or an integer in [0, {MAX_HORIZON}], got {horizon!r}")
    return b, int(best_mistakes)


def _wm_moves(t: np.ndarray) -> list[tuple[int, int, tuple[int, ...]]]:
    """The adversary's moves on the (points x experts) table ``t``: (point, label, which experts the label
    proves wrong), in order of the first point that makes each; a move that proves no expert wrong is left out."""
    # the moves, one per distinct (wrong set, label): the tie rule depends on the label
    moves: list[tuple[int, int, tuple[int, ...]]] = []
    seen = set()
    for x, row in enumerate(t.tolist()):
        for y in (1, -1):
            wrong = tuple(int(v != y) for v in row)
            if any(wrong) and (wrong, y) not in seen:
                seen.add((wrong, y))
                moves.append((x, y, wrong))
    return moves


class _WeightedMajorityGame:
    """The game of :func:`weighted_majority_value` over ``moves``: the learner's weights, the proven ceilings
    on a state's value, and the memoised search (``memo``: (counts, rounds left) -> (value, the best move
    and the state it leads to, or None))."""

    def __init__(self, moves: list[tuple[int, int, tuple[int, ...]]], b: Fraction, m_star: int,
                 horizon: int | None, max_states: int) -> None:
        self.moves, self.b, self.m_star, self.max_states = moves, b, m_star, max_states
        self.cap = m_star + 1 if b == 0 else None
        top = m_star + 1 if b == 0 else (horizon or 0)
        self.power = [b**k for k in range(top + 1)]
        self.half = (1 + b) / 2
        self.floor_weight = b**m_star
        self.memo: dict[tuple, tuple[int, tuple[int, int, tuple] | None]] = {}

    def weights(self, c: tuple[int, ...]) -> list[Fraction] | list[int]:
        """The experts' weights at mistake counts ``c``: beta^c_i, or at beta = 0 1 on the leaders, 0 elsewhere."""
        if self.b == 0:
            lead = min(c)
            return [int(ci == lead) for ci in c]
        return [self.power[ci] for ci in c]

    def ceiling(self, w: list, r: int | None) -> int:
        """A proven ceiling on val(c, r): rounds left, and the potential argument for beta > 0."""
        k = math.inf if r is None else r
        if self.b > 0:
            phi, j = sum(w), 0
            while j < k and phi * self.half**(j + 1) >= self.floor_weight:
                j += 1
            k = min(k, j)
        return k

    def val(self, c: tuple[int, ...], r: int | None) -> int:
        """The most mistakes the adversary can force from mistake counts ``c`` with ``r`` rounds left (None: no
        limit), recorded in ``memo`` with a move that attains it."""
        memo = self.memo
        key = (c, r)
        if key in memo:
            return memo[key][0]
        _budget(memo, self.max_states)
        best, move = 0, None
        if r != 0:
            w = self.weights(c)
            total = sum(w)
            limit = self.ceiling(w, r)
            for x, y, wrong in self.moves:
                if best >= limit:
                    break
                child = tuple(ci + d for ci, d in zip(c, wrong))
                if self.cap is not None:
                    child = tuple(min(ci, self.cap) for ci in child)
                if min(child) > self.m_star:
                    continue  # illegal: no expert could stay within m*
                w_wrong = sum(wi for wi, d in zip(w, wrong) if d)
                w_right = total - w_wrong
                mistake = w_wrong >= w_right if y < 0 else w_wrong > w_right  # predict +1 iff plus >= minus
                if child == c:  # only past the beta = 0 cap: all the weight is on the label's side
                    assert not mistake
                    continue
                v = int(mistake) + self.val(child, None if r is None else r - 1)
                if v > best:
                    best, move = v, (x, y, (child, None if r is None else r - 1))
        memo[key] = (best, move)
        return best


def _optimal_sequence(memo: dict, start: tuple, points: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The moves ``memo`` records from the state ``start`` on, each (point in the caller's table, label), up to
    a state with none."""
    sequence, key = [], start
    while memo[key][1] is not None:
        x, y, key = memo[key][1]
        sequence.append((int(points[x]), int(y)))
    return tuple(sequence)
