"""The figures show what was measured: a point is a mean over seeds only, never over settings swept beside it."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.axis
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from pipeline import forks
from pipeline.outputs import plots


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
    monkeypatch.setattr(plots, "HELPER_FROM", 10**6)  # drawn here: the calls below are counted in this process
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

    def attempted(*a: object, **k: object) -> None:  # what is drawn afresh is only noted: drawing it is checked above
        calls.append(a[0])
        raise RuntimeError("drawn afresh")

    monkeypatch.setattr(plots, "draw", attempted)
    other = table.assign(empirical=table["empirical"] * 1.5)  # other results: drawn afresh
    plots.sweep_figures(other, curves, second, failed=[], previous=sweep)
    assert calls
    calls.clear()
    (sweep / drawn[0].name).write_bytes(b"edited")  # a file that is not the one drawn: never copied
    plots.sweep_figures(table, curves, second, failed=[], previous=sweep)  # the stamp is still the table's
    assert calls


# --- Readability: series colours, legends, titles, the curves' bound, heatmap labels ------------------------

def _orderings(per_run_bound: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs of two learners (perceptron, one pass; batch_perceptron, many) over ordering x gamma x 2 seeds,
    with the Novikoff bound 1/gamma^2, the same for every ordering and seed (or, with ``per_run_bound``, a
    level of its own per seed), and each run's mistakes over t."""
    rows, curves = [], []
    grid = itertools.product([("perceptron", 1), ("batch_perceptron", 100)], ["adversarial", "given", "random"],
                             [0.05, 0.1, 0.2], range(2))
    for run, ((learner, passes), ordering, gamma, seed) in enumerate(grid):
        bound = 1 / gamma ** 2 * (1 + seed if per_run_bound else 1)
        mistakes = (0.2 + 0.1 * seed + 0.05 * len(ordering)) / gamma
        rows.append({"run": f"r{run}", "learner": learner, "bound": "novikoff", "title": "Novikoff", "guarantee": "D",
                     "quantity": "mistakes", "applicable": True, "holds": True, "informative": True,
                     "ordering": ordering, "gamma": gamma, "passes": passes, "seed": seed,
                     "setting": f"{learner}-{ordering}-{gamma}", "param_names": "learner gamma ordering passes seed",
                     "empirical": mistakes, "theoretical": bound, "ratio": mistakes / bound, "trivial": np.nan,
                     "formula": "(R/gamma)^2"})
        t = np.arange(1, 21)
        curves.append(pd.DataFrame({"run": f"r{run}", "quantity": "mistakes", "t": t,
                                    "empirical": np.floor(mistakes * t / 20)}))
    return pd.DataFrame(rows), pd.concat(curves, ignore_index=True)


def _figures(table: pd.DataFrame, curves: pd.DataFrame) -> list[tuple[str, Figure]]:
    return [(spec.stem, plots.draw(spec.kind, table, curves, **spec.kwargs)) for spec in plots.figure_plan(table, curves)]


@pytest.fixture(scope="module")
def orderings_figures() -> list[tuple[str, Figure]]:
    """Every figure of the plan of :func:`_orderings`' runs, drawn once for the tests that only read them."""
    return _figures(*_orderings())


def _legends(fig: Figure) -> list:
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]


def _relative_luminance(color) -> float:  # noqa: ANN001
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(color))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def _contrast(a, b="white") -> float:  # noqa: ANN001
    hi, lo = sorted((_relative_luminance(a), _relative_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _series_colours(fig: Figure) -> list[tuple[str, tuple]]:
    """Every colour a line or a point of the figure is drawn in (the data, and the legends' handles)."""
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_rgba

    artists = [a for ax in fig.axes for a in list(ax.get_lines()) + [c for c in ax.collections if isinstance(c, PathCollection)]]
    artists += [h for legend in _legends(fig) for h in legend.legend_handles if h is not None]
    found = []
    for a in artists:
        if isinstance(a, PathCollection):  # points: their fill, or their edge when hollow
            faces = [c for c in a.get_facecolors() if c[3] > 0]
            found += [(f"points {a.get_label()!r}", tuple(c)) for c in (faces or a.get_edgecolors())]
        elif hasattr(a, "get_color"):
            found.append((f"line {a.get_label()!r}", to_rgba(a.get_color())))
    return found


@pytest.mark.parametrize("which", ["orderings", "pegasos", "many"])
def test_every_series_colour_reads_on_white(which: str, request: pytest.FixtureRequest) -> None:
    """No series in a pale colour (viridis' yellow end, tab10's olive or orange): every line and point colour
    has a WCAG contrast of at least 3:1 against the white background, in every figure of the plan."""
    if which == "orderings":
        figures = request.getfixturevalue("orderings_figures")
    elif which == "pegasos":
        figures = _figures(_table().assign(holds=True), pd.DataFrame(columns=["run", "quantity", "t", "empirical"]))
    else:  # many values of one setting: the whole range of the colormap is used
        table = pd.concat([_table().assign(holds=True, lam=lam, setting=lambda d, lam=lam: d["setting"] + f"-{lam}")
                           for lam in (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)], ignore_index=True)
        table["run"] = range(len(table))
        figures = _figures(table, pd.DataFrame(columns=["run", "quantity", "t", "empirical"]))
    for stem, fig in figures:
        for what, colour in _series_colours(fig):
            if colour[3] > 0:
                assert _contrast(colour[:3]) >= 3.0, (stem, what, colour)
    for name in ("viridis", "tab10", "plasma"):
        cmap = plots._cmap(name)
        assert min(_contrast(cmap(x)[:3]) for x in np.linspace(0, 1, 101)) >= 3.0, name


def test_every_legend_lists_each_label_once_and_a_shared_bound_once_in_black(orderings_figures) -> None:  # noqa: ANN001
    """Two learners in a panel of the curves name their seeds apart (never "seed 0" twice), and a bound the
    same for every ordering is one black line with one legend entry, not one per ordering."""
    figures = orderings_figures
    assert {stem for stem, _ in figures} >= {"novikoff_curves", "mistakes_by_ordering"}
    for stem, fig in figures:
        for legend in _legends(fig):
            labels = [t.get_text() for t in legend.get_texts()]
            assert len(labels) == len(set(labels)), (stem, labels)
    by_ordering = dict(figures)["mistakes_by_ordering"]
    for ax in (a for a in by_ordering.axes if a.get_visible()):
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert len(dashed) == 1 and dashed[0].get_color() == plots.BOUND_COLOR
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert sum("Novikoff" in label for label in labels) == 1, labels
    curve_labels = [t.get_text() for t in dict(figures)["novikoff_curves"].legends[0].get_texts()]
    assert "perceptron, seed 0" in curve_labels and "batch_perceptron, seed 0" in curve_labels
    # the helper every legend goes through
    ax = Figure().subplots()
    for i in range(3):
        ax.plot([0, 1], [i, i], label="bound")
    assert [t.get_text() for t in plots._legend(ax).get_texts()] == ["bound"]


def test_titles_name_the_learners_one_way(orderings_figures) -> None:  # noqa: ANN001
    """A title names the learners by their registered names, never one re-cased beside another."""
    for stem, fig in orderings_figures:
        titles = [fig._suptitle.get_text()] if fig._suptitle is not None else []
        titles += [ax.get_title() for ax in fig.axes]
        assert not any("Perceptron" in t for t in titles), (stem, titles)
        assert any("perceptron" in t for t in titles), (stem, titles)
    fig = plots.rate_vs_bound(_table(), "kernel_expectation", "T")
    assert fig.axes[0].get_title().startswith("kernel_pegasos: ")


def test_the_curves_bound_is_drawn_in_the_colour_its_legend_shows() -> None:
    """One bound for every run of a panel: one black dashed line, and a black legend entry. A bound of its own
    per run: each dashed in its run's colour, and the legend says so."""
    from matplotlib.colors import to_rgba

    table, curves = _orderings()
    fig = plots.curves_vs_bound(table, curves, "novikoff")
    legend = fig.legends[0]
    entry = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}
    drawn = {to_rgba(line.get_color()) for ax in fig.axes for line in ax.get_lines() if line.get_linestyle() == "--"}
    assert drawn == {to_rgba(entry["Novikoff bound"].get_color())} == {to_rgba(plots.BOUND_COLOR)}
    assert not any("series colour" in label for label in entry)

    table, curves = _orderings(per_run_bound=True)
    fig = plots.curves_vs_bound(table, curves, "novikoff")
    for ax in (a for a in fig.axes if a.get_visible()):
        solid = [to_rgba(line.get_color()) for line in ax.get_lines() if line.get_linestyle() == "-"]
        dashed = [to_rgba(line.get_color()) for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert dashed == solid  # each run's bound in its run's colour
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Novikoff bound of each run (dashed, series colour)" in labels
    assert "Novikoff bound" not in labels  # no black entry for a line never drawn black


def test_heatmap_labels_contrast_with_their_cells() -> None:
    """Each number written in a cell is black or white, whichever reads better on the cell's colour."""
    rows = []
    ratios = iter(np.linspace(0.0, 1.0, 12))
    for run, (gamma, rho) in enumerate(itertools.product([0.05, 0.1, 0.2, 0.4], [0.5, 1.0, 2.0])):
        rows.append({"run": run, "learner": "perceptron", "bound": "novikoff", "title": "Novikoff", "guarantee": "D",
                     "quantity": "mistakes", "applicable": True, "gamma": gamma, "rho": rho, "seed": 0,
                     "setting": run, "ratio": next(ratios), "formula": "f"})
    fig = plots.ratio_heatmap(pd.DataFrame(rows), "novikoff", "gamma", "rho")
    ax = fig.axes[0]
    im = ax.get_images()[0]
    texts = ax.texts
    assert len(texts) == 12
    for text in texts:
        cell = im.cmap(im.norm(float(text.get_text())))[:3]
        assert _contrast(text.get_color(), cell) >= 4.5, (text.get_text(), text.get_color())


def test_figures_stay_deterministic(tmp_path) -> None:  # noqa: ANN001
    table, curves = _orderings()
    first = plots.save(plots.curves_vs_bound(table, curves, "novikoff"), tmp_path, "a")
    second = plots.save(plots.curves_vs_bound(table, curves, "novikoff"), tmp_path, "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_each_file_is_trimmed_to_the_box_bbox_inches_tight_gives_it(tmp_path) -> None:  # noqa: ANN001
    """save() measures both files' tight boxes from one layout (plots._tight_boxes): the PNG is byte for byte what
    ``savefig(bbox_inches="tight")`` writes, and the SVG has the size it gives. The two backends measure text
    differently, most in a rate figure's legend of long labels below its axes: here Agg's box is 31 points wider
    than the SVG backend's, so one box for both would widen the SVG."""
    def draw() -> Figure:
        return plots.rate_vs_bound(_table(), "kernel_expectation", "T")

    png, svg = plots.save(draw(), tmp_path, "saved")
    with matplotlib.rc_context(plots.STYLE):
        fig = draw()
        fig.savefig(tmp_path / "tight.png", metadata={"Software": None}, bbox_inches="tight")
        fig.savefig(tmp_path / "tight.svg", metadata={"Date": None}, bbox_inches="tight")
    assert png.read_bytes() == (tmp_path / "tight.png").read_bytes()

    def size(path: Path) -> list[str]:
        return re.findall(r'<svg[^>]* width="([^"]+)" height="([^"]+)"', path.read_text())

    assert size(svg) == size(tmp_path / "tight.svg") != []


@pytest.mark.parametrize("layout", ["constrained", "tight", None])
def test_a_callers_figure_is_trimmed_as_bbox_inches_tight_trims_it(tmp_path, layout) -> None:  # noqa: ANN001
    """A caller's Figure with its own layout engine (docs/notebook.md: ``layout="constrained"``), one laid out
    by ``tight_layout`` and one never laid out: save() writes the PNG ``savefig(bbox_inches="tight")``
    writes, byte for byte. (The box is measured without a draw first; these three figures also come out the
    same without ``_tight_boxes``' draw for a caller's own layout engine, which is kept as a precaution.)"""
    def draw() -> Figure:
        fig = Figure(figsize=(6, 4), layout=layout if layout != "tight" else None)
        top, bottom = fig.subfigures(2, 1) if layout == "constrained" else (fig, None)
        plots.rate_vs_bound(_table(), "kernel_expectation", "T", ax=top.subplots())
        if bottom is not None:
            bottom.subplots().set_title("a second panel, laid out by the engine")
        plots._plain_ticks(fig)  # as save() labels the log axes
        if layout == "tight":
            fig.tight_layout()
        return fig

    with matplotlib.rc_context(plots.STYLE):  # both drawn in the report's style
        png, _ = plots.save(draw(), tmp_path, "saved")
        draw().savefig(tmp_path / "tight.png", metadata={"Software": None}, bbox_inches="tight")
    assert png.read_bytes() == (tmp_path / "tight.png").read_bytes()


def _rate_figure() -> Figure:
    """A small figure with log axes (the kernel bound's rate against T), in no layout yet."""
    fig = Figure(figsize=(6, 4))
    plots.rate_vs_bound(_table(), "kernel_expectation", "T", ax=fig.subplots())
    return fig


def _count_tick_placements(m: pytest.MonkeyPatch) -> list[str]:
    """From now until ``m`` is undone, the name of each axis that places its ticks, in the list returned."""
    calls: list[str] = []
    update = matplotlib.axis.Axis._update_ticks

    def counted(axis: matplotlib.axis.Axis) -> Any:
        calls.append(axis.axis_name)
        return update(axis)

    m.setattr(matplotlib.axis.Axis, "_update_ticks", counted)
    return calls


def test_a_save_computes_each_axis_ticks_once_and_only_for_itself(tmp_path) -> None:  # noqa: ANN001
    """save() places each axis's ticks once for its four passes (plots._ticks_once), and that is the figure as a
    plain ``savefig(bbox_inches="tight")`` writes it; a figure saved, changed (new view limits: new ticks) and saved
    again is the changed figure, byte for byte: the ticks of a save do not outlive it."""
    def draw() -> Figure:
        fig = _rate_figure()
        plots._plain_ticks(fig)
        fig.tight_layout()
        return fig

    with pytest.MonkeyPatch.context() as m, matplotlib.rc_context(plots.STYLE):  # both drawn in the report's style
        fig = draw()
        calls = _count_tick_placements(m)
        plots.save(fig, tmp_path, "first")
        assert sorted(calls) == ["x", "y"]  # four passes (two boxes, two files), one placement per axis
        fig.axes[0].set_ylim(1e-4, 1e3)
        fig.savefig(tmp_path / "after.png", metadata={"Software": None}, bbox_inches="tight")  # a draw of the caller's
        second, _ = plots.save(fig, tmp_path, "second")
        changed = draw()
        changed.axes[0].set_ylim(1e-4, 1e3)
        changed.savefig(tmp_path / "tight.png", metadata={"Software": None}, bbox_inches="tight")
    assert second.read_bytes() == (tmp_path / "tight.png").read_bytes() == (tmp_path / "after.png").read_bytes()
    assert second.read_bytes() != (tmp_path / "first.png").read_bytes()


def test_a_layout_within_a_rect_computes_each_axis_ticks_once(tmp_path) -> None:  # noqa: ANN001
    """plots._layout's tight layout measures the figure twice when given a ``rect`` (the second time within it),
    with the Axes where the first measure found them: each axis places its ticks once (plots._ticks_once), and the
    figure laid out and saved is the one ``tight_layout`` lays out without it, byte for byte; the ticks placed for
    the layout do not outlive it (the save places them again, at the Axes' new positions)."""
    def draw() -> Figure:
        fig = _rate_figure()
        fig.suptitle("a title the rect leaves room for")
        return fig

    with pytest.MonkeyPatch.context() as m, matplotlib.rc_context(plots.STYLE):
        fig = draw()
        calls = _count_tick_placements(m)
        plots._layout(fig, own=True, rect=(0, 0.1, 1, 0.9))
        assert sorted(calls) == ["x", "y"]  # two measures, one placement per axis
        m.undo()
        plain = draw()
        plots._plain_ticks(plain)
        plain.tight_layout(rect=(0, 0.1, 1, 0.9))
        assert fig.subplotpars.__dict__ == plain.subplotpars.__dict__
        fig.savefig(tmp_path / "memo.png", metadata={"Software": None})
        plain.savefig(tmp_path / "plain.png", metadata={"Software": None})
    assert (tmp_path / "memo.png").read_bytes() == (tmp_path / "plain.png").read_bytes()
    assert "_update_ticks" not in vars(fig.axes[0].xaxis)  # the method is the class's again


def _many_runs(seeds: int) -> pd.DataFrame:
    """``seeds`` runs at each of two margins: the measured value is the seed's rank, so its quantiles are known."""
    rows = []
    for gamma, seed in itertools.product([0.1, 0.2], range(seeds)):
        bound = 1 / gamma**2
        rows.append({"run": f"{gamma}-{seed}", "learner": "perceptron", "bound": "novikoff", "title": "Novikoff",
                     "guarantee": "D", "quantity": "mistakes", "applicable": True, "informative": True, "holds": True,
                     "gamma": gamma, "seed": seed, "setting": str(gamma), "param_names": "gamma seed",
                     "empirical": 1.0 + seed * (bound - 2) / (seeds - 1), "theoretical": bound, "trivial": np.nan,
                     "formula": "(R/gamma)^2", "ratio": (1.0 + seed * (bound - 2) / (seeds - 1)) / bound})
    return pd.DataFrame(rows)


def _markers(fig: Figure) -> int:
    from matplotlib.collections import PathCollection  # what scatter draws

    return sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections if isinstance(c, PathCollection))


def test_a_setting_of_many_runs_is_drawn_as_its_quantiles_and_still_counted_in_the_title() -> None:
    few, many = _many_runs(plots.POINTS), _many_runs(10 * plots.POINTS)
    assert _markers(plots.measured_vs_bound(few, "novikoff")) == len(few)  # one marker per run up to POINTS
    fig = plots.measured_vs_bound(many, "novikoff")
    assert _markers(fig) == 2  # one glyph per margin: the median run
    ax = fig.axes[0]
    assert f"{len(many)} runs ({len(many)} informative), 0 above the bound" in ax.get_title()
    # each glyph's thin line spans the measured min..max, its thick one the 5-95 % quantiles
    spans = {tuple(np.round(line.get_ydata(), 9)) for line in ax.get_lines() if len(set(line.get_xdata())) == 1}
    for gamma in (0.1, 0.2):
        y = many.loc[many["gamma"] == gamma, "empirical"].to_numpy()
        assert tuple(np.round([y.min(), y.max()], 9)) in spans
        assert tuple(np.round(np.quantile(y, [0.05, 0.95]), 9)) in spans
    assert any("runs: median, 5-95 %" in t.get_text() for t in ax.get_legend().get_texts())


@pytest.mark.parametrize("dtype", ["str", object])
@pytest.mark.parametrize("order", ["gathered", "shuffled"])
def test_each_curves_rows_are_what_groupby_gives(dtype: object, order: str) -> None:
    """plots._curve_rows is ``groupby(["run", "quantity"]).indices`` (keys with a missing value left out);
    a key whose rows are consecutive, as a sweep gathers them, is a slice (read without a copy)."""
    rng = np.random.default_rng(3)
    keys = [(r, q) for r in ["r1", "r2", None, "r10"] for q in ["mistakes", "bound/novikoff", None]]
    rows = [(r, q, t) for r, q in keys for t in range(1 + int(rng.integers(0, 4)))]
    if order == "shuffled":
        rows = [rows[i] for i in rng.permutation(len(rows))]
    curves = pd.DataFrame(rows, columns=["run", "quantity", "t"]).astype({"run": dtype, "quantity": dtype})
    curves["empirical"] = rng.random(len(curves))
    got = plots._curve_rows(curves)
    want = curves.groupby(["run", "quantity"], sort=False).indices
    assert set(got) == set(want) and len(want) == 6
    positions = np.arange(len(curves))
    for key, at in want.items():
        assert np.array_equal(positions[got[key]], at)
        if order == "gathered":
            assert isinstance(got[key], slice)
    assert plots._curve_rows(curves.iloc[:0]) == {}
    some = plots._curve_rows(curves, ["bound/novikoff", "other"])  # the keys of these quantities only
    assert set(some) == {k for k in want if k[1] == "bound/novikoff"} and len(some) == 3
    for key, at in some.items():
        assert np.array_equal(positions[at], want[key])


def test_the_figures_key_hashed_in_pieces_is_the_key_hashed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table()
    curves = pd.DataFrame({"run": np.repeat(table["run"].to_numpy(), 5), "quantity": "suboptimality",
                           "t": np.tile(np.arange(1, 6), len(table)), "empirical": np.arange(5 * len(table)) / 7})
    monkeypatch.setattr(plots, "_HASH_ROWS", 10**9)
    whole = plots._figures_key(table, curves)
    monkeypatch.setattr(plots, "_HASH_ROWS", 7)
    assert plots._figures_key(table, curves) == whole
    changed = curves.copy()
    changed.loc[len(changed) - 1, "empirical"] += 1e-12  # in the last piece
    assert plots._figures_key(table, changed) != whole


def test_no_tick_label_is_left_to_mathtext(orderings_figures) -> None:  # noqa: ANN001
    """Log axes are labelled in plain text (10⁻³, 2×10¹): parsing matplotlib's mathtext labels was a third of the
    time of drawing a small sweep's figures. Every tick label of every figure, once laid out, has no '$'."""
    figures = [*orderings_figures, ("compare", plots.compare(_table(), "suboptimality", "projection", "T")),
               ("rate", plots.rate_vs_bound(_table(), "kernel_expectation", "T"))]
    for name, fig in figures:
        fig.draw_without_rendering()  # the tick labels as drawn
        labels = [t.get_text() for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                  for t in axis.get_ticklabels(which="both")]
        assert labels and not [t for t in labels if "$" in t], (name, labels)
    assert any("⁰" in t or "¹" in t or "²" in t or "⁻" in t for _, fig in figures for ax in fig.axes
               for t in ax.xaxis.get_ticklabels(which="both") + ax.yaxis.get_ticklabels(which="both")
               for t in [t.get_text()])


def test_a_rate_figure_gives_the_measured_and_the_bound_s_log_log_slopes() -> None:
    """Measured 5/T and a bound 50 ln(T)/T over T = 10..10^4: the legend says the measured slope is -1.00 and
    the bound's is shallower (the log factor); two values of T give no slope (two points say little)."""
    rows = [{"run": i, "learner": "pegasos", "bound": "expectation", "title": "Expected", "guarantee": "E",
             "quantity": "suboptimality", "applicable": True, "T": T, "seed": seed, "setting": str(T),
             "param_names": "T seed", "empirical": 5 / T, "theoretical": 50 * np.log(T) / T, "trivial": np.nan,
             "formula": "f", "ratio": 0.1}
            for i, (T, seed) in enumerate(itertools.product([10, 100, 1000, 10_000], range(2)))]
    table = pd.DataFrame(rows)
    labels = [t.get_text() for t in plots.rate_vs_bound(table, "expectation", "T").axes[0].get_legend().get_texts()]
    slopes = {label.split(":")[0] if ":" in label else label.split(",")[0]: float(label.rsplit("slope ", 1)[1])
              for label in labels if "slope" in label}
    measured = [v for k, v in slopes.items() if k.startswith("measured")]
    bound = [v for k, v in slopes.items() if "bound" in k]
    assert measured == [-1.0] and len(bound) == 1 and -1.0 < bound[0] < -0.6, labels
    two = table[table["T"] <= 100]
    assert not any("slope" in t.get_text()
                   for t in plots.rate_vs_bound(two, "expectation", "T").axes[0].get_legend().get_texts())


def test_a_second_core_draws_half_the_figures_with_the_same_bytes(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """From HELPER_FROM figures on, a forked helper draws every other figure: the files, their order and their
    bytes are those of one process drawing them all; a helper that dies leaves its figures to this process."""
    import hashlib
    import os

    table = _table()
    curves = pd.DataFrame(columns=["run", "quantity", "t", "value"])
    assert len(plots.figure_plan(table, curves)) >= plots.HELPER_FROM

    def drawn(where: str) -> dict[str, str]:
        (tmp_path / where).mkdir()
        paths = plots.sweep_figures(table, curves, tmp_path / where, failed=[])
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}

    monkeypatch.setattr(plots, "HELPER_FROM", 10**6)
    alone = drawn("alone")
    monkeypatch.setattr(plots, "HELPER_FROM", 2)
    pids: set[int] = set()
    save = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, d, stem: (pids.add(os.getpid()), save(fig, d, stem))[1])
    shared = drawn("shared")
    assert list(shared) == list(alone) and shared == alone
    if forks.cores() > 1:
        assert pids == {os.getpid()}  # the helper's figures were saved in another process (its pid never comes back)

        def dies(fig, d, stem):  # noqa: ANN001, ANN202
            if os.getpid() not in pids:  # the helper: killed as by the kernel's OOM killer
                os._exit(9)
            return save(fig, d, stem)

        monkeypatch.setattr(plots, "save", dies)
        assert drawn("helper_died") == alone


@pytest.fixture
def two_processes(monkeypatch: pytest.MonkeyPatch) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A sweep's tables whose figures are drawn by the helper and this process (skipped on one core)."""
    if forks.cores() < 2:
        pytest.skip("one core: the figures are drawn in this process")
    monkeypatch.setattr(plots, "HELPER_FROM", 2)
    return _table(), pd.DataFrame(columns=["run", "quantity", "t", "value"])


def test_an_interrupt_ends_the_helper_without_its_queue(tmp_path, monkeypatch, two_processes) -> None:  # noqa: ANN001
    """An interrupt while the helper draws (here in the sweep's block) ends it at once: the figures it had not
    started are not drawn after the command was told to stop."""
    import time

    table, curves = two_processes
    log = tmp_path / "saves.txt"
    save = plots.save

    def slow(fig, d, stem):  # noqa: ANN001, ANN202
        time.sleep(0.4)
        with open(log, "a") as f:
            f.write(stem + "\n")
        return save(fig, d, stem)

    monkeypatch.setattr(plots, "save", slow)
    planned = len(plots.figure_plan(table, curves))
    assert planned >= 4
    def interrupted() -> None:
        with plots.sweep_figures_beside(table, curves, tmp_path, failed=[]):
            time.sleep(0.2)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    time.sleep(0.4 * planned)  # what the helper's queue would take
    assert len(log.read_text().splitlines() if log.exists() else []) <= 1


def test_the_helper_takes_ctrl_c_as_a_plain_process() -> None:
    """The forked helper (figures, the report's PNGs) does not run the command's stop guard it inherited: Ctrl-C
    and SIGTERM end it at once, and only the command ends runs."""
    import signal

    pool = plots.helper()
    if pool is None:
        pytest.skip("one core, or no fork: the figures are drawn in this process")
    import os

    read, write = os.pipe()
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write)  # as the command's stop guard has it
    try:
        with pool:
            handlers, wakeup = pool.submit(_handlers).result()
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read)
        os.close(write)
    assert handlers == [signal.SIG_DFL] * 3 and wakeup == -1  # the stop guard's pipe is not the helper's


def _handlers() -> tuple[list, int]:
    import signal

    return [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)], signal.set_wakeup_fd(-1)


@pytest.mark.parametrize("steps", [True, False])
def test_a_band_on_the_runs_shared_steps_is_the_stack_of_their_values(steps: bool) -> None:
    """plots._band_grid takes the runs' values as they are when every run has the same steps, and else goes run
    by run: both ways give the same grid, bit for bit (NaN and infinite values too; a count's steps and a curve's
    interpolation in log t), and runs whose steps differ in one place or in number, or repeat a step, are never
    stacked."""
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        runs, length = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 7))
        t = np.cumsum(data.draw(st.lists(st.integers(2, 50), min_size=length, max_size=length))).astype(np.int64)
        if length > 1 and data.draw(st.booleans()):  # a step recorded twice, in every run: the union has one
            j = data.draw(st.integers(1, length - 1))
            t[j] = t[j - 1]
        value = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 3.0]))
        curves = []
        for _ in range(runs):
            rt = t.copy()
            change = data.draw(st.sampled_from(["none", "none", "step", "fewer"]))
            if change == "step":  # one step one earlier (the gaps are at least 2: still increasing, still >= 1)
                rt[data.draw(st.integers(0, length - 1))] -= 1
            elif change == "fewer" and length > 1:
                rt = rt[:-1]
            values = np.array(data.draw(st.lists(value, min_size=len(rt), max_size=len(rt))), dtype=float)
            curves.append(plots._Curve(rt, np.floor(values) if steps else values))
        got_t, got = plots._band_grid(curves, steps)
        want_t, want = plots._band_grid_each(curves, steps)
        assert np.array_equal(got_t, want_t) and got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=True)

    check()


def test_a_sweeps_figures_are_queued_heaviest_first() -> None:
    """plots._by_cost: the curves figures (WEIGHT) first, plan order among equals."""
    kinds = ["measured_vs_bound", "curves_vs_bound", "measured_vs_bound", "measured_vs_bound", "curves_vs_bound"]
    plan = [(i, plots.Spec(f"f{i}", kind, {})) for i, kind in enumerate(kinds)]
    assert [i for i, _ in plots._by_cost(plan)] == [1, 4, 0, 2, 3]


@pytest.mark.parametrize("long_block", [False, True])
def test_each_figure_is_drawn_once_whatever_the_block_costs(tmp_path, monkeypatch, two_processes,  # noqa: ANN001
                                                            long_block: bool) -> None:
    """The helper and, after the block, this process take the figures from one queue: every figure is drawn
    exactly once, by one of them; with a block that outlasts the helper's work the helper draws them all."""
    import os
    import time

    table, curves = two_processes
    log = tmp_path / "draws.txt"
    draw = plots.draw

    def logged(kind, table, curves, **kwargs):  # noqa: ANN001, ANN003, ANN202 - every figure, drawn or failing
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {kind} {kwargs}\n")
        return draw(kind, table, curves, **kwargs)

    monkeypatch.setattr(plots, "draw", logged)
    plan = plots.figure_plan(table, curves)
    failed: list[str] = []  # this table has no column some figures need: those fail in either process
    with plots.sweep_figures_beside(table, curves, tmp_path, failed=failed) as paths:
        waited = time.monotonic()
        while long_block and time.monotonic() - waited < 60:  # until the helper has taken the last figure
            if log.exists() and len(log.read_text().splitlines()) == len(plan):
                break
            time.sleep(0.05)
    draws = [line.split(" ", 1) for line in log.read_text().splitlines()]
    assert sorted(what for _, what in draws) == sorted(f"{s.kind} {s.kwargs}" for s in plan)  # each once
    assert len(plan) >= 4 and len(paths) == 2 * (len(plan) - len(failed))
    if long_block:
        assert {int(pid) for pid, _ in draws} == {int(draws[0][0])} != {os.getpid()}  # all in the helper
