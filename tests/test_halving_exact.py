"""The exact worst case of Halving's game beside each run (pipeline.job.statistics.exact_game; docs/bounds.md
section 3): on the run's points, measured <= game_value <= floor(log2 |H|) and littlestone <= game_value; the
search's optimal sequence replayed through the learner makes exactly game_value mistakes; a class too large
for the search (or beyond its budget) says so in game_status and leaves the integer columns out; the columns
are the same on every run of the same job."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from pipeline.paths import CONF_DIR
from pipeline.job.config import build
from pipeline.data import Dataset
from pipeline.data.finite import FiniteClass
from pipeline.learners.halving import Halving
from pipeline.job.statistics import exact_game, measure
from pipeline.job.run import run
from pipeline.sweep.schemas import register
from pipeline.solvers import games

SMALL = [("thresholds", 6), ("thresholds", 10), ("intervals", 6), ("intervals", 10), ("linear", 6), ("linear", 10)]
GAME_KEYS = ("game_value", "littlestone", "game_status")


def _dataset(cls: str, size: int, adversary: str, n: int = 500, seed: int = 0) -> Dataset:
    return FiniteClass(cls=cls, size=size, n=n, adversary=adversary).sample(np.random.default_rng(seed))


def _table_dataset(table: np.ndarray, y: np.ndarray) -> Dataset:
    """A stream given only by its class's table (|H| x m) and labels."""
    return Dataset("table", np.zeros((len(y), 1)), np.asarray(y, dtype=np.float64), None, hypotheses=table)


def _brute_halving(table: np.ndarray) -> int:
    """Halving's game by plain enumeration, independent of pipeline.solvers.games: V as a frozenset of rows of
    the |H| x m table, every point and every label some h in V gives, the vote a tie to +1."""
    H, m = table.shape

    def go(V: frozenset) -> int:
        best = 0
        for x in range(m):
            plus = frozenset(h for h in V if table[h, x] > 0)
            predicted = 1 if 2 * len(plus) >= len(V) else -1
            for y, child in ((1, plus), (-1, V - plus)):
                if child and child != V:
                    best = max(best, int(y != predicted) + go(child))
        return best

    return go(frozenset(range(H)))


@pytest.mark.parametrize(("cls", "size"), SMALL)
@pytest.mark.parametrize("adversary", ["random", "bisect"])
@pytest.mark.parametrize("ordering", ["given", "adversarial"])
def test_small_classes_lie_between_ldim_and_the_bound(cls: str, size: int, adversary: str, ordering: str) -> None:
    ds = _dataset(cls, size, adversary)
    out = measure(Halving(ordering=ordering), ds, np.random.default_rng(1))
    s, measured = out.stats, out.quantities["mistakes"]
    assert s["game_status"] == "exact"
    assert type(s["game_value"]) is int and type(s["littlestone"]) is int  # integer columns, never strings
    assert measured <= s["game_value"] <= int(math.log2(s["H"]))
    assert s["littlestone"] <= s["game_value"]
    # the values are those of games.py on the learner's own table, transposed into its (m, |H|) layout
    table = Halving().table(ds, np.random.default_rng(1))
    assert s["game_value"] == games.halving_value(table.T).value
    assert s["littlestone"] == games.littlestone_dimension(table.T)


@pytest.mark.parametrize("size", [1, 2, 5, 6, 7, 10, 15])
def test_thresholds_on_the_whole_grid_have_the_known_value(size: int) -> None:
    """Thresholds on N points (the bisecting adversary presents the whole grid when n >= N): Ldim and Halving's
    value are both floor(log2(N + 1)) = floor(log2 |H|), and the bisecting adversary as given attains it."""
    ds = _dataset("thresholds", size, "bisect", n=50)
    out = measure(Halving(), ds, np.random.default_rng(0))
    expected = int(math.log2(size + 1))
    assert out.stats["H"] == size + 1
    assert out.stats["game_value"] == out.stats["littlestone"] == expected == out.quantities["mistakes"]


@pytest.mark.parametrize("seed", range(6))
def test_the_value_equals_plain_enumeration_on_small_tables(seed: int) -> None:
    """On random small classes (4 points, up to 7 functions), against an enumeration that shares no code with
    games.py; where Halving is not optimal the value exceeds Ldim, and both columns say so."""
    rng = np.random.default_rng(seed)
    table = np.where(rng.random((7, 4)) < 0.5, 1, -1).astype(np.int8)
    y = table[0].astype(np.float64)
    out = measure(Halving(), _table_dataset(table, y), np.random.default_rng(0))
    distinct = Halving().table(_table_dataset(table, y), np.random.default_rng(0))
    assert out.stats["game_value"] == _brute_halving(distinct)
    assert out.stats["littlestone"] <= out.stats["game_value"] <= int(math.log2(out.stats["H"]))


# test_games' HALVING_ABOVE_LDIM (4 points x 12 columns, 8 distinct functions) as the learner's |H| x m table:
# Halving's value 3 exceeds Ldim 2 (Halving is not the optimal learner)
HALVING_ABOVE_LDIM = np.where(np.array([[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                                        [1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0],
                                        [0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0],
                                        [1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0]]).T > 0, 1, -1).astype(np.int8)


def test_halving_above_ldim_is_reported() -> None:
    """A class where the adversary forces more mistakes on Halving than Ldim: the columns keep the difference,
    and the value agrees with the plain enumeration."""
    table = HALVING_ABOVE_LDIM
    out = measure(Halving(), _table_dataset(table, table[0]), np.random.default_rng(0))
    assert (out.stats["game_value"], out.stats["littlestone"], out.stats["H"]) == (3, 2, 8)  # |H|: the 8 distinct
    assert _brute_halving(table) == 3


@pytest.mark.parametrize(("cls", "size", "adversary"),
                         [("thresholds", 6, "bisect"), ("thresholds", 10, "random"), ("intervals", 6, "random"),
                          ("intervals", 10, "bisect"), ("linear", 10, "random")])
def test_the_optimal_sequence_replayed_makes_exactly_the_value(cls: str, size: int, adversary: str) -> None:
    """games.halving_value's sequence, as a stream of the run's class (its points first, then every other point
    of the run, all labelled by a hypothesis consistent with the sequence): Halving, as given, makes exactly
    game_value mistakes, all within the sequence, and the new run reports the same game_value (same class)."""
    ds = _dataset(cls, size, adversary)
    table = Halving().table(ds, np.random.default_rng(0))  # |H| x m, distinct functions
    game = games.halving_value(table.T)
    value = measure(Halving(), ds, np.random.default_rng(0)).stats["game_value"]
    assert game.value == value and len(game.sequence) >= value
    points = [x for x, _ in game.sequence]
    targets = [h for h in range(table.shape[0]) if all(table[h, x] == y for x, y in game.sequence)]
    assert targets
    order = np.array(points + [x for x in range(table.shape[1]) if x not in set(points)], dtype=np.int64)
    y = table[targets[0], order]
    assert [int(v) for v in y[: len(points)]] == [y_ for _, y_ in game.sequence]
    replay = _table_dataset(np.ascontiguousarray(table[:, order]), y)
    out = measure(Halving(ordering="given"), replay, np.random.default_rng(0))
    assert out.quantities["mistakes"] == value
    assert int(out.trace["mistake"][: len(points)].sum()) == value
    assert out.stats["game_value"] == value and out.stats["H"] == table.shape[0]
    # the learner's lower-level entry: the sequence's points alone, in the full table
    trace = Halving().learn_table(table, table[targets[0]], np.array(points, dtype=np.int64))
    assert int(trace.sum()) == value


@pytest.mark.parametrize(("cls", "size", "H"), [("conjunctions", 6, 730), ("intervals", 11, 67)])
def test_a_class_too_large_for_the_search_says_so(cls: str, size: int, H: int) -> None:
    ds = _dataset(cls, size, "bisect", n=200)
    out = measure(Halving(), ds, np.random.default_rng(0))
    assert out.stats["H"] == H
    assert out.stats["game_status"] == f"too_large: |H| = {H} > 64"
    assert "game_value" not in out.stats and "littlestone" not in out.stats
    assert out.quantities["mistakes"] <= int(math.log2(H))  # the run itself is unaffected


def test_a_search_beyond_its_budget_says_so() -> None:
    """Singletons on 20 points (and the empty function): Halving's value 1 is below the cap floor(log2 21) = 4,
    so the search cannot stop early and would visit 2^21 version spaces, past the budget."""
    m = 20
    table = -np.ones((m + 1, m), dtype=np.int8)
    table[np.arange(m), np.arange(m)] = 1
    out = measure(Halving(), _table_dataset(table, table[m]), np.random.default_rng(0))
    assert out.stats["game_status"].startswith("budget: more than ")
    assert "game_value" not in out.stats and "littlestone" not in out.stats
    small = 8  # the same class on 8 points fits: value 1 = Ldim (one mistake on the singleton, if any)
    table = -np.ones((small + 1, small), dtype=np.int8)
    table[np.arange(small), np.arange(small)] = 1
    g = exact_game(table)
    assert g == {"game_value": 1, "littlestone": 1, "game_status": "exact"}


def test_two_runs_give_the_same_columns() -> None:
    """The columns depend on the run's class only: the same job twice, and the same data under another
    algorithm seed and ordering, give identical values (no timing, no randomness in the search)."""
    ds = _dataset("intervals", 10, "random")
    first = measure(Halving(ordering="random"), ds, np.random.default_rng(3)).stats
    again = measure(Halving(ordering="random"), ds, np.random.default_rng(3)).stats
    other = measure(Halving(ordering="adversarial"), ds, np.random.default_rng(4)).stats
    assert first == again
    assert {k: first[k] for k in GAME_KEYS} == {k: other[k] for k in GAME_KEYS}


def _run(*overrides: str):  # noqa: ANN202
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return run(build(compose("config", overrides=list(overrides))))


def test_the_columns_reach_the_results_rows() -> None:
    """Through the pipeline: the halving row carries game_value and littlestone as integers and game_status as
    a string, identical on a second run; a too-large class's row has the status and no integer columns."""
    common = ("algorithm=halving", "dataset=finite_class", "n=80", "seed=0")
    small = [_run(*common, "dataset.cls=thresholds", "dataset.size=6", "dataset.adversary=bisect") for _ in range(2)]
    rows = [r.table[r.table["bound"] == "halving"].iloc[0].to_dict() for r in small]
    assert pd.Series(rows[0]).equals(pd.Series(rows[1]))  # every column, NaNs in the same places
    row = rows[0]
    assert row["game_value"] == row["littlestone"] == 2 and row["game_status"] == "exact"
    assert isinstance(row["game_value"], (int, np.integer)) and isinstance(row["littlestone"], (int, np.integer))
    assert row["empirical"] <= row["game_value"] <= row["theoretical"]
    large = _run(*common, "dataset.cls=conjunctions", "dataset.size=6", "dataset.adversary=random")
    big = large.table[large.table["bound"] == "halving"].iloc[0].to_dict()
    assert big["game_status"].startswith("too_large: |H| = ") and "game_value" not in big and "littlestone" not in big
