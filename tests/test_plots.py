"""The figures show what was measured: a point is a mean over seeds only, never over settings swept beside it."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from pipeline import plots


def _table() -> pd.DataFrame:
    """Runs of one learner over projection x lam x T x 3 seeds; the measured value is 1000 lam / T + projection,
    with no seed noise, so that any mean over lam or projection would show as a value no run has."""
    rows = []
    for run, (projection, lam, T, seed) in enumerate(itertools.product([False, True], [0.1, 1.0], [100, 1000], range(3))):
        rows.append({"run": run, "learner": "kernel_pegasos", "bound": "kernel_expectation", "title": "Expected",
                     "guarantee": "E", "quantity": "suboptimality", "applicable": True, "projection": projection,
                     "lam": lam, "T": T, "seed": seed, "setting": f"{projection}-{lam}-{T}",
                     "param_names": "projection lam T seed", "empirical": 1000 * lam / T + projection,
                     "theoretical": 2000 * lam / T + 2, "trivial": np.nan, "formula": "f", "ratio": 0.5})
    return pd.DataFrame(rows)


def _points(fig) -> set[tuple[float, float]]:  # noqa: ANN001
    return {(float(x), round(float(y), 12)) for ax in fig.axes for line in ax.get_lines() if line.get_marker() == "o"
            for x, y in zip(line.get_xdata(), line.get_ydata())}


def test_compare_draws_a_panel_per_other_setting_and_means_over_seeds_only() -> None:
    table = _table()
    fig = plots.compare(table, "suboptimality", "projection", "T")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2  # lam = 0.1 and lam = 1
    assert sorted(ax.get_title() for ax in visible) == ["λ = 0.1", "λ = 1"]
    expected = {(float(T), round(1000 * lam / T + p, 12)) for p, lam, T in itertools.product([0, 1], [0.1, 1.0], [100, 1000])}
    assert _points(fig) == expected


def test_rate_figure_draws_a_line_per_combination_of_the_other_settings() -> None:
    table = _table()
    fig = plots.rate_vs_bound(table, "kernel_expectation", "T")
    expected = {(float(T), round(1000 * lam / T + p, 12)) for p, lam, T in itertools.product([0, 1], [0.1, 1.0], [100, 1000])}
    assert _points(fig) == expected
    labels = [line.get_label() for line in fig.axes[0].get_lines() if line.get_marker() == "o"]
    assert "λ = 0.1, projection = true: measured, mean over seeds (95 % band)" in labels


def test_rate_and_compare_draw_into_an_axes_with_a_chosen_panel() -> None:
    """Into a caller's Axes (no pyplot, no backend): the same points; compare's panel chosen by its setting."""
    table = _table()
    ax = Figure().subplots()
    fig = plots.rate_vs_bound(table, "kernel_expectation", "T", ax=ax)
    assert fig is ax.figure
    assert _points(fig) == {(float(T), round(1000 * lam / T + p, 12))
                            for p, lam, T in itertools.product([0, 1], [0.1, 1.0], [100, 1000])}
    ax = Figure().subplots()
    plots.compare(table, "suboptimality", "projection", "T", ax=ax, panel={"lam": 0.1})
    assert _points(ax.figure) == {(float(T), round(100 / T + p, 12)) for p, T in itertools.product([0, 1], [100, 1000])}
    assert ax.get_title().endswith("λ = 0.1") and ax.get_ylabel().startswith("suboptimality")
    with pytest.raises(ValueError, match="2 panels"):
        plots.compare(table, "suboptimality", "projection", "T", ax=Figure().subplots())
    fig = Figure()
    plots.compare(table, "suboptimality", "projection", "T", ax=fig)  # every panel, into the caller's figure
    assert sorted(a.get_title() for a in fig.axes) == ["λ = 0.1", "λ = 1"]
    with pytest.raises(TypeError):
        plots.measured_vs_bound(table, "kernel_expectation", ax=fig)  # a single-panel figure wants an Axes


def test_an_infinite_bound_never_costs_a_sweep_its_figures_or_results(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    # an infinite (vacuous) bound, as from a one-class file or one row: every figure is still drawn
    table = _table().assign(theoretical=np.inf, ratio=0.0, max_ratio_over_t=0.0, informative=False)
    curves = pd.DataFrame(columns=["run", "quantity", "t", "value"])
    assert plots.sweep_figures(table, curves, tmp_path, failed=[])
    # and a figure that fails for any other reason is named and skipped, not raised, when asked
    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise ValueError("a broken figure")

    monkeypatch.setattr(plots, "draw", broken)
    failed: list[str] = []
    assert plots.sweep_figures(_table(), curves, tmp_path, failed=failed) == [] and "a broken figure" in failed[0]
    with pytest.raises(ValueError, match="a broken figure"):
        plots.sweep_figures(_table(), curves, tmp_path)


def test_a_rerun_from_the_same_tables_copies_its_figures_instead_of_drawing_them(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A sweep whose jobs were all reused has the same tables: its figures are the previous files, copied
    (the same bytes drawing would give); other tables, or a figure file changed since, draw again."""
    sweep, first, second = tmp_path / "sweep", tmp_path / "a", tmp_path / "b"
    for d in (sweep, first, second):
        d.mkdir()
    table, curves = _table().assign(holds=True), pd.DataFrame(columns=["run", "quantity", "t", "value"])
    failed: list[str] = []
    drawn = plots.sweep_figures(table, curves, first, failed=failed, previous=sweep)
    assert drawn and not failed and (sweep / plots.FIGURES_STAMP).exists()
    for p in drawn:  # published into the sweep directory, as the sweep's end does
        (sweep / p.name).write_bytes(p.read_bytes())
    calls: list[str] = []
    real = plots.draw
    monkeypatch.setattr(plots, "draw", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    again = plots.sweep_figures(table, curves, second, failed=[], previous=sweep)
    assert calls == [] and sorted(p.name for p in again) == sorted(p.name for p in drawn)
    assert all((second / p.name).read_bytes() == p.read_bytes() for p in drawn)
    other = table.assign(empirical=table["empirical"] * 1.5)  # other results: drawn afresh
    plots.sweep_figures(other, curves, second, failed=[], previous=sweep)
    assert calls
    calls.clear()
    (sweep / drawn[0].name).write_bytes(b"edited")  # a file that is not the one drawn: never copied
    plots.sweep_figures(table, curves, second, failed=[], previous=sweep)
    assert calls
