"""The report over every experiment: per claim its verdict, the figures, and the provenance.

It reads (through :mod:`pipeline.outputs.reading`, which :mod:`pipeline.api` shares) what the sweeps wrote
(``results/NAME/metrics.json``, the summary of :func:`pipeline.sweep.callbacks.summary`, and
``results/NAME/results.parquet``) and the claims each experiment states (``experiments/NAME.yaml``); it never
recomputes a bound or a verdict: each claim takes its sweep's verdict through
:func:`pipeline.judging.verdicts.judge_claim` (docs/bounds.md section 9), with its informative runs and the
limit that decided it.

``python -m pipeline.outputs.report`` writes ``report/index.html`` (the answer first: every claim, then each
experiment's claims beside the one figure that answers each), a page per experiment with all its figures
(``report/experiments/NAME.html``), the figures themselves (``report/figures/``: the report links to nothing
outside ``report/``) and ``report/summary.md``, logs them to MLflow (experiment ``report``), and exits 1 if a claim of any
guarantee type is violated, a claim's bound never ran, or a sweep lost jobs (an inconclusive claim is
shown, and does not fail it): the report is written first, so the failure is in it. The experiments'
own DVC stages are ``pipeline.dvc_stage``.

Every file of the report is staged whole in a temporary directory inside ``report/`` and moved into place
with ``os.replace`` only once all are written (:func:`build`): a full disk or a crash leaves the previous
report as it was, never a truncated page. Results that cannot be read (a sweep interrupted before its
summary, a damaged file) stop it with one line and exit 2 before anything is written; a tracking store
that cannot be reached leaves the report written, unlogged, with one line and exit 3 (docs/report.md).
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from pipeline.judging.guarantees import guarantee as kind_of
from pipeline.judging.verdicts import HOLDS, INCONCLUSIVE, NOT_APPLICABLE, VIOLATED, ClaimVerdict, judge_claim
# what the report reads (pipeline.outputs.reading), its names kept here for the report's readers
from pipeline.outputs.reading import (PROVENANCE, RESUME, Experiment, SweepNotFinished, _comparison, _gaps, _reason,
                                      circumstances, ordered, problems, provenance, read_results)


def load(name: str, results: Path, experiments: Path, figures: Path) -> Experiment:
    """Read experiment ``name``: its claims, its sweep's summary and table, and its figures (the sweep's,
    plus the comparison its ``compare`` entry asks for, drawn into ``figures``)."""
    import pandas as pd
    from omegaconf import OmegaConf

    from pipeline.outputs import plots

    spec = OmegaConf.to_container(OmegaConf.load(experiments / f"{name}.yaml"), resolve=False)
    sweep = results / name
    if (sweep / "metrics.json").exists() or (sweep / "results.parquet").exists():
        table, _, metrics = read_results(sweep, f"{RESUME} (dvc repro {name})", curves=False)
    else:  # no results at all: shown as such, and the stage fails (problems)
        table, metrics = pd.DataFrame(), {}
    verdicts = [judge_claim(name, c, metrics) for c in spec.get("claims") or []]
    plan = _plan(table, sweep)
    pngs = sorted(sweep.glob("*.png"))
    captions = {p.stem: caption(plan[p.stem], table) for p in pngs if p.stem in plan}
    bound_of = {p.stem: plan[p.stem].kwargs.get("bound") if p.stem in plan else None for p in pngs}
    comparison: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    compare, compared = spec.get("compare"), None
    if compare and len(table):
        comparison = _comparison(table, compare)
        compared = f"{name}_{compare['quantity']}_by_{compare['by']}"
        fig = plots.compare(table, compare["quantity"], compare["by"], compare.get("x"))
        with _writing():
            figures.mkdir(parents=True, exist_ok=True)
            pngs.append(next(p for p in plots.save(fig, figures, compared) if p.suffix == ".png"))
        drawn = plots.Spec(compared, "compare", {"quantity": compare["quantity"], "by": compare["by"], "x": compare.get("x")})
        captions[compared], bound_of[compared] = caption(drawn, table), None
    if len(table):
        gaps = _gaps(table, compare or {})
    from pipeline.paths import WORK_DIR
    from pipeline.tracking import PARENT_FILE

    parent = WORK_DIR / name / PARENT_FILE  # where the stage's sweep ran (results/NAME holds only its results)
    return Experiment(
        name=name,
        question=" ".join(str(spec.get("question") or "").split()),
        verdicts=verdicts,
        figures=pngs,
        runs=int(metrics.get("runs", 0)),
        failed_jobs=int(metrics.get("failed_jobs", 0)) if metrics else -1,
        data_hashes=sorted(table["data_hash"].unique()) if "data_hash" in table else [],
        parent_run=parent.read_text().split()[0] if parent.exists() else None,
        comparison=comparison,
        captions=captions,
        bound_of=bound_of,
        compared=compared,
        gaps=gaps,
    )


CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; max-width: 1240px; margin: 2em auto;
       padding: 0 1.2em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2.2em; }
h3 { font-size: 1.05em; margin: 1.4em 0 .4em; }
table { border-collapse: collapse; margin: .6em 0 1em; font-size: .92em; width: 100%; }
th, td { border: 1px solid #ddd; padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.holds { background: #e3f4e3; color: #185c18; font-weight: 600; }
.violated, .fails { background: #fbe0e0; color: #8b1010; font-weight: 700; }
.not-applicable { background: #fff1d0; color: #7a5200; font-weight: 700; }
.inconclusive { background: #eef0f7; color: #33406b; font-weight: 600; }
.badge { padding: .1em .5em; border-radius: 3px; }
.claim { display: grid; grid-template-columns: minmax(0, 1fr); gap: .4em 1.4em; margin: 1.2em 0 2em; }
@media (min-width: 1000px) { .claim { grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); } .claim figure { order: -1; } }
.claim dl { margin: 0; font-size: .93em; } .claim dt { font-weight: 600; margin-top: .5em; } .claim dd { margin: 0; }
.figs { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1.2em; }
figure { margin: 0; } figure img { width: 100%; height: auto; border: 1px solid #e4e4e4; cursor: zoom-in; }
figcaption { font-size: .86em; color: #444; margin-top: .3em; }
.lightbox { display: none; } .lightbox:target { display: flex; position: fixed; inset: 0; z-index: 10;
  background: rgba(20, 20, 20, .88); align-items: center; justify-content: center; cursor: zoom-out; }
.lightbox img { max-width: 96vw; max-height: 94vh; background: #fff; }
.question { font-style: italic; } code { font-size: .9em; } .more { font-weight: 600; }
.banner { padding: .8em 1em; border-radius: 4px; margin: 1em 0; } nav { font-size: .92em; }
.sortable th button { all: unset; cursor: pointer; font-weight: 600; } .sortable th button:focus { outline: 2px solid #88a; }
.sortable th[aria-sort=ascending] button::after { content: " \\25B2"; }
.sortable th[aria-sort=descending] button::after { content: " \\25BC"; }
svg.ratio { vertical-align: middle; } .figs figure.wide { grid-column: 1 / -1; }
"""


def _status_cell(v: ClaimVerdict, rank: int | None = None) -> str:
    label = v.status.upper() if v.status in (VIOLATED, NOT_APPLICABLE) else v.status
    key = "" if rank is None else f" data-v='{rank}'"  # sorted failing first, then inconclusive, then holding
    return f'<td class="{v.status.replace(" ", "-")}"{key}>{html.escape(label)}</td>'


CLAIM_COLUMNS = ("experiment", "bound", "type", "verdict", "evidence units", "largest measured / bound")
RATIO_LEGEND = ("The bar shows measured / bound on a scale from 0 to 2, its line at 1: a bar past the line is a "
                "measurement above its bound.")
RATIO_TOP = 2.0  # the bar's full width: measured / bound = 2


def _sort_value(ratio: float | None) -> str:
    """A ratio as the claims table sorts it: a number ('inf' above every other; none last)."""
    return "1e309" if ratio is None or ratio != ratio else f"{ratio:.6g}"


def _ratio_bar(ratio: float | None, width: int = 80, height: int = 10) -> str:
    """measured / bound as a small inline figure: a bar from 0 to ``RATIO_TOP`` with its line at 1 (the bound),
    green up to the line and red past it; nothing for a claim without a ratio."""
    if ratio is None or not ratio == ratio:
        return ""
    filled = width * min(max(ratio, 0.0), RATIO_TOP) / RATIO_TOP
    colour = "#2e7d32" if ratio <= 1 else "#b71c1c"
    at_one = width / RATIO_TOP
    return (f"<svg class='ratio' width='{width}' height='{height}' role='img' aria-label='measured / bound "
            f"{ratio:.3g}'><rect width='{width}' height='{height}' fill='#f1f1f1'/><rect width='{filled:.1f}' "
            f"height='{height}' fill='{colour}'/><line x1='{at_one:g}' x2='{at_one:g}' y1='0' y2='{height}' "
            "stroke='#000' stroke-width='1.5'/></svg>")


# Sorting and filtering the claims table in the page itself: no library, nothing fetched (the report stays
# self-contained); a column sorts by its cells' data-v when they have one (numbers), else by their text.
SORTING = """<script>
(function () {
  var table = document.getElementById('claims'), body = table.tBodies[0];
  var filter = document.getElementById('claims-filter');
  filter.addEventListener('input', function () {
    var words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = row.textContent.toLowerCase();
      row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.querySelector('button').addEventListener('click', function () {
      var up = th.getAttribute('aria-sort') !== 'ascending';
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
      var key = function (row) {
        var cell = row.cells[col], v = cell.getAttribute('data-v');
        return v === null ? cell.textContent.trim().toLowerCase() : parseFloat(v);
      };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), c = x < y ? -1 : x > y ? 1 : 0;
        return up ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
})();
</script>"""


def _badge(v: ClaimVerdict) -> str:
    label = v.status.upper() if v.status in (VIOLATED, NOT_APPLICABLE) else v.status
    return f'<span class="badge {v.status.replace(" ", "-")}">{html.escape(label)}</span>'


def _counts(v: ClaimVerdict) -> str:
    """The evidence behind a verdict, in units: informative settings of distinct seeds ((E), (P)) or informative
    runs ((D))."""
    return v.share or f"{v.informative} of {v.runs} runs informative"


LEGEND = ("Verdicts (docs/bounds.md, section 9): <b>holds</b>, <b>violated</b>, <b>inconclusive</b> (the evidence "
          "cannot decide: it says what blocks it and how many seeds would settle it), <b>not applicable</b> (the bound "
          "applied in no run). (D) must hold in every run and at every judged step; (E) per setting of distinct seeds, a "
          "distribution-free test of the mean (by betting: 'holds' needs the top of the quantity's range, 'violated' its "
          "bottom, Holm-corrected across settings); (P) per setting of distinct seeds, the one-sided 95 % Clopper-Pearson "
          "limits of the violation rate against delta. Runs of one seed in different settings share their data and are "
          "one unit of evidence, so settings are never pooled. A run is <i>informative</i> when its bound is below the "
          "trivial value (what a learner that never learns measures); only informative runs count as evidence that a "
          "bound holds. <i>Could have caught</i>: the tightness factor k (bound / k still holds) and the mildest "
          "planted error the verdict detects with probability >= 0.8.")


RECORD = ("The git commit, machine, time and MLflow parent runs of this report are in provenance.json beside "
          "it and in its MLflow run (experiment 'report'); these pages hold only what the computation determines.")

PAGES = "experiments"  # report/experiments/NAME.html: every figure of one experiment


def _in_place(path: Path) -> Path:
    return path


# --- Figures: which answers a claim, and what each shows ----------------------------------------------


def caption(spec: Any, table: Any) -> str:
    """What a figure of :func:`pipeline.outputs.plots.figure_plan` shows, in a sentence, from its kind and arguments
    (``spec``, a :class:`pipeline.outputs.plots.Spec`) and the results table (the bound's type and quantity)."""
    kw = spec.kwargs
    bound = kw.get("bound")
    if bound is not None and len(table) and "bound" in table:
        rows = table[table["bound"] == bound]
        guarantee, quantity = (rows["guarantee"].iloc[0], rows["quantity"].iloc[0]) if len(rows) else ("?", "quantity")
        head = f"{bound} ({guarantee}): "
    else:
        guarantee, quantity, head = "?", kw.get("quantity", "quantity"), ""
    if spec.kind == "measured_vs_bound":
        return (head + f"the measured {quantity} against the bound's value, one point per run (log-log); a point above "
                "the diagonal y = x would be a violation.")
    if spec.kind == "curves_vs_bound":
        return (head + f"{quantity} against step t, one panel per setting, each run's bound dashed; (D) must hold at "
                "every step.")
    if spec.kind == "rate_vs_bound":
        return (head + f"the mean {quantity} over seeds against {kw['x']} with its 95 % band, and the bound (mean over "
                "seeds) dashed, one colour per other setting.")
    if spec.kind == "ratio_heatmap":
        cell = ("the worst run per cell, at most 1 where the bound holds" if kind_of(guarantee).per_run
                else "the mean over seeds per cell")
        return head + f"measured / bound over {kw['y']} x {kw['x']}: {cell}."
    if spec.kind == "compare":
        against = f" against {kw['x']}" if kw.get("x") else ""
        return (f"{kw['quantity']} by {kw['by']}{against}: the mean over seeds with its 95 % interval, every run "
                "shown; a bound on it, where one applies, dashed in the same colour.")
    return spec.stem


def _plan(table: Any, sweep: Path) -> dict[str, Any]:
    """The sweep's figures by stem (:func:`pipeline.outputs.plots.figure_plan`), reading only the curves' names."""
    import pandas as pd

    from pipeline.outputs import plots

    if not len(table):
        return {}
    path = sweep / "curves.parquet"
    try:
        curves = pd.read_parquet(path, columns=["quantity"]) if path.exists() else pd.DataFrame()
    except (OSError, ValueError, KeyError) as e:
        raise SweepNotFinished(f"{path}: not a whole Parquet table, perhaps cut short ({_reason(e)}); {RESUME}") from None
    return {spec.stem: spec for spec in plots.figure_plan(table, curves)}


def headline(e: Experiment, v: ClaimVerdict) -> Path | None:
    """The figure that answers claim ``v``: for an (E) claim its rate against T or m (the mean over seeds beside
    the bound), else (and for (D) and (P)) measured against bound, one point per run; failing both, the first
    figure of its bound. None if its bound has no figure (it applied in no run)."""
    by_stem = {p.stem: p for p in e.figures}
    wanted = ([f"{v.bound}_rate_vs_{x}" for x in ("T", "m", "n")] if kind_of(v.guarantee).on_the_mean else []) + [
        f"{v.bound}_measured_vs_bound"]
    for stem in wanted:
        if stem in by_stem:
            return by_stem[stem]
    return next((p for p in e.figures if e.bound_of.get(p.stem) == v.bound), None)


WIDE_PX = 1800  # a PNG wider than this (12 in at 150 dpi: several panels, or a long legend) spans the page


def _png_width(path: Path) -> int:
    """A PNG's width in pixels, from its header (0 if it is not a readable PNG)."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError:
        return 0
    return int.from_bytes(head[16:20], "big") if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) == 24 else 0


def _figure(path: Path, text: str, href: Callable[[Path], str], eager: bool = False) -> str:
    """A figure that enlarges on click (a CSS overlay showing its PNG at full size, loaded only then) with its
    caption and a link to the PNG alone."""
    e_ = html.escape
    png = path
    big = href(png)
    ident = "big-" + "".join(c if c.isalnum() else "-" for c in href(png))
    lazy = "" if eager else " loading='lazy'"
    wide = " class='wide'" if _png_width(png) > WIDE_PX else ""  # a figure of many panels: the page's whole width
    return (f"<figure{wide}><a href='#{e_(ident)}' title='enlarge'><img alt='{e_(path.stem)}' src='{e_(href(png))}'{lazy}></a>"
            f"<figcaption>{e_(text)} <a href='{e_(big)}'>PNG</a></figcaption>"
            f"<a class='lightbox' id='{e_(ident)}' href='#_' title='close'><img alt='{e_(path.stem)}, enlarged' "
            f"src='{e_(big)}' loading='lazy'></a></figure>")


def _href(page_dir: Path, published: Callable[[Path], Path]) -> Callable[[Path], str]:
    """A file's link from a page in ``page_dir``, once the report is in place (relative: the report is a
    directory that can be moved or served whole)."""
    def href(path: Path) -> str:
        return Path(os.path.relpath(published(path).resolve(), page_dir.resolve())).as_posix()

    return href


def _claims_table(e: Experiment) -> list[str]:
    e_ = html.escape
    rows = ["<table><tr><th>bound</th><th>type</th><th>claim</th><th>verdict</th><th>evidence units</th>"
            "<th>evidence</th></tr>"]
    rows += [f"<tr><td><code>{e_(v.bound)}</code></td><td>{e_(v.guarantee)}</td><td>{e_(v.claim)}</td>"
             f"{_status_cell(v)}<td>{_counts(v)}</td><td>{e_(v.text)}</td></tr>" for v in e.verdicts]
    return rows + ["</table>"]


def _comparison_table(e: Experiment) -> list[str]:
    e_ = html.escape
    if not e.comparison:
        return []
    first = e.comparison[0]
    keys = [k for k in first if k not in ("quantity", "mean", "ci", "max", "runs", "bound", "bound_mean")]
    bounded = any("bound" in row for row in e.comparison)
    bound_name = next((row["bound"] for row in e.comparison if "bound" in row), "")
    rows = [f"<table><tr>{''.join(f'<th>{e_(k)}</th>' for k in keys)}<th>mean {e_(first['quantity'])}"
            "</th><th>95 % interval</th><th>largest</th>"
            + (f"<th>{e_(bound_name)} bound (mean)</th>" if bounded else "") + "<th>runs</th></tr>"]
    rows += ["<tr>" + "".join(f"<td>{e_(str(row[k]))}</td>" for k in keys)
             + f"<td>{row['mean']:.4g}</td><td>+/- {row['ci']:.2g}</td><td>{row['max']:.4g}</td>"
             + (f"<td>{row['bound_mean']:.4g}</td>" if "bound_mean" in row else ("<td>-</td>" if bounded else ""))
             + f"<td>{row['runs']}</td></tr>" for row in e.comparison]
    return rows + ["</table>"]


GAPS_TEXT = ("The worst case beside the bound ({quantity}, means over {seeds} runs; each gap taken run by run, the "
             "orderings of a seed sharing its sample). The theorem's slack is what no sequence of the theorem's class can "
             "reach; the search's shortfall is what the adversary's search leaves of the certified worst case (on a "
             "sample, the sample's own worst case lies between them).")


def _gaps_cells(e: Experiment) -> tuple[list[str], list[list[str]]]:
    """The worst-case table (:func:`_gaps`) as a header and rows of text cells, for the page and the summary."""
    first = e.gaps[0]
    keys = [k for k in first if k in ("dataset", "cls", "size", "gamma", "rho", "lam", "n", "d")]
    searched = first.get("searched_by", "adaptive")
    cols = [("bound_value", f"{first['bound']} bound"), ("exact", "exact worst case (certified)"),
            ("littlestone", "Littlestone dimension"), ("measured_best", "largest measured"),
            ("adaptive", "adaptive (mean)"), ("adaptive_best", "adaptive (best seed)"), ("random", "random"),
            ("given", "given"), ("slack", "theorem's slack: bound - exact"),
            ("shortfall", f"search's shortfall: exact - {searched} (mean, least)"), ("certificate_gap", "certificate gap")]
    cols = [(k, label) for k, label in cols if any(k in row for row in e.gaps)]

    def cell(row: dict[str, Any], k: str) -> str:
        if k not in row:
            return "-"
        if k == "shortfall":
            return f"{row[k]:.3g} ({row['shortfall_least']:.3g})"
        return f"{row[k]:.2g}" if k == "certificate_gap" else f"{row[k]:.3g}"

    header = keys + [label for _, label in cols]
    return header, [[str(row[k]) for k in keys] + [cell(row, k) for k, _ in cols] for row in e.gaps]


def _gaps_table(e: Experiment) -> list[str]:
    """The experiment's worst-case table (:func:`_gaps`): bound, exact, the searches and the orders side by side,
    the two gaps named."""
    if not e.gaps:
        return []
    e_ = html.escape
    header, rows = _gaps_cells(e)
    return ([f"<p>{e_(GAPS_TEXT.format(**e.gaps[0]))}</p>",
             "<table><tr>" + "".join(f"<th>{e_(h)}</th>" for h in header) + "</tr>"]
            + ["<tr>" + "".join(f"<td>{e_(c)}</td>" for c in row) + "</tr>" for row in rows] + ["</table>"])


def _runs_line(e: Experiment) -> str:
    return (f"<p>{e.runs} runs" + (f", <span class='fails'>{e.failed_jobs} failed jobs</span>" if e.failed_jobs > 0 else "")
            + (", <span class='fails'>no results</span>" if e.failed_jobs < 0 else "") + "</p>")


def _experiment_section(e: Experiment, href: Callable[[Path], str]) -> list[str]:
    """An experiment in the report's first view: its question, then each claim beside the one figure that
    answers it, then its comparison; every other figure is on its own page, linked."""
    e_ = html.escape
    parts = [f"<h2 id='{e_(e.name)}'>{e_(e.name)}</h2><p class='question'>{e_(e.question)}</p>", _runs_line(e)]
    for v in e.verdicts:
        fig = headline(e, v)
        shown = (_figure(fig, e.captions.get(fig.stem, fig.stem), href) if fig is not None
                 else "<figure><figcaption>No figure: the bound applied in no run.</figcaption></figure>")
        parts.append(f"<div class='claim'>{shown}<div><h3>{_badge(v)} <code>{e_(v.bound)}</code> ({e_(v.guarantee)})</h3>"
                     f"<p>{e_(v.claim)}</p><dl><dt>evidence units</dt><dd>{_counts(v)}</dd><dt>evidence</dt>"
                     f"<dd>{e_(v.text)}</dd><dt>could have caught</dt><dd>{e_(v.power or '-')}</dd>"
                     f"<dt>decided by</dt><dd>{e_(v.decided_by or '-')}</dd>"
                     + (f"<dt>design</dt><dd>{e_(v.design)}</dd>" if v.design else "") + "</dl></div></div>")
    if e.gaps:
        parts += ["<h3>The worst case beside the bound</h3>", *_gaps_table(e)]
    if e.comparison:
        parts += ["<h3>Comparison</h3>", *_comparison_table(e)]
        compared = [p for p in e.figures if p.stem == e.compared]
        if compared:
            parts.append(_figure(compared[0], e.captions.get(e.compared, e.compared), href))  # the page's width
    if e.figures:
        parts.append(f"<p class='more'><a href='{PAGES}/{e_(e.name)}.html'>All {len(e.figures)} figures of "
                     f"{e_(e.name)}</a>, with the bounds it measures but does not claim.</p>")
    return parts


def _head(title: str) -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title><style>{CSS}</style>"
            "</head><body>")


def render_html(experiments: list[Experiment], prov: dict[str, Any], out_dir: Path,
                published: Callable[[Path], Path] = _in_place) -> str:
    """The report's first page (``out_dir/index.html``): the answer first (every claim and its verdict), then
    each experiment with one figure per claim, then the provenance. Figures are files of ``out_dir/figures``,
    linked relatively (the report is self-contained: no link leaves ``out_dir``); ``published``: where a figure
    read now will be once the report is in place (a staged figure's final path)."""
    e_ = html.escape
    href = _href(out_dir, published)
    issues = problems(experiments)
    verdicts = [v for e in experiments for v in e.verdicts]
    held = sum(v.status == HOLDS for v in verdicts)
    undecided = sum(v.status == INCONCLUSIVE for v in verdicts)
    parts = [_head("boundlab report"), "<h1>boundlab: online learners against the theorems that bound them</h1>",
             f"<p>{len(experiments)} experiments, {len(verdicts)} claims: {held} hold, {undecided} inconclusive.</p>"]
    if issues:
        parts.append("<div class='banner fails'>Failing: " + "<br>".join(e_(i) for i in issues) + "</div>")
    else:
        parts.append("<div class='banner holds'>No claim is violated and every claim's bound ran"
                     + (f"; {undecided} inconclusive" if undecided else "") + ".</div>")
    pinned = str(prov.get("pinned versions", ""))
    if pinned.startswith("DIFFERENT"):  # a run outside the pinned versions: its numbers may not be the committed ones
        parts.append(f"<div class='banner not-applicable'>Package versions {e_(pinned)}</div>")
    parts.append("<h2>Claims</h2><p><input id='claims-filter' type='search' placeholder='filter: an experiment, a "
                 "bound, a verdict, a type' aria-label='filter the claims' size='48'> <small>(click a column's "
                 "name to sort by it)</small></p>"
                 "<table id='claims' class='sortable'><thead><tr>"
                 + "".join(f"<th><button type='button'>{h}</button></th>" for h in CLAIM_COLUMNS) + "</tr></thead><tbody>")
    order = {s: i for i, s in enumerate((VIOLATED, INCONCLUSIVE, NOT_APPLICABLE, HOLDS))}
    for e in experiments:
        for v in e.verdicts:
            ratio = "-" if v.ratio is None else f"{'mean ' if kind_of(v.guarantee).on_the_mean else ''}{v.ratio:.3g}"
            informative = v.informative / v.runs if v.runs else 0.0
            parts.append(f"<tr><td><a href='#{e_(e.name)}'>{e_(e.name)}</a></td><td><code>{e_(v.bound)}</code></td>"
                         f"<td>{e_(v.guarantee)}</td>{_status_cell(v, order.get(v.status, 9))}"
                         f"<td data-v='{informative:.6g}'>{_counts(v)}</td>"
                         f"<td data-v='{_sort_value(v.ratio)}'>{_ratio_bar(v.ratio)} {e_(ratio)}</td></tr>")
    parts.append(f"</tbody></table><p><small>{LEGEND} {RATIO_LEGEND}</small></p>{SORTING}")
    for e in experiments:
        parts += _experiment_section(e, href)
    parts.append("<h2>Provenance</h2><table>")
    for k, v in prov.items():
        if k != "packages":
            parts.append(f"<tr><th>{e_(k)}</th><td><code>{e_(str(v))}</code></td></tr>")
    parts.append("<tr><th>packages</th><td>" + ", ".join(f"{e_(p)} {e_(v)}" for p, v in prov["packages"].items())
                 + "</td></tr></table>")
    parts.append(f"<p>{e_(RECORD)}</p>")
    parts.append("<p><small>Numbers are read from results/NAME/metrics.json and results.parquet; no bound is "
                 "recomputed here.</small></p></body></html>")
    return "\n".join(parts)


def render_page(e: Experiment, out_dir: Path, published: Callable[[Path], Path] = _in_place) -> str:
    """``out_dir/experiments/NAME.html``: every figure of one experiment with its caption, those of its claimed
    bounds first (by claim), then its comparison, then the bounds it measures but does not claim."""
    e_ = html.escape
    href = _href(out_dir / PAGES, published)
    parts = [_head(f"{e.name}: boundlab report"),
             f"<nav><a href='../index.html#{e_(e.name)}'>&larr; the report</a></nav><h1>{e_(e.name)}</h1>",
             f"<p class='question'>{e_(e.question)}</p>", _runs_line(e), *_claims_table(e)]
    claimed = [v.bound for v in e.verdicts]
    groups: list[tuple[str, list[Path]]] = [
        (f"{b} (claimed)", [p for p in e.figures if e.bound_of.get(p.stem) == b]) for b in claimed]
    groups.append(("Comparisons", [p for p in e.figures if e.bound_of.get(p.stem) is None]))
    others = sorted({b for b in e.bound_of.values() if b is not None and b not in claimed})
    groups += [(f"{b} (measured, not claimed)", [p for p in e.figures if e.bound_of.get(p.stem) == b]) for b in others]
    for title, figs in groups:
        if figs:
            parts.append(f"<h2>{e_(title)}</h2><div class='figs'>")
            parts += [_figure(p, e.captions.get(p.stem, p.stem), href) for p in figs]
            parts.append("</div>")
    parts += _gaps_table(e) + _comparison_table(e)
    if e.data_hashes:
        shown = ", ".join(e.data_hashes[:6]) + (f", ... ({len(e.data_hashes)} in all)" if len(e.data_hashes) > 6 else "")
        parts.append(f"<p><small>data content hashes (the same hash, the same vectors bit for bit): "
                     f"<code>{e_(shown)}</code></small></p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _md(text: object) -> str:
    """Free text (an experiment's question and claims, evidence quoting settings) as inert Markdown: no HTML, no
    link or autolink, no table cell break (``<``, ``>``, ``&``, ``[``, ``]``, ``|`` and backticks escaped)."""
    out = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in ("\\", "[", "]", "|", "`"):
        out = out.replace(ch, "\\" + ch)
    return " ".join(out.split())


def render_markdown(experiments: list[Experiment], prov: dict[str, Any], out_dir: Path,
                    published: Callable[[Path], Path] = _in_place) -> str:
    """The summary: every claim with its verdict, the figures as links (to where ``published`` says each
    will be), the provenance."""
    lines = ["# boundlab report", ""]
    issues = problems(experiments)
    lines += (["**FAILING:**", ""] + [f"- {i}" for i in issues] + [""]) if issues else [
        "No claim is violated and every claim's bound ran.", ""]
    pinned = str(prov.get("pinned versions", ""))
    lines += [f"**Package versions {pinned}**", ""] if pinned.startswith("DIFFERENT") else []
    lines += ["| experiment | bound | type | verdict | evidence units | evidence | could have caught | decided by |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in experiments:
        for v in e.verdicts:
            lines.append(f"| {_md(e.name)} | `{_md(v.bound)}` | {v.guarantee} | **{v.status}** | {_counts(v)} | {_md(v.text)} "
                         f"| {_md(v.power)} | {_md(v.decided_by)}" + (f" ({_md(v.design)})" if v.design else "") + " |")
    for e in experiments:
        lines += ["", f"## {_md(e.name)}", "", _md(e.question), "", f"{e.runs} runs; failed jobs: {max(e.failed_jobs, 0)}.", ""]
        lines += [f"- **{v.status}** ({v.guarantee}) `{_md(v.bound)}`: {_md(v.claim)} {_md(v.text)}." for v in e.verdicts]
        if e.gaps:
            header, rows = _gaps_cells(e)
            lines += ["", _md(GAPS_TEXT.format(**e.gaps[0])), "", "| " + " | ".join(_md(h) for h in header) + " |",
                      "|" + " --- |" * len(header)] + ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
        lines += [""] + [f"- [{f.stem}]({Path(os.path.relpath(published(f), out_dir)).as_posix()}): "
                         f"{_md(e.captions.get(f.stem, f.stem))}" for f in e.figures]
    lines += ["", "## Provenance", ""]
    lines += [f"- {k}: `{v}`" for k, v in prov.items() if k != "packages"]
    lines += ["- packages: " + ", ".join(f"{p} {v}" for p, v in prov["packages"].items()), "", RECORD, ""]
    return "\n".join(lines)


# --- Writing: staged whole, then moved into place ------------------------------------------------------

class ReportNotWritten(OSError):
    """The report could not be written (a full disk, a read-only directory): the previous report is left as
    it was (or, if the move into place itself failed, said to be partly replaced)."""


@contextlib.contextmanager
def _writing(unchanged: bool = True) -> Iterator[None]:
    """Turn an OSError of writing into :class:`ReportNotWritten` with a one-line message: the system's reason
    without the staging path it names (a temporary file the reader never sees)."""
    try:
        yield
    except (ReportNotWritten, SweepNotFinished):  # already said, and not about writing
        raise
    except OSError as e:
        state = ("the previous report is unchanged" if unchanged
                 else "it was only partly moved into place")
        raise ReportNotWritten(f"the report could not be written ({e.strerror or e}); {state}: fix that "
                               "(free disk space, permissions) and run the report again") from e


def _write_staged(path: Path, text: str) -> None:
    """``text`` into the staged file ``path``, flushed and fsynced, so that the rename that publishes it
    publishes a whole file even across a power cut."""
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def _fsync(path: Path) -> None:
    """Put a file (written by another writer, e.g. a figure by matplotlib) or a directory's entries on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _staging(out_dir: Path) -> Iterator[Path]:
    """A temporary directory inside ``out_dir`` (the same file system, so ``os.replace`` moves its files into
    place), removed whatever happens: a failure leaves no temporary file behind."""
    from pipeline import files
    from pipeline.job import locks

    with _writing():
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            lock = locks.hold(out_dir)  # one report writes out_dir at a time
        except locks.Held as e:
            raise ReportNotWritten(f"{out_dir} is being written by another report (process {e.holder}); wait for it "
                                   "to end, or stop it, and run the report again") from None
    try:
        files.clean_stale(out_dir)  # the staging directories of reports that were killed
        with _writing():
            # named .staging-XXXX.PID.tmp: a report killed before its finally is cleaned by the next one
            stage = Path(tempfile.mkdtemp(prefix=".staging-", suffix=f".{os.getpid()}.tmp", dir=out_dir))
        try:
            yield stage
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    finally:
        locks.release(lock)


def _published(stage: Path, out_dir: Path) -> Callable[[Path], Path]:
    """Where a file of the staging directory will be once moved into ``out_dir`` (other files stay put)."""
    def where(path: Path) -> Path:
        return out_dir / path.relative_to(stage) if path.is_relative_to(stage) else path

    return where


def _move_into_place(stage: Path, out_dir: Path) -> None:
    """Replace each file of ``out_dir`` by its staged counterpart, once every one is written and on disk:
    figures first, the pages last (index.html last of all), so a page never links to a figure not yet there."""
    pages = (CLAIMS, COUNTS, "verdicts.json", PROVENANCE, "summary.md", "index.html")
    staged = sorted((p for p in stage.rglob("*") if p.is_file()),
                    key=lambda p: (pages.index(p.name) if p.parent == stage and p.name in pages else -1, str(p)))
    with _writing():
        for path in staged:
            _fsync(path)
    with _writing(unchanged=False):
        for path in staged:
            dest = out_dir / path.relative_to(stage)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, dest)
    for directory in {out_dir / p.parent.relative_to(stage) for p in staged}:
        with contextlib.suppress(OSError):  # the renames on disk; some file systems cannot sync a directory
            _fsync(directory)


CLAIMS = "claims.json"  # per claim its verdict line: kept in git, compared by dvc metrics diff --targets report/claims.json
COUNTS = "counts.json"  # the main job's DVC metrics file (dvc.yaml): the claims by verdict, a few columns of dvc exp show


def counts_metrics(loaded: list[Experiment]) -> dict[str, int]:
    """counts.json: how many claims hold, are inconclusive, fail (violated, or not applicable) of how many: the
    few numbers ``dvc exp show`` tabulates per commit and experiment (every claim's own line is in claims.json,
    which ``dvc metrics diff --targets report/claims.json`` compares). No key is named as a stage's dependency
    (``experiments``): DVC's ``--drop`` fails on a name that is both."""
    verdicts = [v for e in loaded for v in e.verdicts]
    return {"claims": len(verdicts), "hold": sum(v.status == HOLDS for v in verdicts),
            "inconclusive": sum(v.status == INCONCLUSIVE for v in verdicts), "failing": sum(v.fails for v in verdicts)}


def claims_metrics(loaded: list[Experiment]) -> dict[str, str]:
    """claims.json: per claim ('EXPERIMENT/BOUND'), its verdict, informative share and largest ratio in one
    short line ('holds 27/36 max 0.956': 27 of 36 informative) (:meth:`ClaimVerdict.compact`). One leaf per claim
    keeps ``dvc exp show`` narrow and makes
    ``dvc metrics diff`` answer "which verdicts or ratios changed" in one line each; the full numbers are in
    results/NAME/metrics.json and verdicts.json."""
    return {f"{v.experiment}/{v.bound}": v.compact() for e in loaded for v in e.verdicts}


def _summary(loaded: list[Experiment]) -> dict[str, Any]:
    """verdicts.json: the counts of claims by verdict and every claim's verdict and evidence."""
    verdicts = [v for e in loaded for v in e.verdicts]
    return {"experiments": len(loaded), "claims": len(verdicts), "holding": sum(v.status == HOLDS for v in verdicts),
            "violated": sum(v.status == VIOLATED for v in verdicts),
            "inconclusive": sum(v.status == INCONCLUSIVE for v in verdicts),
            "not_applicable": sum(v.status == NOT_APPLICABLE for v in verdicts),
            "deterministic_failures": sum(kind_of(v.guarantee).per_run and v.fails for v in verdicts),
            "verdicts": {f"{v.experiment}/{v.bound}": v.status for v in verdicts},
            "claims_detail": [v.as_dict() for v in verdicts]}


def _copied(figures: list[Path], into: Path, stage: Path) -> list[Path]:
    """A sweep's figures (their PNGs: :func:`_compact`) copied into the staged report (``into``), so the report
    links only to its own files; figures already staged (the comparison it drew) stay where they are."""
    out = []
    for png in figures:
        if png.is_relative_to(stage):
            out.append(png)
            continue
        into.mkdir(parents=True, exist_ok=True)
        if png.exists():
            shutil.copyfile(png, into / png.name)
        out.append(into / png.name)
    return out


PALETTE = 256  # colours of a report's PNG (a figure of a few lines and markers needs far fewer)


def _compact(figures: Path) -> None:
    """The figures as the report publishes them: each PNG as a palette image of :data:`PALETTE` colours (the
    same pixels to the eye, a third of the bytes; deterministic: the same figure gives the same file), and no
    SVG. The report shows and enlarges the PNGs (150 dpi: labels at their size); the vector figures, for a
    paper, are the sweep's, in ``results/NAME/`` and in its MLflow run. Together the report stays within
    about 10 MB (29 MB with every PNG and SVG as drawn). On two cores or more, half of the PNGs are converted
    in a forked helper (the same files)."""
    from pipeline.outputs.plots import helper

    for svg in sorted(figures.rglob("*.svg")):
        svg.unlink()
    pngs = sorted(figures.rglob("*.png"))
    pool = helper() if len(pngs) >= 8 else None
    if pool is None:
        _palette(pngs)
        return
    with pool:
        theirs = pool.submit(_palette, pngs[1::2])
        _palette(pngs[0::2])
        theirs.result()


def _palette(pngs: list[Path]) -> None:
    """Each of ``pngs`` rewritten in place as a palette image of :data:`PALETTE` colours (:func:`_compact`)."""
    from PIL import Image

    for png in pngs:
        with Image.open(png) as drawn:
            rgba = drawn.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        flat = Image.alpha_composite(white, rgba).convert("RGB")  # opaque already: a figure's white face
        # the fast octree: ~20 ms a figure (median cut: ~120 ms), and the smaller file on these figures
        flat.quantize(colors=PALETTE, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(png, format="PNG")


def _prune(out_dir: Path, stage: Path, loaded: list[Experiment]) -> None:
    """Remove from ``out_dir`` the pages and figures of a previous report that this one does not have (an
    experiment removed, a figure no longer drawn): the report holds only what it shows."""
    keep = {out_dir / "figures" / p.relative_to(stage / "figures") for e in loaded for p in e.figures
            if p.is_relative_to(stage / "figures")}
    keep |= {out_dir / PAGES / f"{e.name}.html" for e in loaded}
    for folder in (out_dir / "figures", out_dir / PAGES):
        for path in sorted(folder.rglob("*"), reverse=True):
            with contextlib.suppress(OSError):
                if path.is_dir():
                    path.rmdir()  # only when empty
                elif path not in keep:
                    path.unlink()


def build(names: list[str] | None = None, results: Path = Path("results"), experiments: Path = Path("experiments"),
          out_dir: Path = Path("report"), track: bool = True) -> tuple[list[Experiment], list[str], str | None]:
    """Write the report of ``names`` (every experiment with results, if None); return the experiments, the
    problems that make the stage fail, and why the report was not logged to MLflow (None if it was, or if
    ``track`` is false).

    Everything is drawn and written into a staging directory first and moved into place only when all of
    it is on disk: :class:`SweepNotFinished` (unreadable results) or :class:`ReportNotWritten` (a full disk)
    leave the previous report whole and no temporary file behind."""
    if names is None:
        names = ordered(p.parent.name for p in results.glob("*/metrics.json") if (experiments / f"{p.parent.name}.yaml").exists())
    with _staging(out_dir) as stage:
        loaded = [load(n, results, experiments, stage / "figures") for n in names]
        with _writing():
            for e in loaded:
                e.figures = _copied(e.figures, stage / "figures" / e.name, stage)
            _compact(stage / "figures")
        prov, record = provenance(), circumstances(loaded)
        published = _published(stage, out_dir)
        summary = _summary(loaded)
        pages = {"index.html": render_html(loaded, prov, out_dir, published),
                 **{f"{PAGES}/{e.name}.html": render_page(e, out_dir, published) for e in loaded},
                 "summary.md": render_markdown(loaded, prov, out_dir, published),
                 "verdicts.json": json.dumps(summary, indent=2) + "\n", PROVENANCE: json.dumps(record, indent=2) + "\n",
                 CLAIMS: json.dumps(claims_metrics(loaded), indent=1) + "\n",
                 COUNTS: json.dumps(counts_metrics(loaded), indent=1) + "\n"}
        with _writing():
            (stage / PAGES).mkdir()
            for name, text in pages.items():
                _write_staged(stage / name, text)
        _move_into_place(stage, out_dir)
        for out in ("figures", PAGES):  # DVC outs: there even when no experiment has results
            (out_dir / out).mkdir(parents=True, exist_ok=True)
        _prune(out_dir, stage, loaded)
    for e in loaded:  # the figures drawn into the staging directory are now in out_dir
        e.figures = [published(f) for f in e.figures]
    issues = problems(loaded)
    untracked = _track(loaded, out_dir, summary, failed=bool(issues), record=record) if track else None
    return loaded, issues, untracked


# --- Tracking --------------------------------------------------------------------------------------------


def _gist(error: BaseException, limit: int = 300) -> str:
    """An error as one line of at most ``limit`` characters of its text (MLflow's quote whole requests)."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:limit]}{'...' if len(text) > limit else ''}"


def _track(experiments: list[Experiment], out_dir: Path, summary: dict[str, Any], failed: bool,
           record: dict[str, Any]) -> str | None:
    """The report as one MLflow run (experiment ``report``): the pages, the figures it drew, and the
    counts of claims as metrics; FAILED when the report stage fails. Returns None once logged, else why
    not (one clause): the store is checked first (a server that does not answer, a locked SQLite file), and
    a store that fails mid-way ends the run FAILED if it can. The report is written either way."""
    from pipeline import tracking

    uri = tracking.tracking_uri()
    backend = tracking.backend(uri)
    why = backend.check_store(uri)
    if why:
        return tracking.redact(f"tracking store {uri}: {why}")
    run_id = None
    # MLflow's HTTP retries are bounded for this process (pipeline.tracking.down): a dead server fails in seconds
    try:
        run_id = backend.start_parent(uri, experiment="report", name=f"report {time.strftime('%Y-%m-%d %H:%M:%S')}",
                                      question="Every experiment's claims and verdicts", sweep_id="report",
                                      tags={"boundlab.experiments": " ".join(e.name for e in experiments),
                                            "boundlab.report_commit": str(record["git commit"])})
        files = [out_dir / "index.html", out_dir / "summary.md", out_dir / "verdicts.json", out_dir / PROVENANCE,
                 out_dir / PAGES, out_dir / "figures"]  # the report whole, as its pages link to each other
        metrics = {k: float(v) for k, v in summary.items() if isinstance(v, int) and not isinstance(v, bool)}
        backend.finish_parent(uri, run_id, [f for f in files if f.exists()], metrics, failed=failed)
    except KeyboardInterrupt:  # a stop while logging: the run ends KILLED, not left RUNNING
        if run_id is not None:
            with contextlib.suppress(Exception):
                backend.end_run(uri, run_id, "KILLED")
        raise
    except Exception as e:  # noqa: BLE001 - any store failure: the pages are written, only the run is missing
        if run_id is not None:
            with contextlib.suppress(Exception):
                backend.end_run(uri, run_id, "FAILED")
        return tracking.redact(f"tracking store {uri}: {_gist(e)}")
    return None


# --- The command -----------------------------------------------------------------------------------------

def _error(message: str) -> None:
    print(f"boundlab: report: error: {message}", file=sys.stderr)


def _refused(argv: list[str]) -> str | None:
    """Why the named experiments cannot be reported (one clause), or None: a name, never a path, of
    experiments/NAME.yaml whose results/NAME/metrics.json exists."""
    from pipeline.job.config import is_name

    for name in argv:
        if not is_name(name) or not (Path("experiments") / f"{name}.yaml").is_file():
            known = sorted(p.stem for p in Path("experiments").glob("*.yaml"))
            return (f"{name!r}: unknown experiment (a name of experiments/, not a path); choose from "
                    f"{', '.join(known) or 'none here'}")
        if not (Path("results") / name / "metrics.json").is_file():
            return f"{name}: no results/{name}/metrics.json; run its sweep first (dvc repro {name})"
    return None


def _left_out(results: Path = Path("results"), experiments: Path = Path("experiments")) -> list[str]:
    """What a report of every experiment leaves out, and why (one line each): results whose experiment is
    gone (experiments/NAME.yaml removed or renamed), and, when no experiment has results, how to make some."""
    orphans = sorted(p.parent.name for p in results.glob("*/metrics.json")
                     if not (experiments / f"{p.parent.name}.yaml").is_file())
    lines = []
    if orphans:
        shown = ", ".join(f"results/{n}" for n in orphans[:5]) + (f" and {len(orphans) - 5} more" if len(orphans) > 5 else "")
        lines.append(f"left out {shown}: no experiments/NAME.yaml of that name (removed or renamed); restore the "
                     "experiment to report it, or delete its results")
    if not any((experiments / f"{p.parent.name}.yaml").is_file() for p in results.glob("*/metrics.json")):
        known = sorted(p.stem for p in experiments.glob("*.yaml"))
        lines.append(f"no experiment has results in {results}/ yet: run dvc repro, or one experiment's sweep "
                     f"(boundlab -m experiment=NAME{'; NAME one of ' + ', '.join(known[:8]) if known else ''})")
    return lines


USAGE = """usage: python -m pipeline.outputs.report [NAME ...]

The report over the experiments' results (results/NAME/, written by each experiment's sweep: dvc repro NAME):
per claim its verdict, the evidence, the figures and the provenance, in report/index.html, with summary.md,
verdicts.json and claims.json beside it, logged to MLflow as one run. With NAMEs (experiments/NAME.yaml), only
those experiments; without, every experiment with results. The DVC stage 'report' runs it (dvc repro report).

Exit codes: 0 written and logged, no claim fails; 1 a claim fails, or the report could not be written (the
previous one is unchanged); 2 an unknown name or unreadable results (nothing written); 3 written but not logged
(the tracking store cannot be reached). docs/report.md explains how to read it."""


def main(argv: list[str] | None = None) -> int:
    """``python -m pipeline.outputs.report [NAME ...]``, as :data:`USAGE` says (its exit codes among it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    refused = _refused(argv)
    if refused:
        _error(refused)
        return 2
    if not argv:
        for line in _left_out():
            print(f"boundlab: report: {line}", file=sys.stderr)
    try:
        loaded, issues, untracked = build(argv or None)
    except SweepNotFinished as e:
        _error(f"{e}; the previous report is unchanged")
        return 2
    except ReportNotWritten as e:
        _error(str(e))
        return 1
    verdicts = [v for e in loaded for v in e.verdicts]
    for v in verdicts:  # one short line per claim (the evidence in full is in the report), the summary last
        print(f"  {v.experiment}/{v.bound} ({v.guarantee}): {v.compact()}")
    print(f"boundlab report: {len(loaded)} experiment{'s' * (len(loaded) != 1)}, {len(verdicts)} claim"
          f"{'s' * (len(verdicts) != 1)}: "
          f"{sum(v.status == HOLDS for v in verdicts)} hold, {sum(v.status == INCONCLUSIVE for v in verdicts)} inconclusive, "
          f"{sum(v.fails for v in verdicts)} failing; open report/index.html (summary.md beside it)")
    if untracked:
        _error(f"not logged to MLflow: {untracked}; the report is written (report/index.html, report/summary.md): "
               "start the store, or set MLFLOW_TRACKING_URI to one that answers, and run the report again")
    if issues:
        print("boundlab: report: FAILING CLAIMS:\n  " + "\n  ".join(issues), file=sys.stderr)
        return 1
    return 3 if untracked else 0


def _command() -> int | None:
    """``python -m pipeline.outputs.report``: :func:`main` under the stop guard (Ctrl-C, SIGTERM, SIGHUP end it within
    seconds, its staging directory removed, the previous report whole), and quiet when its reader leaves."""
    from pipeline.sweep.interrupts import StopGuard, until_the_reader_leaves

    guard = StopGuard()
    try:
        return until_the_reader_leaves(main)
    except KeyboardInterrupt:
        _error("interrupted; the previous report is unchanged (or, if it was being moved into place, partly "
               "replaced): run the report again")
        return 130
    finally:
        guard.close()


if __name__ == "__main__":
    sys.exit(_command())
