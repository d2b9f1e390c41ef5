"""The report's table "The worst case beside the bound" (pipeline.outputs.report._gaps): bound, exact, the searches and
the orders side by side, the theorem's slack and the search's shortfall taken seed by seed (docs/bounds.md
sections 1 and 3)."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.outputs.report import Experiment, _gaps, _gaps_table, render_markdown

COMPARE = {"quantity": "mistakes", "by": "ordering", "x": "gamma"}


def _table(measured: dict[tuple[int, str], float], bounds: dict[int, float], exact_gap: float = 1e-11) -> pd.DataFrame:
    rows = []
    for (seed, ordering), value in measured.items():
        rows.append({"run": f"{seed}-{ordering}", "bound": "novikoff", "quantity": "mistakes", "applicable": True,
                     "guarantee": "D", "dataset": "margin_binary", "gamma": 0.2, "seed": seed, "ordering": ordering,
                     "empirical": value, "theoretical": value if ordering == "exact" else bounds[seed],
                     "certificate_gap": exact_gap if ordering == "exact" else float("nan")})
    return pd.DataFrame(rows)


def test_the_gaps_are_taken_seed_by_seed_against_each_seeds_own_sample() -> None:
    """Seed 0's sample has bound 25 and exact 25, seed 1's bound 24 and exact 24: no slack in either, although
    the means would differ from a pairing across seeds; the shortfall is exact - adaptive per seed."""
    measured = {(0, "exact"): 25, (0, "adaptive"): 12, (0, "random"): 6, (0, "given"): 5,
                (1, "exact"): 24, (1, "adaptive"): 20, (1, "random"): 7, (1, "given"): 4}
    [row] = _gaps(_table(measured, {0: 25, 1: 24}), COMPARE)
    assert row["slack"] == 0.0 and row["bound_value"] == 24.5 and row["exact"] == 24.5
    assert row["shortfall"] == pytest.approx(((25 - 12) + (24 - 20)) / 2) and row["shortfall_least"] == 4
    assert row["adaptive_best"] == 20 and row["random"] == 6.5 and row["given"] == 4.5 and row["seeds"] == 2
    assert row["certificate_gap"] == 1e-11


def test_a_bound_above_the_exact_worst_case_shows_as_slack() -> None:
    measured = {(0, "exact"): 20, (0, "adaptive"): 20}
    [row] = _gaps(_table(measured, {0: 25}), COMPARE)
    assert row["slack"] == 5 and row["shortfall"] == 0


def test_without_exact_runs_there_is_no_table() -> None:
    assert _gaps(_table({(0, "adaptive"): 12, (0, "given"): 5}, {0: 25}), COMPARE) == []


def test_the_page_and_the_summary_name_both_gaps(tmp_path) -> None:  # noqa: ANN001
    measured = {(0, "exact"): 25, (0, "adaptive"): 12, (0, "random"): 6, (0, "given"): 5}
    e = Experiment(name="worst_case", question="?", verdicts=[], figures=[], runs=4, failed_jobs=0, data_hashes=[],
                   parent_run=None, gaps=_gaps(_table(measured, {0: 25}), COMPARE))
    page = "".join(_gaps_table(e))
    assert "theorem&#x27;s slack: bound - exact" in page and "search&#x27;s shortfall: exact - adaptive" in page
    assert "<td>13 (13)</td>" in page  # the shortfall: mean (least)
    summary = render_markdown([e], {"packages": {}}, tmp_path)
    assert "theorem's slack: bound - exact" in summary and "| margin_binary | 0.2 | 25 | 25 |" in summary


def test_a_finite_games_exact_value_gives_the_same_table() -> None:
    """Halving's rows carry game_value and littlestone (pipeline.job.statistics): per class and size the bound, the
    exact value, Ldim and the largest measured, the gaps run by run; undecided runs (too large) are left out."""
    t = pd.DataFrame([
        {"bound": "halving", "cls": "thresholds", "size": 6, "theoretical": 2, "empirical": 2, "game_value": 2,
         "littlestone": 2},
        {"bound": "halving", "cls": "thresholds", "size": 6, "theoretical": 2, "empirical": 0, "game_value": 2,
         "littlestone": 2},
        {"bound": "halving", "cls": "conjunctions", "size": 6, "theoretical": 9, "empirical": 7,
         "game_value": float("nan"), "littlestone": float("nan")},
    ])
    [row] = _gaps(t, {})
    assert (row["cls"], row["exact"], row["littlestone"], row["measured_best"]) == ("thresholds", 2, 2, 2)
    assert row["slack"] == 0 and row["shortfall"] == 1 and row["shortfall_least"] == 0
