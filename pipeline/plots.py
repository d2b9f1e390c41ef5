"""Plots: pure functions from the tidy results tables to matplotlib figures. Nothing is recomputed here."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pipeline.verdicts import mean_interval  # noqa: E402

# Columns a sweep may vary, in the order they are used for colour, marker and facets.
SWEPT = ("gamma", "rho", "ordering", "flip", "kernel", "ref_noise", "violators", "depth", "lam", "T", "batch", "sampling", "projection", "objective", "n", "d",
         "passes", "tie", "pos_fraction", "source",
         "positive", "negative", "standardize", "unit_ball", "bias", "nnz", "cls", "size", "adversary", "beta", "randomized", "experts")
SYMBOL = {"gamma": "γ", "rho": "ρ", "lam": "λ"}
STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "boundlab",  # stable SVG ids
}
MARKERS = "osD^v<>Ph*"
MAX_PANELS = 12  # panels of one comparison figure
BOUND_COLOR = "black"


def _varying(table: pd.DataFrame) -> list[str]:
    """The SWEPT columns that vary in ``table``, the runs' parameters first: a column the runs measured
    (the steps T of a learner that stops by itself) is shown only after the settings that were swept."""
    varying = [c for c in SWEPT if c in table and table[c].nunique(dropna=True) > 1]
    params = set(" ".join(table["param_names"].dropna().unique()).split()) if "param_names" in table else set()
    return sorted(varying, key=lambda c: c not in params) if params else varying


def _who(rows: pd.DataFrame) -> str:
    """The learners of ``rows`` for a title: "Perceptron", or "Perceptron and batch_perceptron"."""
    names = sorted(rows["learner"].astype(str).unique(), key=lambda n: (n != rows["learner"].iloc[0], n))
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return text[:1].upper() + text[1:]


def _per_setting(table: pd.DataFrame, column: str) -> bool:
    """Whether ``column`` is a property of the setting (one value for every seed of it), not something a
    run measured (the steps T of a learner that stops by itself)."""
    if "setting" not in table:
        return True
    return bool((table.groupby("setting")[column].nunique(dropna=False) <= 1).all())


def _fmt(col: str, value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return f"{col} = {str(bool(value)).lower()}"
    return f"{SYMBOL.get(col, col)} = {value:g}" if isinstance(value, (int, float, np.number)) else f"{col} = {value}"


def measured_vs_bound(table: pd.DataFrame, bound: str) -> plt.Figure:
    """One point per run: the measured quantity against the bound's value, log-log, with y = x."""
    rows = table[(table["bound"] == bound) & table["applicable"].astype(bool)]
    shown = rows[rows["empirical"] > 0]
    first = rows.iloc[0]
    varying = _varying(rows)
    hue = varying[0] if varying else None
    mark = varying[1] if len(varying) > 1 else None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(5.6, 4.6))
        hues = sorted(shown[hue].unique()) if hue else [None]
        marks = sorted(shown[mark].unique()) if mark else [None]
        cmap = plt.get_cmap("viridis", max(len(hues), 2))
        for i, h in enumerate(hues):
            for j, m in enumerate(marks):
                sel = shown
                if hue:
                    sel = sel[sel[hue] == h]
                if mark:
                    sel = sel[sel[mark] == m]
                info = sel["informative"].astype(bool) if "informative" in sel else pd.Series(True, index=sel.index)
                ax.scatter(sel.loc[info, "theoretical"], sel.loc[info, "empirical"], color=cmap(i),
                           marker=MARKERS[j % len(MARKERS)], s=28, alpha=0.85, edgecolor="white", linewidth=0.5, zorder=3)
                # a vacuous run (bound >= the trivial value) is drawn hollow: its bound says nothing
                ax.scatter(sel.loc[~info, "theoretical"], sel.loc[~info, "empirical"], facecolor="none",
                           edgecolor=cmap(i), marker=MARKERS[j % len(MARKERS)], s=28, linewidth=0.9, zorder=3)
        lo = min(shown["empirical"].min(), shown["theoretical"].min()) / 2 if len(shown) else 1
        hi = max(shown["empirical"].max(), shown["theoretical"].max()) * 2 if len(shown) else 10
        ax.plot([lo, hi], [lo, hi], color=BOUND_COLOR, lw=1.2, label="measured = bound")
        ax.fill_between([lo, hi], [lo, hi], [hi, hi], color="tab:red", alpha=0.07, label="violation region")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), aspect="equal",
               ylabel=f"measured {first['quantity']}")
        ax.set_xlabel(f"{first['title']} bound\n{first['formula']}", fontsize=8)
        violations = int((~rows["holds"].astype(bool)).sum())
        informative = int(rows["informative"].astype(bool).sum()) if "informative" in rows else len(rows)
        ax.set_title(f"{_who(rows)}: {first['quantity']} vs {first['title']} ({first['guarantee']})\n"
                     f"{len(rows)} runs ({informative} informative), {violations} above the bound, "
                     f"max ratio {rows['ratio'].max():.3g}", fontsize=10)
        handles, labels = ax.get_legend_handles_labels()
        if informative < len(rows):
            handles.append(plt.Line2D([], [], ls="", marker="o", markerfacecolor="none", color="grey"))
            labels.append("hollow: vacuous (bound >= trivial value)")
        if hue:
            handles += [plt.Line2D([], [], ls="", marker="o", color=cmap(i)) for i in range(len(hues))]
            labels += [_fmt(hue, h) for h in hues]
        if mark:
            handles += [plt.Line2D([], [], ls="", marker=MARKERS[j % len(MARKERS)], color="grey") for j in range(len(marks))]
            labels += [_fmt(mark, m) for m in marks]
        if len(shown) < len(rows):
            handles.append(plt.Line2D([], [], ls=""))
            labels.append(f"({len(rows) - len(shown)} runs with 0 not shown)")
        ax.legend(handles, labels, loc="upper left", fontsize=8)
        fig.tight_layout()
    return fig


SEED_LINES = 8  # runs per panel drawn one line each; beyond, the panel shows their median and range


def _band(ax: plt.Axes, runs: list[pd.DataFrame], color: object, dashed: bool, steps: bool) -> None:
    """The median over ``runs`` (each a curve: t, empirical) and their min..max as a shaded band, on the
    union of their steps (a count holds its value between steps; a curve is interpolated in log t)."""
    t = np.unique(np.concatenate([r["t"].to_numpy(dtype=float) for r in runs]))
    grid = np.full((len(runs), len(t)), np.nan)
    for k, r in enumerate(runs):
        rt, rv = r["t"].to_numpy(dtype=float), r["empirical"].to_numpy(dtype=float)
        inside = (t >= rt[0]) & (t <= rt[-1])
        if steps:
            grid[k, inside] = rv[np.searchsorted(rt, t[inside], side="right") - 1]
        else:
            grid[k, inside] = np.interp(np.log(t[inside]), np.log(rt), rv)
    with np.errstate(all="ignore"):
        lo, mid, hi = np.nanmin(grid, axis=0), np.nanmedian(grid, axis=0), np.nanmax(grid, axis=0)
    draw = ax.step if steps else ax.plot
    kw = {"where": "post"} if steps else {}
    draw(t, mid, color=color, lw=1.0 if dashed else 1.4, ls="--" if dashed else "-", **kw)
    ax.fill_between(t, lo, hi, color=color, alpha=0.12 if dashed else 0.25, lw=0, step="post" if steps else None)


def curves_vs_bound(table: pd.DataFrame, curves: pd.DataFrame, bound: str, max_panels: int = 16) -> plt.Figure:
    """The measured quantity against step t, one panel per parameter setting, with each run's bound
    dashed: its curve over t for anytime bounds, else a horizontal line. A panel of at most
    ``SEED_LINES`` runs draws one line per seed; a larger one draws the median over its runs with their
    min..max band, for the measured quantity and for the bound (a figure stays readable, and cheap, at
    any number of seeds)."""
    rows = table[(table["bound"] == bound)]
    quantity = rows["quantity"].iloc[0]
    facets = [c for c in _varying(rows) if c != "seed"][:2]
    groups = list(rows.groupby(facets, sort=True)) if facets else [((), rows)]
    groups = groups[:max_panels]
    ncols = int(np.ceil(np.sqrt(len(groups))))
    nrows = int(np.ceil(len(groups) / ncols))
    wanted = {quantity, f"bound/{bound}"} | {f"{p}/{q}" for p in rows.get("part", pd.Series(dtype=object)).dropna().unique()
                                                 if isinstance(p, str) and p for q in (quantity, f"bound/{bound}")}
    relevant = curves[curves["run"].isin(rows["run"]) & curves["quantity"].isin(wanted)]
    by_run = {key: part for key, part in relevant.groupby(["run", "quantity"], sort=False)}  # one pass, not one per run
    empty = relevant.iloc[:0]
    banded = False
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(max(3.2 * ncols + 0.6, 6.4), 2.6 * nrows + 1.6), squeeze=False,
                                 sharex=True, sharey=True)
        cmap = plt.get_cmap("tab10")
        for ax, (key, sel) in zip(axes.flat, groups):
            key = key if isinstance(key, tuple) else (key,)
            measured, bounds, levels = [], [], []
            for r in sel.itertuples():
                prefix = f"{r.part}/" if isinstance(getattr(r, "part", None), str) and r.part else ""
                measured.append((r, by_run.get((r.run, f"{prefix}{quantity}"), empty)))
                bounds.append(by_run.get((r.run, f"{prefix}bound/{bound}"), empty))
                levels.append(r.theoretical if r.applicable else np.nan)
            steps = all(len(c) == 0 or np.all(np.mod(c["empirical"], 1) == 0) for _, c in measured)  # counts change at steps
            if len(measured) <= SEED_LINES:
                for i, ((r, c), b, level) in enumerate(zip(measured, bounds, levels)):
                    if steps:
                        ax.step(c["t"], c["empirical"], where="post", color=cmap(i % 10), lw=1.2, label=f"seed {r.seed}")
                    else:
                        ax.plot(c["t"], c["empirical"], color=cmap(i % 10), lw=1.2, label=f"seed {r.seed}")
                    if len(b):  # each run's own bound, in its colour
                        ax.plot(b["t"], b["empirical"], color=cmap(i % 10), ls="--", lw=1.0, alpha=0.8)
                    elif np.isfinite(level):
                        ax.axhline(level, color=cmap(i % 10), ls="--", lw=1.0, alpha=0.8)
            else:
                banded = True
                runs = [c for _, c in measured if len(c)]
                if runs:
                    _band(ax, runs, cmap(0), dashed=False, steps=steps)
                curved = [b for b in bounds if len(b)]
                if curved:
                    _band(ax, curved, BOUND_COLOR, dashed=True, steps=False)
                elif np.isfinite(levels).any():
                    finite = np.asarray(levels, dtype=float)[np.isfinite(levels)]
                    ax.axhline(float(np.median(finite)), color=BOUND_COLOR, ls="--", lw=1.0)
                    if finite.min() < finite.max():
                        ax.axhspan(finite.min(), finite.max(), color=BOUND_COLOR, alpha=0.08, lw=0)
                ax.text(0.02, 0.03, f"{len(measured)} runs", transform=ax.transAxes, fontsize=7, va="bottom")
            ax.set_title(", ".join(_fmt(f, v) for f, v in zip(facets, key)) or "all runs", fontsize=9)
            shown = pd.concat([c for _, c in measured] + bounds) if measured else empty
            ax.set(xscale="log", yscale="log" if (shown["empirical"] > 0).all() else "symlog")
        for ax in axes.flat[len(groups):]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel("step t")
        for ax in axes[:, 0]:
            ax.set_ylabel(f"{quantity} up to t")
        if banded:
            handles = [plt.Line2D([], [], color=cmap(0), lw=1.4),
                       matplotlib.patches.Patch(color=cmap(0), alpha=0.25, lw=0),
                       plt.Line2D([], [], color=BOUND_COLOR, ls="--")]
            labels = [f"{quantity}: median over the panel's runs", "min..max over the runs",
                      f"{rows['title'].iloc[0]} bound: median over the runs (band: min..max)"]
        else:
            handles, labels = axes.flat[0].get_legend_handles_labels()
            handles.append(plt.Line2D([], [], color=BOUND_COLOR, ls="--"))
            labels.append(f"{rows['title'].iloc[0]} bound of the run")
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8)
        fig.suptitle(f"{_who(rows)}: {quantity} against step t, with the "
                     f"{rows['title'].iloc[0]} bound (dashed)\n{rows['formula'].iloc[0]}", fontsize=10)
        fig.tight_layout(rect=(0, 0.04 + 0.03 * ((len(labels) + 3) // 4), 1, 1))
    return fig


def rate_vs_bound(table: pd.DataFrame, bound: str, x: str) -> plt.Figure:
    """The measured quantity against ``x`` (T or m) on log-log axes: the mean over seeds with its 95 %
    t band, and the bound (mean over seeds) as a dashed line, one colour per other swept setting."""
    rows = table[(table["bound"] == bound) & table["applicable"].astype(bool)]
    first = rows.iloc[0]
    # a colour per combination of the other swept settings (never a mean over one of them), but not one that
    # merely renames x (e.g. n when T = m)
    hues = [c for c in _varying(rows) if c not in (x, "seed") and rows.groupby(c)[x].nunique().max() > 1]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 4.6))
        groups = list(rows.groupby(hues, sort=True)) if hues else [((), rows)]
        cmap = plt.get_cmap("viridis", max(len(groups), 2))
        for i, (h, sel) in enumerate(groups):
            agg = sel.groupby(x).agg(bound=("theoretical", "mean")).reset_index()
            bands = [_mean_ci(g["empirical"]) for _, g in sel.groupby(x, sort=True)]
            agg["mean"] = [b[0] for b in bands]
            half = np.array([b[1] for b in bands])
            prefix = ", ".join(_fmt(c, v) for c, v in zip(hues, h)) + ": " if hues else ""
            ax.plot(agg[x], agg["mean"], marker="o", ms=4, color=cmap(i),
                    label=f"{prefix}measured, mean over seeds (95 % band)")
            ax.fill_between(agg[x], agg["mean"] - half, agg["mean"] + half, color=cmap(i), alpha=0.2, lw=0)
            ax.plot(agg[x], agg["bound"], ls="--", marker="_", ms=14, color=cmap(i), lw=1.2,
                    label=f"{prefix}{first['title']} bound")
            if "trivial" in sel and sel["trivial"].notna().any():  # above this line the bound says nothing
                trivial = sel.groupby(x, sort=True)["trivial"].mean()
                ax.plot(trivial.index, trivial.to_numpy(), ls=":", marker="_", ms=14, color=cmap(i), lw=1.2,
                        label=f"{prefix}trivial value (bound vacuous above it)")
        positive = bool((rows["empirical"] > 0).all())
        ax.set(xscale="log", xlabel=x, ylabel=f"{first['quantity']} (mean over seeds, 95 % band)")
        if positive:
            ax.set_yscale("log")
        else:  # the excess can be negative (||w_bar|| may exceed B): symmetric log axis
            ax.set_yscale("symlog", linthresh=float(rows["theoretical"].min()) / 10)
        seeds = int(rows.groupby(["setting"]).size().max())
        ax.set_title(f"{first['learner']}: {first['quantity']} against {x}, with the {first['title']} bound "
                     f"({first['guarantee']})\n{first['formula']}\n({seeds} seeds per point)", fontsize=9)
        fig.tight_layout()
        # below the axes, outside them: the lines stay visible (save() trims to what is drawn)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=min(3, max(1, len(groups))))
    return fig


# Pairs of swept parameters shown as heatmaps of measured/bound, and categorical ones compared side by side.
HEATMAP_PAIRS = (("gamma", "rho"), ("lam", "T"), ("n", "rho"))
CATEGORICAL = ("sampling", "kernel", "objective", "projection", "learner", "ordering", "adversary", "cls", "source", "tie")


def _mean_ci(values: pd.Series) -> tuple[float, float]:
    """Mean over seeds and the half-width of its 95 % t interval (0 for a single value)."""
    return mean_interval(values.dropna().to_numpy(dtype=np.float64))


def ratio_heatmap(table: pd.DataFrame, bound: str, x: str, y: str) -> plt.Figure:
    """measured / bound over the (x, y) grid: the worst run per cell for a (D) bound (it must stay <= 1),
    the mean over seeds for (E) and (P) bounds; each cell annotated with its value."""
    rows = table[(table["bound"] == bound) & table["applicable"].astype(bool)]
    first = rows.iloc[0]
    worst = first["guarantee"] == "D"
    agg = rows.groupby([y, x])["ratio"].agg("max" if worst else "mean").unstack(x).sort_index(ascending=False)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(1.1 * agg.shape[1] + 2.4, 0.75 * agg.shape[0] + 1.8))
        vmax = max(1.0, float(np.nanmax(agg.to_numpy())))
        im = ax.imshow(agg.to_numpy(dtype=float), cmap="viridis", vmin=0.0, vmax=vmax, aspect="auto")
        for (i, j), v in np.ndenumerate(agg.to_numpy(dtype=float)):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize=8,
                        color="white" if v < 0.6 * vmax else "black")
        ax.set_xticks(range(agg.shape[1]), [f"{v:g}" for v in agg.columns])
        ax.set_yticks(range(agg.shape[0]), [f"{v:g}" for v in agg.index])
        ax.set(xlabel=SYMBOL.get(x, x), ylabel=SYMBOL.get(y, y))
        ax.grid(False)
        what = "worst run" if worst else "mean over seeds"
        fig.colorbar(im, ax=ax, label=f"measured / bound ({what})")
        ax.set_title(f"{_who(rows)}: {first['quantity']} / {first['title']} bound "
                     f"({first['guarantee']})\n{what}; > 1 would be a violation", fontsize=9)
        fig.tight_layout()
    return fig


def compare(table: pd.DataFrame, quantity: str, by: str, x: str | None = None) -> plt.Figure:
    """``quantity`` (a bound's measured quantity, or a column of the table such as f_star_hi) for each
    value of ``by``: the mean over seeds with its 95 % band against ``x`` (log-log) when given, else one
    column of runs per value with the mean and its interval. A bound on the quantity, where it applies,
    is drawn dashed in the same colour. Every run is shown, whether a bound applies to it or not. Runs of
    several learners (when ``by`` is not the learner) get a panel each, side by side."""
    if quantity in table["quantity"].values:
        rows = table[table["quantity"] == quantity]
        bounded = rows[rows["applicable"].astype(bool) & (rows["guarantee"] != "P")]
        bounded = bounded[bounded["bound"] == bounded["bound"].iloc[0]] if len(bounded) else bounded  # one bound, named
        rows = rows.drop_duplicates("run")
        values = rows.set_index("run")["empirical"]
    else:
        rows = table.drop_duplicates("run")
        bounded = rows.iloc[0:0]
        values = rows.set_index("run")[quantity]
    rows = rows.assign(value=rows["run"].map(values))
    cats = sorted(rows[by].astype(str).unique())
    # a panel per learner and per value of every other setting swept beside x: a point is a mean over seeds
    # only, never over settings (at most MAX_PANELS; beyond, the settings beyond the first are pooled and
    # the title says so)
    others = [c for c in _varying(rows) if c not in (by, x, "seed", "learner") and _per_setting(rows, c)]
    keys = ([] if by == "learner" or rows["learner"].nunique() == 1 else ["learner"]) + others
    while keys and rows.groupby(keys).ngroups > MAX_PANELS:
        keys.pop()
    pooled = [c for c in others if c not in keys]
    panels = list(rows.groupby(keys, sort=True)) if keys else [((), rows)]
    ncols = min(len(panels), 4)
    nrows = -(-len(panels) // ncols)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(6.0 * ncols ** 0.8, 4.4 * nrows ** 0.9), sharey=True,
                                 squeeze=False)
        for ax, (key, mine) in zip(axes.flat, panels):
            key = key if isinstance(key, tuple) else (key,)
            theirs = bounded
            for c, v in zip(keys, key):
                theirs = theirs[theirs[c] == v]
            _compare_panel(ax, mine, theirs, quantity, by, x, cats)
            if len(panels) > 1:
                ax.set_title(", ".join(str(v) if c == "learner" else _fmt(c, v) for c, v in zip(keys, key)), fontsize=9)
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        for ax in axes[:, 0]:
            ax.set_ylabel(f"{quantity} (per run; mean over seeds, 95 % band)")
        seeds = int(rows.groupby("setting").size().max())
        pool = f"; pooled over {', '.join(pooled)}" if pooled else ""
        if len(panels) == 1:
            axes[0, 0].set_title(f"{_who(rows)}: {quantity} by {by}" + (f" against {x}" if x else "")
                                 + f" ({seeds} seeds per setting{pool})", fontsize=9)
        else:
            fig.suptitle(f"{_who(rows)}: {quantity} by {by}" + (f" against {SYMBOL.get(x, x)}" if x else "")
                         + f", a panel per {' and '.join(keys)} ({seeds} seeds per setting{pool})", fontsize=10)
        fig.tight_layout()
    return fig


def _compare_panel(ax: plt.Axes, rows: pd.DataFrame, bounded: pd.DataFrame, quantity: str, by: str,
                   x: str | None, cats: list[str]) -> None:
    """One panel of :func:`compare`: ``rows`` (one per run, with ``value``) by ``by``, against ``x``."""
    cmap = plt.get_cmap("tab10")
    for i, cat in enumerate(cats):
        sel = rows[rows[by].astype(str) == cat]
        if not len(sel):
            continue
        if x is not None:
            stats_ = [(v, *_mean_ci(g["value"])) for v, g in sel.groupby(x, sort=True)]
            xs, means, halves = (np.array(a, dtype=float) for a in zip(*stats_))
            ax.plot(xs, means, marker="o", ms=4, color=cmap(i), label=f"{by} = {cat.lower() if cat in ('True', 'False') else cat}")
            ax.fill_between(xs, means - halves, means + halves, color=cmap(i), alpha=0.2, lw=0)
            b = bounded[bounded[by].astype(str) == cat]
            if len(b):
                bx = b.groupby(x, sort=True)["theoretical"].mean()
                ax.plot(bx.index, bx.to_numpy(), ls="--", color=cmap(i), lw=1.1,
                        label=f"{by} = {cat.lower() if cat in ('True', 'False') else cat}: {b['title'].iloc[0]} bound")
        else:
            jitter = (np.arange(len(sel)) - (len(sel) - 1) / 2) * 0.04
            ax.scatter(i + jitter, sel["value"], color=cmap(i), s=18, alpha=0.7, zorder=3)
            mean, half = _mean_ci(sel["value"])
            ax.errorbar(i + 0.25, mean, yerr=half, fmt="s", color="black", ms=5, capsize=3, zorder=4)
    if x is not None:
        positive = bool((rows["value"] > 0).all())
        ax.set(xscale="log", yscale="log" if positive else "symlog", xlabel=SYMBOL.get(x, x))
        ax.legend(fontsize=7, loc="best")
    else:
        ax.set_xticks(range(len(cats)), cats)
        ax.set_xlabel(by)
        ax.errorbar([], [], yerr=[], fmt="s", color="black", label="mean, 95 % interval")
        ax.legend(fontsize=7, loc="best")


def save(fig: plt.Figure, directory: Path, stem: str) -> list[Path]:
    """Write ``fig`` as PNG and SVG; return the paths."""
    paths = [directory / f"{stem}.png", directory / f"{stem}.svg"]
    with plt.rc_context(STYLE):  # svg.hashsalt is read when saving: stable ids, byte-identical files
        for p in paths:
            fig.savefig(p, metadata={"Date": None} if p.suffix == ".svg" else {"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return paths


def sweep_figures(table: pd.DataFrame, curves: pd.DataFrame, directory: Path) -> list[Path]:
    """Every figure of a sweep: for each bound that applied in at least one run, measured against the
    bound (log-log, one point per run) and, for (D) and (E) bounds, against step t; the (E) rate against
    T or m with seed bands; heatmaps of measured/bound over swept pairs (gamma x rho, lambda x T); and the
    measured quantity by each swept categorical setting (sampling scheme, kernel, ...)."""
    paths: list[Path] = []
    applicable = table[table["applicable"].astype(bool)]
    varying = _varying(table)
    drawn: set[str] = set()  # quantities whose curves are drawn: one figure per quantity (its first bound)
    for bound in applicable["bound"].unique():
        rows = table[table["bound"] == bound]
        guarantee, quantity = rows["guarantee"].iloc[0], rows["quantity"].iloc[0]
        paths += save(measured_vs_bound(table, bound), directory, f"{bound}_measured_vs_bound")
        names = curves["quantity"] if "quantity" in curves else pd.Series([], dtype=object)
        traced = bool(names.eq(quantity).any() or names.str.endswith(f"/{quantity}").any())  # a count per run has no curve
        if guarantee in ("D", "E") and quantity not in drawn and traced:
            drawn.add(quantity)
            paths += save(curves_vs_bound(table, curves, bound), directory, f"{bound}_curves")
        for x in ("T", "m", "n"):
            if x in rows and rows[x].nunique() > 1 and guarantee == "E":
                paths += save(rate_vs_bound(table, bound, x), directory, f"{bound}_rate_vs_{x}")
                break
        for x, y in HEATMAP_PAIRS:
            if x in varying and y in varying and guarantee in ("D", "E"):
                paths += save(ratio_heatmap(table, bound, x, y), directory, f"{bound}_heatmap_{y}_{x}")
    x = next((c for c in ("T", "m", "gamma") if c in varying and _per_setting(table, c)), None)
    for by in (c for c in CATEGORICAL if c in varying or (c == "learner" and table["learner"].nunique() > 1)):
        judged = applicable[applicable["guarantee"].isin(["E", "D"])]
        for quantity in judged.sort_values("guarantee", ascending=False)["quantity"].unique()[:1]:
            paths += save(compare(table, quantity, by, x), directory, f"{quantity}_by_{by}")
    return paths
