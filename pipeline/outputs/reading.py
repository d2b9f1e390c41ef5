"""What the report reads, apart from how it is rendered: each experiment's results as the sweeps wrote them
(``results/NAME/metrics.json``, ``results/NAME/results.parquet``) with the claims it states
(``experiments/NAME.yaml``) and their verdicts (:func:`pipeline.judging.verdicts.judge_claim`: never recomputed),
the comparisons and gaps beside the bounds, and the provenance of a report. :mod:`pipeline.outputs.report`
renders and publishes it; :mod:`pipeline.api` reads results through here, never through the report.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from pipeline.judging.guarantees import ON_THE_RATE
from pipeline.judging.verdicts import ClaimVerdict

PACKAGES = ("boundlab", "numpy", "scipy", "pandas", "numba", "scikit-learn", "cvxpy", "clarabel", "hydra-core",
            "mlflow", "dvc", "matplotlib")


@dataclass
class Experiment:
    """One experiment's claims, results and figures as the report shows them."""

    name: str
    question: str
    verdicts: list[ClaimVerdict]
    figures: list[Path]
    runs: int
    failed_jobs: int
    data_hashes: list[str]
    parent_run: str | None
    comparison: list[dict[str, Any]] = field(default_factory=list)
    captions: dict[str, str] = field(default_factory=dict)  # figure stem -> what it shows, in a sentence
    bound_of: dict[str, str | None] = field(default_factory=dict)  # figure stem -> its bound (None: a comparison)
    compared: str | None = None  # the stem of the comparison figure the experiment's ``compare`` entry asks for
    gaps: list[dict[str, Any]] = field(default_factory=list)  # bound / exact / adaptive / random, where exact runs exist


def _first_bound(table: Any, quantity: str) -> str | None:
    """The first applicable (D) or (E) bound on ``quantity`` in the table, the one the comparison figure draws."""
    named = table[(table["quantity"] == quantity) & table["applicable"].astype(bool) & ~table["guarantee"].isin(ON_THE_RATE)]
    return named["bound"].iloc[0] if len(named) else None


def _comparison(table: Any, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Mean over seeds (95 % t interval) of the compared quantity for each value of ``spec['by']``,
    read from the results table (a bound's measured quantity, or a column such as f_star_hi)."""
    from pipeline.outputs.plots import _mean_ci

    quantity, by = spec["quantity"], spec["by"]
    bound = None
    if quantity in set(table["quantity"]):
        rows = table[table["quantity"] == quantity]
        bound = _first_bound(table, quantity)
        per_run = rows[rows["bound"] == bound].set_index("run")["theoretical"] if bound else None
        rows = rows.drop_duplicates("run").assign(value=lambda t: t["empirical"])
        if per_run is not None:
            rows = rows.assign(bound_value=rows["run"].map(per_run))
    else:
        rows = table.drop_duplicates("run").assign(value=lambda t: t[quantity])
    # one row per dataset too when the sweep has several (e.g. a sample and the certified worst instance)
    keys = (["dataset"] if "dataset" in rows and rows["dataset"].nunique() > 1 and by != "dataset" else []) + [by] + (
        [spec["x"]] if spec.get("x") else [])
    out = []
    for key, sel in rows.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mean, half = _mean_ci(sel["value"])
        row = dict(zip(keys, key)) | {"quantity": quantity, "mean": mean, "ci": half, "max": float(sel["value"].max()),
                                      "runs": len(sel)}
        if bound and "bound_value" in sel and sel["bound_value"].notna().any():
            row |= {"bound": bound, "bound_mean": float(sel["bound_value"].mean())}
        out.append(row)
    return out


GAP_ORDERINGS = ("adaptive", "random", "given")  # beside the bound and the exact worst case, in the gaps table


def _gaps(table: Any, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a sweep has ``ordering=exact`` runs (the certified worst case of the theorem's class at each sample's
    own statistics, docs/bounds.md section 1): per dataset and the ``compare`` entry's x, the bound, the exact
    worst case and the adaptive, random and given orders side by side, and the two gaps named: the **theorem's
    slack** (bound - exact) and the **search's shortfall** (exact - adaptive). Both are taken seed by seed (the
    orderings of a seed share its sample; the bound is the sample's, read off its other orderings' runs), then
    averaged; the shortfall's smallest value is kept too."""
    if "game_value" in table and table["game_value"].notna().any():
        return _game_gaps(table)
    if "ordering" not in table or not (table["ordering"] == "exact").any() or "seed" not in table:
        return []
    quantity = spec.get("quantity", "mistakes")
    bound = _first_bound(table, quantity)
    if bound is None:
        return []
    rows = table[(table["bound"] == bound) & (table["quantity"] == quantity) & table["applicable"].astype(bool)]
    keys = [k for k in ("dataset", spec.get("x")) if k and k in rows]
    out = []
    for key, sel in rows.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        measured = sel.pivot_table(index="seed", columns="ordering", values="empirical", aggfunc="max")
        if "exact" not in measured:
            continue
        sample_bound = sel[sel["ordering"] != "exact"].groupby("seed")["theoretical"].max()
        exact = measured["exact"]
        row = dict(zip(keys, key)) | {"quantity": quantity, "bound": bound, "bound_value": float(sample_bound.mean()),
                                      "exact": float(exact.mean()), "seeds": int(exact.notna().sum())}
        for o in GAP_ORDERINGS:
            if o in measured:
                row[o] = float(measured[o].mean())
        row["slack"] = float((sample_bound - exact).mean())
        if "adaptive" in measured:
            row["adaptive_best"] = float(measured["adaptive"].max())
            short = exact - measured["adaptive"]
            row["shortfall"], row["shortfall_least"] = float(short.mean()), float(short.min())
        if "certificate_gap" in sel:
            row["certificate_gap"] = float(sel.loc[sel["ordering"] == "exact", "certificate_gap"].max())
        out.append(row)
    return out


def _game_gaps(table: Any) -> list[dict[str, Any]]:
    """The same table for a finite game searched exactly beside each run (Halving's ``game_value`` and
    ``littlestone``, docs/bounds.md section 3): per class and size, over the runs the search decided, the bound,
    the exact value, the Littlestone dimension and the largest measured; the theorem's slack (bound - exact) and
    the shortfall of the run's orders and adversaries (exact - measured), run by run (each run has its own points)."""
    rows = table[(table["bound"] == "halving") & table["game_value"].notna()]
    keys = [k for k in ("cls", "size") if k in rows]
    out = []
    for key, sel in rows.groupby(keys, sort=True) if keys else [((), rows)]:
        key = key if isinstance(key, tuple) else (key,)
        exact = sel["game_value"].astype(float)
        short = exact - sel["empirical"]
        out.append(dict(zip(keys, key)) | {
            "quantity": "mistakes", "bound": "halving", "bound_value": float(sel["theoretical"].mean()),
            "exact": float(exact.mean()), "littlestone": float(sel["littlestone"].mean()),
            "measured_best": float(sel["empirical"].max()), "slack": float((sel["theoretical"] - exact).mean()),
            "shortfall": float(short.mean()), "shortfall_least": float(short.min()), "seeds": len(sel),
            "searched_by": "measured"})
    return out


# --- Reading a sweep's files -------------------------------------------------------------------------

RESUME = "the sweep did not finish: run the same command to resume it"


class SweepNotFinished(FileNotFoundError, ValueError):
    """A sweep's results with a file missing or unreadable: what a sweep interrupted before its aggregation
    ended leaves (job directories, perhaps its tables, but no summary yet), or a file cut short by a full disk
    or an interrupted copy. Both a FileNotFoundError (a file is missing) and a ValueError (a file is not what
    it should be), so that code catching either for "no usable results" catches it; its one-line message
    names the file and says how to finish the sweep."""


def _reason(error: BaseException) -> str:
    """The gist of a reader's error in a few words: its first sentence, without the path it repeats."""
    text = (str(error).splitlines() or [""])[0].split("': ")[-1].split(". ")[0].strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def read_metrics(path: Path, resume: str = RESUME) -> dict[str, Any]:
    """A sweep's summary (``metrics.json``, :func:`pipeline.sweep.callbacks.summary`): a JSON object, else
    :class:`SweepNotFinished` naming the file (a truncated or foreign file must not pass for a verdict)."""
    try:
        metrics = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise SweepNotFinished(f"{path}: missing; {resume}") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError: cut short or not JSON at all
        raise SweepNotFinished(f"{path}: not valid JSON, perhaps cut short ({_reason(e)}); {resume}") from None
    if not isinstance(metrics, dict):
        raise SweepNotFinished(f"{path}: holds a JSON {type(metrics).__name__}, not a sweep's summary (an object); "
                               f"{resume}")
    return metrics


def read_table(path: Path, resume: str = RESUME) -> Any:
    """A sweep's table (``results.parquet`` or ``curves.parquet``): empty when the file is absent (no job
    finished), :class:`SweepNotFinished` naming it when it cannot be read (pyarrow's errors are ValueError
    and OSError subclasses, and say nothing of how to get a whole file again)."""
    import pandas as pd

    if not path.exists():
        return pd.DataFrame()
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise SweepNotFinished(f"{path}: not a whole Parquet table, perhaps cut short ({_reason(e)}); {resume}") from None


def _has_jobs(directory: Path) -> bool:
    """Whether ``directory`` is a sweep's (job directories ``0``, ``1``, ... or Hydra's record): a sweep
    interrupted before it wrote any result, as opposed to a directory that is no sweep at all."""
    return (directory / "multirun.yaml").exists() or any(p.is_dir() and p.name.isdigit() for p in directory.iterdir())


def read_results(directory: Path, resume: str = RESUME, curves: bool = True) -> tuple[Any, Any, dict[str, Any]]:
    """A sweep's table, curves (empty unless ``curves``) and summary in ``directory``, checked whole.

    A sweep's aggregation publishes ``metrics.json`` last (:mod:`pipeline.sweep.callbacks`), so a directory without
    it, holding tables or job directories, is a sweep that did not finish, and so is a summary that counts
    runs beside no table: :class:`SweepNotFinished`, whose message ends with ``resume``. A directory with
    none of these is not a sweep's: FileNotFoundError. A table is absent only when no job finished."""
    import pandas as pd

    metrics_file = directory / "metrics.json"
    if not metrics_file.exists():
        written = [n for n in ("results.parquet", "curves.parquet") if (directory / n).exists()]
        if written:
            raise SweepNotFinished(f"{directory}: {' and '.join(written)} but no metrics.json (the sweep's summary, "
                                   f"written last); {resume}")
        if _has_jobs(directory):
            raise SweepNotFinished(f"{directory}: job directories but no results.parquet or metrics.json yet; {resume}")
        raise FileNotFoundError(f"{directory}: no results.parquet or metrics.json (not a sweep's results)")
    metrics = read_metrics(metrics_file, resume)
    if metrics.get("runs") and not (directory / "results.parquet").exists():
        raise SweepNotFinished(f"{directory}: metrics.json counts {metrics['runs']} runs but results.parquet is "
                               f"missing; {resume}")
    table = read_table(directory / "results.parquet", resume)
    return table, read_table(directory / "curves.parquet", resume) if curves else pd.DataFrame(), metrics


PROVENANCE = "provenance.json"  # beside the report, outside DVC's outs: the run's circumstances


def provenance() -> dict[str, Any]:
    """What determines the numbers: the Python and package versions, and whether the installed versions
    are the pinned ones of constraints.txt (in the report's pages; :mod:`pipeline.pins`)."""
    from pipeline import pins

    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = "not installed"
    return {"python": platform.python_version(), "pinned versions": pins.summary(pins.check()), "packages": versions}


def circumstances(experiments: list[Experiment]) -> dict[str, Any]:
    """How this report was made: git commit, machine, time, each experiment's MLflow parent run. Written to
    ``report/provenance.json`` and the report's MLflow run, not into the pages DVC tracks: a fresh clone's
    ``dvc repro`` must reproduce them byte for byte (the commit alone would change with every commit)."""
    from pipeline.tracking import git_commit

    return {"git commit": git_commit(), "platform": platform.platform(), "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "mlflow parent runs": {e.name: e.parent_run for e in experiments}}


def problems(experiments: list[Experiment]) -> list[str]:
    """What makes the report stage fail: violated claims (any guarantee type), claims whose bound never
    ran, lost jobs. An inconclusive claim is shown as such and does not fail it."""
    out = []
    for e in experiments:
        if e.failed_jobs:
            out.append(f"{e.name}: {'no results' if e.failed_jobs < 0 else f'{e.failed_jobs} job(s) failed'}")
        for v in e.verdicts:
            if v.fails:
                out.append(f"{e.name}/{v.bound} ({v.guarantee}) {v.status.upper()}: {v.text}")
    return out


# --- Rendering ---------------------------------------------------------------------------------------


def ordered(names: Iterable[str]) -> list[str]:
    """Experiment names in the docs' order (:data:`pipeline.paths.EXPERIMENTS`, the order of
    docs/experiments.md), any other after them by name."""
    from pipeline.paths import EXPERIMENTS

    rank = {n: i for i, n in enumerate(EXPERIMENTS)}
    return sorted(set(names), key=lambda n: (rank.get(n, len(rank)), n))
