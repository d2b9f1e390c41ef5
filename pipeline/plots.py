"""Plots: pure functions from the tidy results tables to matplotlib figures. Nothing is recomputed here."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Columns a sweep may vary, in the order they are used for colour, marker and facets.
SWEPT = ("gamma", "rho", "flip", "violators", "depth", "lam", "T", "batch", "sampling", "projection", "objective", "n", "d",
         "passes", "tie", "pos_fraction", "source",
         "positive", "negative", "standardize", "unit_ball", "bias", "nnz", "cls", "size", "adversary", "beta", "randomized", "experts")
SYMBOL = {"gamma": "γ", "rho": "ρ", "lam": "λ"}
STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 200,
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "boundlab",  # stable SVG ids
}
MARKERS = "osD^v<>Ph*"
BOUND_COLOR = "black"


def _varying(table: pd.DataFrame) -> list[str]:
    return [c for c in SWEPT if c in table and table[c].nunique(dropna=True) > 1]


def _fmt(col: str, value: object) -> str:
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
                ax.scatter(sel["theoretical"], sel["empirical"], color=cmap(i), marker=MARKERS[j % len(MARKERS)],
                           s=28, alpha=0.85, edgecolor="white", linewidth=0.5, zorder=3)
        lo = min(shown["empirical"].min(), shown["theoretical"].min()) / 2 if len(shown) else 1
        hi = max(shown["empirical"].max(), shown["theoretical"].max()) * 2 if len(shown) else 10
        ax.plot([lo, hi], [lo, hi], color=BOUND_COLOR, lw=1.2, label="measured = bound")
        ax.fill_between([lo, hi], [lo, hi], [hi, hi], color="tab:red", alpha=0.07, label="violation region")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), aspect="equal",
               xlabel=f"{first['title']} bound  {first['formula']}", ylabel=f"measured {first['quantity']}")
        violations = int((~rows["holds"].astype(bool)).sum())
        ax.set_title(f"{first['learner'].capitalize()}: measured {first['quantity']} vs {first['title']} "
                     f"bound ({first['guarantee']})\n"
                     f"{len(rows)} runs, {violations} violations, max ratio {rows['ratio'].max():.3g}", fontsize=10)
        handles, labels = ax.get_legend_handles_labels()
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


def curves_vs_bound(table: pd.DataFrame, curves: pd.DataFrame, bound: str, max_panels: int = 16) -> plt.Figure:
    """The measured quantity against step t, one panel per parameter setting, one line per seed,
    with each run's bound dashed: its curve over t for anytime bounds, else a horizontal line."""
    rows = table[(table["bound"] == bound)]
    quantity = rows["quantity"].iloc[0]
    facets = [c for c in _varying(rows) if c != "seed"][:2]
    groups = list(rows.groupby(facets, sort=True)) if facets else [((), rows)]
    groups = groups[:max_panels]
    ncols = int(np.ceil(np.sqrt(len(groups))))
    nrows = int(np.ceil(len(groups) / ncols))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(max(3.2 * ncols + 0.6, 6.4), 2.6 * nrows + 1.6), squeeze=False,
                                 sharex=True, sharey=True)
        cmap = plt.get_cmap("tab10")
        for ax, (key, sel) in zip(axes.flat, groups):
            key = key if isinstance(key, tuple) else (key,)
            for i, r in enumerate(sel.itertuples()):
                prefix = f"{r.part}/" if isinstance(getattr(r, "part", None), str) and r.part else ""
                c = curves[(curves["run"] == r.run) & (curves["quantity"] == f"{prefix}{quantity}")]
                if np.all(np.mod(c["empirical"], 1) == 0):  # counts change at steps
                    ax.step(c["t"], c["empirical"], where="post", color=cmap(i % 10), lw=1.2, label=f"seed {r.seed}")
                else:
                    ax.plot(c["t"], c["empirical"], color=cmap(i % 10), lw=1.2, label=f"seed {r.seed}")
                b = curves[(curves["run"] == r.run) & (curves["quantity"] == f"{prefix}bound/{bound}")]
                if len(b):  # each run's own bound, in its colour
                    ax.plot(b["t"], b["empirical"], color=cmap(i % 10), ls="--", lw=1.0, alpha=0.8)
                elif r.applicable:
                    ax.axhline(r.theoretical, color=cmap(i % 10), ls="--", lw=1.0, alpha=0.8)
            ax.set_title(", ".join(_fmt(f, v) for f, v in zip(facets, key)) or "all runs", fontsize=9)
            shown = curves[curves["run"].isin(sel["run"]) & curves["quantity"].isin([quantity, f"bound/{bound}"])]
            ax.set(xscale="log", yscale="log" if (shown["empirical"] > 0).all() else "symlog")
        for ax in axes.flat[len(groups):]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel("step t")
        for ax in axes[:, 0]:
            ax.set_ylabel(f"{quantity} up to t")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        handles.append(plt.Line2D([], [], color=BOUND_COLOR, ls="--"))
        labels.append(f"{rows['title'].iloc[0]} bound of the run")
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8)
        fig.suptitle(f"{rows['learner'].iloc[0].capitalize()}: {quantity} against step t, with the "
                     f"{rows['title'].iloc[0]} bound (dashed)\n{rows['formula'].iloc[0]}", fontsize=10)
        fig.tight_layout(rect=(0, 0.04 + 0.03 * ((len(labels) + 3) // 4), 1, 1))
    return fig


def rate_vs_bound(table: pd.DataFrame, bound: str, x: str) -> plt.Figure:
    """The measured quantity against ``x`` (T or m) on log-log axes: the mean over seeds with its 95 %
    t band, and the bound (mean over seeds) as a dashed line, one colour per other swept setting."""
    from scipy import stats

    rows = table[(table["bound"] == bound) & table["applicable"].astype(bool)]
    first = rows.iloc[0]
    hue = next((c for c in _varying(rows) if c not in (x, "seed")), None)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.0, 4.4))
        groups = list(rows.groupby(hue, sort=True)) if hue else [(None, rows)]
        cmap = plt.get_cmap("viridis", max(len(groups), 2))
        for i, (h, sel) in enumerate(groups):
            agg = sel.groupby(x).agg(mean=("empirical", "mean"), sd=("empirical", "std"), n=("empirical", "size"),
                                     bound=("theoretical", "mean")).reset_index()
            half = agg["sd"].fillna(0) * stats.t.ppf(0.975, np.maximum(agg["n"] - 1, 1)) / np.sqrt(agg["n"])
            label = _fmt(hue, h) if hue else "measured"
            ax.plot(agg[x], agg["mean"], marker="o", ms=4, color=cmap(i), label=f"{label}: mean over seeds")
            ax.fill_between(agg[x], agg["mean"] - half, agg["mean"] + half, color=cmap(i), alpha=0.2, lw=0)
            ax.plot(agg[x], agg["bound"], ls="--", color=cmap(i), lw=1.2, label=f"{label}: bound")
        positive = bool((rows["empirical"] > 0).all())
        ax.set(xscale="log", xlabel=x, ylabel=f"{first['quantity']} (mean over seeds, 95 % band)")
        if positive:
            ax.set_yscale("log")
        else:  # the excess can be negative (||w_bar|| may exceed B): symmetric log axis
            ax.set_yscale("symlog", linthresh=float(rows["theoretical"].min()) / 10)
        seeds = int(rows.groupby(["setting"]).size().max())
        ax.set_title(f"{first['learner']}: {first['quantity']} against {x}, with the {first['title']} bound "
                     f"({first['guarantee']})\n{first['formula']}  ({seeds} seeds per point)", fontsize=9)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
    return fig


def save(fig: plt.Figure, directory: Path, stem: str) -> list[Path]:
    """Write ``fig`` as PNG and SVG; return the paths."""
    paths = [directory / f"{stem}.png", directory / f"{stem}.svg"]
    with plt.rc_context(STYLE):  # svg.hashsalt is read when saving: stable ids, byte-identical files
        for p in paths:
            fig.savefig(p, metadata={"Date": None} if p.suffix == ".svg" else {"Software": None})
    plt.close(fig)
    return paths


def sweep_figures(table: pd.DataFrame, curves: pd.DataFrame, directory: Path) -> list[Path]:
    """Every figure of a sweep, for each bound that applied in at least one run."""
    paths: list[Path] = []
    for bound in table.loc[table["applicable"].astype(bool), "bound"].unique():
        paths += save(measured_vs_bound(table, bound), directory, f"{bound}_measured_vs_bound")
        paths += save(curves_vs_bound(table, curves, bound), directory, f"{bound}_curves")
        rows = table[table["bound"] == bound]
        for x in ("T", "m"):
            if x in rows and rows[x].nunique() > 1 and rows["guarantee"].iloc[0] == "E":
                paths += save(rate_vs_bound(table, bound, x), directory, f"{bound}_rate_vs_{x}")
                break
    return paths
