"""The adversary's exact value against Halving and Weighted Majority on small finite classes (docs/bounds.md
section 3): the largest number of mistakes an adversary can force, by exhaustive game search with memoisation,
to stand beside the bound and the measured count ("bound / exact worst case / measured").

The class is a table of shape (m points, |H| hypotheses): entry (i, h) is hypothesis h's label on x_i, in
0/1 or -1/+1 (0 and -1 both read as -1). Note the orientation: the learners' own tables
(:meth:`pipeline.learners.halving.Halving.table`) are |H| x m; this is their transpose, the layout of
``halving_kernel``'s ``table_T``. As in the learners, |H| counts *distinct* functions: duplicate columns are
merged (a duplicate would weigh twice in a vote, docs/bounds.md section 3), and duplicate points are merged too
(they offer the adversary the same moves). Sequences are reported in the caller's indices: a point is the first
of its duplicates.

- :func:`halving_value`: the realisable game against Halving (majority of V_t, a tie to +1); exact for every
  sequence length, since every move that changes V_t shrinks it.
- :func:`littlestone_dimension`: Ldim(H), the optimal deterministic learner's worst case (Littlestone 1988;
  UML section 21.1.1). Halving's value lies between Ldim(H) and floor(log2 |H|).

Weighted Majority's game (``pipeline.analysis.games.weighted_majority_value``) is an analysis tool that no job
calls: it lives in :mod:`pipeline.analysis`, outside every job's identity, and shares this module's pieces.

Everything is plain Python over bitmasks and tuples: small instances only, each function refuses a larger one
with a ValueError naming the parameter and its limit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

MAX_HYPOTHESES = 64  # distinct hypotheses halving_value / littlestone_dimension accept (bitmask states; the
# number of states visited is what costs, and max_states bounds it)
MAX_STATES = 200_000  # default budget of memoised states, for every search here


class GameValue(NamedTuple):
    """The adversary's exact value and one sequence that attains it.

    value : the largest number of learner mistakes the adversary can force.
    sequence : an optimal sequence of moves (point index in the caller's table, label -1/+1); replayed
        through the learner from its initial state it produces exactly ``value`` mistakes.
    H : the number of distinct hypotheses (experts) of the table, the |H| of the bounds.
    """

    value: int
    sequence: tuple[tuple[int, int], ...]
    H: int


def _signs(table: object) -> np.ndarray:
    """The table as an (m, |H|) int8 array of -1/+1; refuses anything but a 2-D 0/1 or -1/+1 table."""
    t = np.asarray(table)
    if t.ndim != 2:
        raise ValueError(f"table: must be 2-D (m points x |H| hypotheses), got shape {t.shape}")
    values = set(np.unique(t).tolist()) if t.size else set()
    if not (values <= {0, 1} or values <= {-1, 1}):
        raise ValueError(f"table: entries must be 0/1 or -1/+1, got {sorted(values)[:6]}")
    if t.shape[1] == 0:
        raise ValueError("table: the class is empty (no hypothesis column)")
    return np.where(t > 0, 1, -1).astype(np.int8)


def _distinct(a: np.ndarray, axis: int) -> np.ndarray:
    """Indices of the first occurrence of each distinct row (axis 0) or column (axis 1), increasing."""
    if a.shape[axis] == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(a, axis=axis, return_index=True)
    return np.sort(first).astype(np.int64)


def _prepare(table: object) -> tuple[np.ndarray, np.ndarray]:
    """(distinct points x distinct hypotheses table, the points' indices in the caller's table)."""
    t = _signs(table)
    t = t[:, _distinct(t, 1)]
    points = _distinct(t, 0)
    return t[points], points


def _masks(t: np.ndarray) -> list[int]:
    """For each point, the bitmask of the hypotheses labelling it +1 (bit j: hypothesis j)."""
    weights = [1 << j for j in range(t.shape[1])]
    return [sum(w for w, v in zip(weights, row) if v > 0) for row in t.tolist()]


def _check_size(H: int) -> None:
    if H > MAX_HYPOTHESES:
        raise ValueError(f"table: {H} distinct hypotheses, more than the {MAX_HYPOTHESES} this exhaustive search "
                         "accepts (its states are subsets of H)")


def _budget(states: dict, max_states: int) -> None:
    if len(states) > max_states:
        raise ValueError(f"max_states: the search visited more than {max_states} states; the instance is too large "
                         "for an exhaustive game search (use fewer points or hypotheses, or raise max_states)")


def halving_value(table: object, max_states: int = MAX_STATES) -> GameValue:
    """The largest number of mistakes an adversary can force on Halving in the realisable game.

    The game. V_1 = H (the distinct columns). At each step the adversary picks any point x (repetitions
    allowed) and a label y that some hypothesis of V_t gives x (the target stays in H). Halving predicts
    +1 if at least half of V_t says +1, else -1 (a tie goes to +1, as ``halving_kernel``); it errs when the
    prediction differs from y; V_{t+1} = {h in V_t : h(x) = y}. The adversary may stop at any time, and
    the value is the supremum over all finite sequences of the number of mistakes.

    Why the search is exact. Every move is explored, mistakes or not (non-mistake moves are not assumed
    useless: Halving's value is not obviously monotone in V, so a shrinking correct move is searched like
    any other). A move on a point where all of V_t agree leaves V_t unchanged and is never a mistake (the
    vote is unanimous: 2|V| >= |V| gives +1 when all say +1; 0 >= |V| fails when all say -1): the state and
    the count are unchanged, so such moves are skipped without loss. Every other move strictly shrinks V_t
    (to a nonempty set), so the states form a finite DAG and the value obeys, exactly,

        val(V) = max over x splitting V, y in {-1, +1} of [y != vote(V, x)] + val(V_{x,y}),  0 if none,

    memoised on V as a bitmask. A branch is cut only once the state's value has reached floor(log2 |V|),
    which Halving's own theorem proves it cannot exceed (every mistake removes at least half of V).

    Parameters
    ----------
    table : (m points, |H| hypotheses), 0/1 or -1/+1; at most 64 distinct hypotheses.
    max_states : budget of memoised version spaces; beyond it a ValueError names ``max_states``.

    Returns
    -------
    GameValue(value, sequence, H). ``sequence`` never repeats a point (after x is labelled, V agrees on x),
    so it is a valid stream for ``halving_kernel``: order = its points, y = any surviving target's labels.

    Examples
    --------
    >>> thresholds = np.array([[1 if i >= t else 0 for t in range(8)] for i in range(7)])  # 7 points, |H| = 8
    >>> halving_value(thresholds).value, littlestone_dimension(thresholds)
    (3, 3)
    """
    t, points = _prepare(table)
    H = t.shape[1]
    _check_size(H)
    plus = _masks(t)
    memo: dict[int, tuple[int, tuple[int, int, int] | None]] = {}

    def val(V: int) -> int:
        if V in memo:
            return memo[V][0]
        _budget(memo, max_states)
        k = V.bit_count()
        cap = k.bit_length() - 1  # floor(log2 |V|): Halving's bound from this state
        best, move = 0, None
        for x, p in enumerate(plus):
            if best >= cap:
                break
            P = V & p
            if P == 0 or P == V:
                continue
            predicted = 1 if 2 * P.bit_count() >= k else -1
            # the mistake first, so that among equal values the sequence prefers mistakes
            for y in (-predicted, predicted):
                child = P if y > 0 else V ^ P
                v = (y != predicted) + val(child)
                if v > best:
                    best, move = v, (x, y, child)
        memo[V] = (best, move)
        return best

    full = (1 << H) - 1
    value = val(full)
    sequence, V = [], full
    while memo[V][1] is not None:
        x, y, V = memo[V][1]
        sequence.append((int(points[x]), int(y)))
    return GameValue(int(value), tuple(sequence), H)


def littlestone_dimension(table: object, max_states: int = MAX_STATES) -> int:
    """Ldim(H) by the recursion over mistake trees (Littlestone 1988; UML Def. 21.5 and section 21.1.1):

        Ldim(V) = max over points x with both labels realised in V of 1 + min(Ldim(V_{x,+}), Ldim(V_{x,-})),

    0 when no point splits V. It is the worst case of the best deterministic learner (the SOA), so
    Ldim(H) <= Halving's value <= floor(log2 |H|). Memoised on V as a bitmask; a state stops searching once
    it reaches floor(log2 |V|), which Ldim never exceeds. Same table conventions and limits as
    :func:`halving_value`.
    """
    t, _ = _prepare(table)
    H = t.shape[1]
    _check_size(H)
    plus = _masks(t)
    memo: dict[int, int] = {}

    def ldim(V: int) -> int:
        if V in memo:
            return memo[V]
        _budget(memo, max_states)
        cap = V.bit_count().bit_length() - 1
        best = 0
        for p in plus:
            if best >= cap:
                break
            P = V & p
            if P == 0 or P == V or min(P.bit_count(), (V ^ P).bit_count()).bit_length() - 1 < best:
                continue  # min(Ldim(P), Ldim(V-P)) <= floor(log2 min(|P|, |V-P|)) < best: cannot improve
            best = max(best, 1 + min(ldim(P), ldim(V ^ P)))
        memo[V] = best
        return best

    return ldim((1 << H) - 1)
