"""The adversary's exact value against Halving and Weighted Majority (pipeline/solvers/games.py and
pipeline/analysis/games.py; docs/bounds.md section 3): equal to a brute force over every adversary sequence on
tiny classes, the closed forms (the cube, thresholds, singletons), never above the project's bounds, and
attained: the returned sequence, replayed through the project's own learners, makes exactly that many mistakes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.bounds.finite import HALVING, WEIGHTED_MAJORITY
from pipeline.learners.halving import Halving, WeightedMajority
from pipeline.analysis.games import weighted_majority_value
from pipeline.solvers.games import halving_value, littlestone_dimension

# --- independent references: plain lists, no memo, no bitmasks -------------------------------------------


def distinct(table: np.ndarray) -> np.ndarray:
    """The distinct columns (hypotheses) of a 0/1 or -1/+1 table, as -1/+1, in order of first occurrence."""
    t = np.where(np.asarray(table) > 0, 1, -1)
    keep = [j for j in range(t.shape[1]) if not any((t[:, j] == t[:, i]).all() for i in range(j))]
    return t[:, keep]


def halving_vote(V: list[int], t: np.ndarray, x: int) -> int:
    plus = sum(t[x, h] > 0 for h in V)
    return 1 if 2 * plus >= len(V) else -1


def brute_halving(t: np.ndarray, length: int) -> int:
    """Max mistakes of Halving over every sequence of at most ``length`` (point, label) moves whose labels some
    hypothesis of the current V gives (repetitions and no-op moves included)."""
    def go(V: list[int], left: int) -> int:
        best = 0
        if left == 0:
            return 0
        for x in range(t.shape[0]):
            for y in (-1, 1):
                W = [h for h in V if t[x, h] == y]
                if W:
                    best = max(best, (halving_vote(V, t, x) != y) + go(W, left - 1))
        return best
    return go(list(range(t.shape[1])), length)


def brute_optimal_learner(t: np.ndarray) -> int:
    """The worst case of the best deterministic learner, by the minimax over the online game itself: the
    adversary shows a splitting x, the learner picks the prediction that minimises, the adversary the label.
    Equal to Ldim by Littlestone's theorem (UML Thm 21.10): an independent route to the same number."""
    def go(V: list[int]) -> int:
        best = 0
        for x in range(t.shape[0]):
            sides = {y: [h for h in V if t[x, h] == y] for y in (-1, 1)}
            if sides[-1] and sides[1]:
                best = max(best, min(max((p != y) + go(sides[y]) for y in (-1, 1)) for p in (-1, 1)))
        return best
    return go(list(range(t.shape[1])))


def wm_mistakes(t: np.ndarray, beta: Fraction, sequence: list[tuple[int, int]]) -> tuple[int, list[int]]:
    """Deterministic Weighted Majority in exact arithmetic, straight from its definition (beta = 0: weight 1 on
    the experts with the fewest mistakes so far); returns (learner mistakes, each expert's mistakes)."""
    counts, mistakes = [0] * t.shape[1], 0
    for x, y in sequence:
        missed, counts = wm_move(t, beta, counts, x, y)
        mistakes += missed
    return mistakes, counts


def wm_move(t: np.ndarray, beta: Fraction, counts: list[int], x: int, y: int) -> tuple[bool, list[int]]:
    """One move of :func:`wm_mistakes`: (whether the learner errs on (x, y), each expert's mistakes after it)."""
    lead = min(counts)
    w = [Fraction(int(c == lead)) if beta == 0 else beta**c for c in counts]
    plus = sum(wi for wi, v in zip(w, t[x]) if v > 0)
    minus = sum(wi for wi, v in zip(w, t[x]) if v < 0)
    return (1 if plus >= minus else -1) != y, [c + (v != y) for c, v in zip(counts, t[x])]


def brute_wm(t: np.ndarray, beta: Fraction, m_star: int, horizon: int) -> int:
    """Max over every sequence of at most ``horizon`` (point, label) moves (any labels, repetitions allowed) whose
    best expert ends with at most m* mistakes. Every sequence is enumerated, depth first: a sequence's state
    (learner and expert mistakes) is its prefix's after one more :func:`wm_move`, the state :func:`wm_mistakes`
    reaches simulating it from scratch, so each prefix is simulated once, not once per sequence extending it."""
    moves = [(x, y) for x in range(t.shape[0]) for y in (-1, 1)]

    def best_from(mistakes: int, counts: list[int], left: int) -> int:
        best = mistakes if min(counts) <= m_star else 0
        if left:
            for x, y in moves:
                missed, after = wm_move(t, beta, counts, x, y)
                best = max(best, best_from(mistakes + missed, after, left - 1))
        return best

    return best_from(0, [0] * t.shape[1], horizon)


def random_table(rng: np.random.Generator, m: int, H: int) -> np.ndarray:
    return (rng.random((m, H)) < rng.uniform(0.2, 0.8)).astype(np.int8)


def cube(k: int) -> np.ndarray:
    """All 2^k labelings of k points (k x 2^k)."""
    return np.array(list(itertools.product([0, 1], repeat=k)), dtype=np.int8).T.reshape(k, 2**k)


def thresholds(m: int) -> np.ndarray:
    """h_theta(i) = 1 iff i >= theta, theta in 0..m: m points, |H| = m + 1."""
    return np.array([[int(i >= th) for th in range(m + 1)] for i in range(m)], dtype=np.int8).reshape(m, m + 1)


def singletons(m: int) -> np.ndarray:
    """The m singletons and the all-zero hypothesis: m points, |H| = m + 1."""
    return np.hstack([np.eye(m, dtype=np.int8), np.zeros((m, 1), dtype=np.int8)])


def replay_halving(table: np.ndarray, sequence: tuple) -> int:
    """Mistakes of the project's Halving learner (its compiled kernel) on the sequence: the stream shows the
    sequence's points in order, labelled by a hypothesis consistent with every move (the target)."""
    t = distinct(table)
    target = [h for h in range(t.shape[1]) if all(t[x, h] == y for x, y in sequence)]
    assert target, "the sequence must be realisable"
    y = t[:, target[0]]
    order = np.array([x for x, _ in sequence], dtype=np.int64)
    trace = Halving().learn_table(t.T, y, order)  # learn_table takes |H| x m
    assert all(y[x] == label for x, label in sequence)
    return int(trace.sum())


# --- Halving and the Littlestone dimension ---------------------------------------------------------------


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 3), H=st.integers(1, 7))
def test_halving_value_and_ldim_equal_brute_force(seed: int, m: int, H: int) -> None:
    """Every sequence of moves, no-ops and repetitions included, up to |H| - 1 moves (any sequence changes V
    at most |H| - 1 times, and a move that does not change V is never a mistake): the maximum is the value.
    Ldim against the minimax of the online game with an optimal learner, and Ldim <= value <= floor(log2 |H|)."""
    table = random_table(np.random.default_rng(seed), m, H)
    t = distinct(table)
    g = halving_value(table)
    assert g.H == t.shape[1]
    assert g.value == brute_halving(t, max(g.H - 1, 0))
    ldim = littlestone_dimension(table)
    assert ldim == brute_optimal_learner(t)
    assert ldim <= g.value <= g.H.bit_length() - 1
    assert replay_halving(table, g.sequence) == g.value


@pytest.mark.parametrize("k", range(5))
def test_cube(k: int) -> None:
    """All 2^k labelings of k points: every learner can be forced to err on each point, and Halving's
    log2 |H| is attained: value = Ldim = k = log2 |H|."""
    g = halving_value(cube(k))
    assert g.H == 2**k and g.value == littlestone_dimension(cube(k)) == k == int(math.log2(g.H))
    assert replay_halving(cube(k), g.sequence) == k


@pytest.mark.parametrize("m", list(range(1, 17)) + [31, 40, 63])
def test_thresholds(m: int) -> None:
    """Thresholds on m points (|H| = m + 1): binary search is optimal, Ldim = floor(log2(m + 1)), and the
    bisecting adversary forces Halving to its bound (docs/bounds.md section 3: 9 for |H| = 1001)."""
    g = halving_value(thresholds(m))
    bound = (m + 1).bit_length() - 1
    assert g.H == m + 1 and g.value == littlestone_dimension(thresholds(m)) == bound
    assert replay_halving(thresholds(m), g.sequence) == bound


@pytest.mark.parametrize("m", range(1, 9))
def test_singletons(m: int) -> None:
    """Singletons plus the all-zero function: Ldim 1 (the first +1 identifies the target), and Halving too
    makes one mistake at most, far below log2(m + 1)."""
    g = halving_value(singletons(m))
    assert littlestone_dimension(singletons(m)) == 1 == g.value
    assert replay_halving(singletons(m), g.sequence) == 1


# found by search over random tables: a correct (non-mistake) move that shrinks V can raise Halving's value,
# so a search over mistake moves alone would return 2 here
CORRECT_MOVE_HELPS = np.array([[0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0],
                               [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
                               [1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0],
                               [0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0],
                               [0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0]], dtype=np.int8)
# Halving is not the optimal learner: here it can be forced to 3 mistakes, the class's Ldim being 2
HALVING_ABOVE_LDIM = np.array([[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                               [1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0],
                               [0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0],
                               [1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0]], dtype=np.int8)


def test_correct_moves_are_searched_and_halving_is_not_optimal() -> None:
    """The two facts the search's design rests on, on fixed instances: the optimal sequence of the first
    contains a move Halving gets right (so the search must explore them), and the second has value Ldim + 1."""
    g = halving_value(CORRECT_MOVE_HELPS)
    t = distinct(CORRECT_MOVE_HELPS)
    assert g.value == 3 and replay_halving(CORRECT_MOVE_HELPS, g.sequence) == 3 < len(g.sequence)
    assert g.value == brute_halving(t, 4)
    h = halving_value(HALVING_ABOVE_LDIM)
    assert (h.value, littlestone_dimension(HALVING_ABOVE_LDIM)) == (3, 2)
    assert replay_halving(HALVING_ABOVE_LDIM, h.sequence) == 3


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 12), H=st.integers(1, 20), zeros_ones=st.booleans())
def test_halving_value_within_the_bound_and_replayed_exactly(seed: int, m: int, H: int, zeros_ones: bool) -> None:
    """Larger random tables, 0/1 or -1/+1: the value never exceeds the project's bound ``halving``
    (pipeline/bounds/finite.py, floor(log2 |H|) from the exact integer) and the learner, replaying the
    optimal sequence, makes exactly that many mistakes."""
    table = random_table(np.random.default_rng(seed), m, H)
    if not zeros_ones:
        table = 2 * table - 1
    g = halving_value(table)
    bound, _ = HALVING.value({"H": g.H, "m_star": 0, "T": len(g.sequence)})
    assert littlestone_dimension(table) <= g.value <= bound
    assert replay_halving(table, g.sequence) == g.value
    assert len({x for x, _ in g.sequence}) == len(g.sequence)  # no point twice: V agrees on it afterwards


# --- Weighted Majority -----------------------------------------------------------------------------------

BETAS = [Fraction(0), Fraction(1, 2), Fraction(1, 3), Fraction(3, 4)]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 2), H=st.integers(1, 4), beta=st.sampled_from(BETAS),
       m_star=st.integers(0, 2), horizon=st.integers(0, 4))
def test_weighted_majority_value_equals_brute_force(seed: int, m: int, H: int, beta: Fraction, m_star: int,
                                                    horizon: int) -> None:
    """Every sequence of at most ``horizon`` moves over every point and label, each simulated from scratch in
    exact arithmetic and kept if its best expert ends within m*: the maximum is the value, and the returned
    sequence attains it within the rules."""
    table = random_table(np.random.default_rng(seed), m, H)
    t = distinct(table)
    g = weighted_majority_value(table, beta, m_star, horizon=horizon)
    assert g.H == t.shape[1] and len(g.sequence) <= horizon
    assert g.value == brute_wm(t, beta, m_star, horizon)
    mistakes, counts = wm_mistakes(t, beta, list(g.sequence))
    assert mistakes == g.value and min(counts) <= m_star


@pytest.mark.parametrize("seed", range(6))
def test_weighted_majority_value_on_three_points(seed: int) -> None:
    """Three points and up to five experts at horizon 5 (7776 sequences of the longest length)."""
    rng = np.random.default_rng(100 + seed)
    table = random_table(rng, 3, int(rng.integers(2, 6)))
    beta, m_star = BETAS[seed % 4], seed % 3
    g = weighted_majority_value(table, beta, m_star, horizon=5)
    assert g.value == brute_wm(distinct(table), beta, m_star, 5)


def wm_bound(H: int, m_star: int, beta: Fraction, T: int) -> float | None:
    """The project's ``weighted_majority`` bound (pipeline/bounds/finite.py), None where it does not apply."""
    stats = {"H": H, "m_star": m_star, "beta": float(beta), "randomized": False, "T": T}
    return None if WEIGHTED_MAJORITY.applies(stats) else WEIGHTED_MAJORITY.value(stats)[0]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 5), H=st.integers(1, 5), beta=st.sampled_from(BETAS),
       m_star=st.integers(0, 2), horizon=st.integers(0, 7))
def test_weighted_majority_value_within_the_bound(seed: int, m: int, H: int, beta: Fraction, m_star: int,
                                                  horizon: int) -> None:
    """The value is at most the [LW94] bound the project evaluates, at most the horizon, and grows with the
    horizon; the optimal sequence, replayed exactly, attains it."""
    table = random_table(np.random.default_rng(seed), m, H)
    g = weighted_majority_value(table, beta, m_star, horizon=horizon)
    bound = wm_bound(g.H, m_star, beta, horizon)
    assert g.value <= horizon and (bound is None or g.value <= bound)
    if horizon:
        assert weighted_majority_value(table, beta, m_star, horizon=horizon - 1).value <= g.value
    assert wm_mistakes(distinct(table), beta, list(g.sequence))[0] == g.value


@settings(max_examples=30, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 5), H=st.integers(1, 6), m_star=st.integers(0, 3))
def test_beta_zero_unbounded_game(seed: int, m: int, H: int, m_star: int) -> None:
    """At beta = 0 the game is finite without a horizon: its value equals the game's at horizon |H| (m* + 1)
    (each useful move raises a count capped at m* + 1); at m* = 0 it is the Halving game exactly. The project's
    WeightedMajority learner (beta = 0.0, whose float weights are exactly 0 and 1) replays it exactly."""
    table = random_table(np.random.default_rng(seed), m, H)
    g = weighted_majority_value(table, 0, m_star)
    assert g.value == weighted_majority_value(table, 0, m_star, horizon=min(g.H * (m_star + 1), 16)).value
    if m_star == 0:
        assert g.value == halving_value(table).value
        assert g.value <= wm_bound(g.H, 0, Fraction(0), len(g.sequence))
    t = distinct(table)
    seq = list(g.sequence)
    if seq:
        wm = WeightedMajority(beta=0.0)
        trace, _ = wm.learn_table(t[[x for x, _ in seq]].T, np.array([y for _, y in seq]))
        assert int(trace.sum()) == g.value and wm.losses_.min() <= m_star


def test_weighted_majority_values_at_fixed_instances() -> None:
    """Values worked by hand. Two experts disagreeing on one point, m* = 1: the tie goes to +1, the adversary
    says -1, then always contradicts the leader (or the tie): 3 mistakes, at beta = 0 and at beta = 1/2
    (whose bound is ln 4 / ln(4/3) = 4.82). The all-labelings class of 2 points at m* = 0 is Halving's cube."""
    two = np.array([[1, 0]])
    assert weighted_majority_value(two, 0, 1).value == 3
    assert weighted_majority_value(two, Fraction(1, 2), 1, horizon=8).value == 3
    assert weighted_majority_value(two, 0, 0).value == 1
    assert weighted_majority_value(cube(2), 0, 0).value == 2 == weighted_majority_value(cube(2), "0.5", 0, horizon=6).value


@pytest.mark.parametrize(("call", "name"), [
    (lambda: weighted_majority_value(cube(3)[:, :7], 0.5, 1, horizon=3), "table"),
    (lambda: weighted_majority_value(np.eye(3), 1.0, 1, horizon=3), "beta"),
    (lambda: weighted_majority_value(np.eye(3), -0.1, 1, horizon=3), "beta"),
    (lambda: weighted_majority_value(np.eye(3), 0.5, 4, horizon=3), "best_mistakes"),
    (lambda: weighted_majority_value(np.eye(3), 0.5, 1), "horizon"),
    (lambda: weighted_majority_value(np.eye(3), 0.5, 1, horizon=17), "horizon"),
    (lambda: weighted_majority_value(np.eye(3), 0.5, 3, horizon=16, max_states=100), "max_states"),
    (lambda: halving_value(cube(7)), "table"),
    (lambda: halving_value(np.array([[0, 2]])), "table"),
    (lambda: halving_value(np.zeros(3)), "table"),
    (lambda: littlestone_dimension(thresholds(20), max_states=3), "max_states"),
])
def test_refusals_name_the_parameter(call: Callable[[], object], name: str) -> None:
    """An instance too large for exhaustive search, or a parameter out of range, is refused naming it."""
    with pytest.raises(ValueError, match=f"^{name}:"):
        call()
