"""Hydra callback that turns a multirun into one reviewed sweep.

Before the jobs: the tracking store, the experiment and the parent run are created once (so parallel
workers never race on a fresh SQLite store). After the jobs: the per-job tables are concatenated into
the sweep's ``results.parquet``, the figures are drawn, everything is logged to the parent run, and a
failed job or a violated deterministic bound makes the command exit non-zero.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from pipeline.ray_worker import DRIVER_CWD_ENV
from pipeline.stages import SWEEP_KEY_ENV, SWEEP_SIZE_ENV, SWEEP_START_ENV

log = logging.getLogger("boundlab")


def _job_dirs(sweep_dir: Path, size: int | None) -> list[Path]:
    if size is not None:
        return [sweep_dir / str(i) for i in range(size)]
    return sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))


def collect(sweep_dir: Path, size: int | None = None) -> tuple[Any, Any, list[Path]]:
    """Concatenate the results and curves of the sweep's ``size`` jobs (all job directories if None),
    in job order; list the jobs that failed or left no results."""
    import pandas as pd

    from pipeline.resume import MARKER

    jobs = _job_dirs(sweep_dir, size)
    done = [j for j in jobs if (j / MARKER).exists()]
    failed = [j for j in jobs if not (j / MARKER).exists()]
    tables = [pd.read_parquet(j / "results.parquet") for j in done]
    curves = [pd.read_parquet(j / "curve.parquet") for j in done]
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    curve = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    return table, curve, failed


def _expectation(rows: Any) -> dict[str, Any]:
    """(E) in the mean over seeds, per setting: mean measured with a 95 % t interval against the mean
    bound (BOUNDS.md 9); a setting fails only where the whole interval lies above the bound."""
    from scipy import stats

    worst, failing, settings = None, 0, 0
    keys = ["setting", "part"] if "part" in rows and rows["part"].notna().any() else ["setting"]
    for _, sel in rows.groupby(keys, sort=True, dropna=False):
        n = len(sel)
        mean, bound = float(sel["empirical"].mean()), float(sel["theoretical"].mean())
        half = float(stats.t.ppf(0.975, n - 1) * sel["empirical"].std(ddof=1) / n**0.5) if n > 1 else None
        settings += 1
        failing += int(half is not None and mean - half > bound)
        ratio = mean / bound if bound > 0 else float("inf")
        if worst is None or ratio > worst["mean_ratio"]:
            worst = {"mean_ratio": ratio, "ci_half_width_ratio": None if half is None else half / bound, "seeds": n}
    return {"settings": settings, "settings_above_bound": failing, **(worst or {})}


def _probability(rows: Any, delta: float | None) -> dict[str, Any]:
    """(P): the violation rate over runs with its Clopper-Pearson 95 % interval, against delta."""
    from scipy import stats

    n, k = len(rows), int((~rows["holds"].astype(bool)).sum())
    hi = float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    return {"violation_rate": k / n, "violation_rate_ci_high": hi, **({"delta": delta} if delta is not None else {})}


def summary(table: Any) -> dict[str, Any]:
    """Per bound, the report of BOUNDS.md 9 for its guarantee type: (D) violations and the worst ratio;
    (E) the mean over seeds against the bound per setting; (P) the violation rate against delta."""
    out: dict[str, Any] = {"runs": int(table["run"].nunique()) if len(table) else 0}
    for bound, rows in table.groupby("bound", sort=True) if len(table) else []:
        applicable = rows[rows["applicable"].astype(bool)]
        guarantee = rows["guarantee"].iloc[0]
        out[bound] = {
            "guarantee": guarantee,
            "runs": len(rows),
            "applicable": len(applicable),
            "violations": int((~applicable["holds"].astype(bool)).sum()) if guarantee == "D" else 0,
            "max_ratio": float(applicable["ratio"].max()) if len(applicable) else None,
            "min_ratio": float(applicable["ratio"].min()) if len(applicable) else None,
        }
        if guarantee == "E" and len(applicable):
            out[bound] |= _expectation(applicable)
        if guarantee == "P" and len(applicable):
            delta = float(applicable["delta"].iloc[0]) if "delta" in applicable else None
            out[bound] |= _probability(applicable, delta)
    return out


def verdict(s: dict[str, Any]) -> str:
    """One line per bound, in the terms of its guarantee type."""
    head = f"{s['applicable']}/{s['runs']} applicable"
    if not s["applicable"]:
        return head
    ratios = f"ratio {s['min_ratio']:.3g}..{s['max_ratio']:.3g}"
    if s["guarantee"] == "D":
        return f"{head}, {s['violations']} violations, {ratios}"
    if s["guarantee"] == "E":
        ci = "" if s["ci_half_width_ratio"] is None else f" +/- {s['ci_half_width_ratio']:.2g}"
        return (f"{head}, worst mean/bound over seeds {s['mean_ratio']:.3g}{ci} "
                f"({s['seeds']} seeds), {s['settings_above_bound']}/{s['settings']} settings above the bound")
    if s["guarantee"] == "P":
        return (f"{head}, violation rate {s['violation_rate']:.3g} (95 % CI up to {s['violation_rate_ci_high']:.3g})"
                f" against delta {s.get('delta', float('nan')):g}, {ratios}")
    return head


def _description(config: DictConfig) -> str:
    """The parent run's description: the question the sweep asks and the claims it judges."""
    text = str(config.question or f"Sweep of {config.name}: every applicable bound against what the learner measured.")
    claims = config.get("claims") or []
    if claims:
        text += "\n\nClaims:\n" + "\n".join(f"- {c.bound} ({c.guarantee}): {c.claim}" for c in claims)
    return text


def _swept(config: DictConfig) -> dict[str, str]:
    """What the sweep varies and fixes (an experiment's grid, then the command's overrides): the parent
    run's parameters, so a reviewer sees the grid without reading code."""
    grid = config.hydra.sweeper.get("params") or {}
    swept = {str(k): str(v) for k, v in grid.items()}
    for override in config.hydra.overrides.task:
        key, _, value = override.lstrip("+~").partition("=")
        if value and not key.startswith("hydra"):
            swept[key] = value
    return swept


class SweepCallback(Callback):
    """Parent MLflow run, sweep results table, figures and verdict for every ``boundlab -m``."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from pipeline import tracking

        sweep_dir = Path(config.hydra.sweep.dir)
        self.uri = tracking.tracking_uri(config.tracking.uri)
        resumed = tracking.resume_parent(self.uri, sweep_dir)
        if resumed:
            self.parent_id, self.sweep_id, killed = resumed
            log.info("sweep %s: resuming in %s (parent run %s; %d interrupted run(s) marked KILLED)",
                     self.sweep_id, sweep_dir, self.parent_id, killed)
        else:
            self.sweep_id = f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
            self.parent_id = tracking.start_parent(
                self.uri,
                experiment=config.name,
                name=f"{config.name} sweep {time.strftime('%Y-%m-%d %H:%M:%S')}",
                question=_description(config),
                sweep_id=self.sweep_id,
                tags={"boundlab.overrides": " ".join(config.hydra.overrides.task),
                      "boundlab.sweep_dir": str(sweep_dir.resolve())},
                params=_swept(config),
            )
            log.info("sweep %s: parent run %s in %s", self.sweep_id, self.parent_id, self.uri)
        tracking.announce_sweep(sweep_dir, self.parent_id, self.sweep_id)
        self.started = time.perf_counter()
        os.environ[SWEEP_START_ENV] = str(time.time())
        os.environ[DRIVER_CWD_ENV] = os.getcwd()  # for launchers whose workers start elsewhere (ray)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from pipeline import plots, tracking

        sweep_dir = Path(config.hydra.sweep.dir)
        size = os.environ.get(SWEEP_SIZE_ENV)
        for key in (tracking.PARENT_ENV, tracking.SWEEP_ENV, SWEEP_START_ENV, SWEEP_SIZE_ENV, SWEEP_KEY_ENV):
            os.environ.pop(key, None)
        table, curves, failed = collect(sweep_dir, int(size) if size else None)
        files: list[Path] = []
        if len(table):
            table.to_parquet(sweep_dir / "results.parquet", index=False)
            curves.to_parquet(sweep_dir / "curves.parquet", index=False)
            files += [sweep_dir / "results.parquet", sweep_dir / "curves.parquet"]
            files += plots.sweep_figures(table, curves, sweep_dir)
        stats = summary(table) | {"failed_jobs": len(failed)}
        (sweep_dir / "metrics.json").write_text(json.dumps(stats, indent=2) + "\n")
        files.append(sweep_dir / "metrics.json")
        violated = [b for b, s in stats.items() if isinstance(s, dict) and s["guarantee"] == "D" and s["violations"]]
        metrics = {f"{b}/{k}": v for b, s in stats.items() if isinstance(s, dict)
                   for k, v in s.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        tracking.finish_parent(self.uri, self.parent_id, files, metrics | {"runs": stats["runs"]},
                               failed=bool(failed or violated))
        elapsed = time.perf_counter() - self.started
        log.info("sweep %s: %d runs in %.1f s; results in %s", self.sweep_id, stats["runs"], elapsed, sweep_dir)
        for b, s in stats.items():
            if isinstance(s, dict):
                log.info("  %s (%s): %s", b, s["guarantee"], verdict(s))
        problems = []
        if failed:
            problems.append(f"{len(failed)} job(s) failed (see error.txt in each): " + ", ".join(str(j) for j in failed))
        if violated:
            problems.append(f"deterministic bound(s) violated: {', '.join(violated)} (a bug until proven otherwise)")
        if problems:
            print("boundlab: sweep " + "; ".join(problems), file=sys.stderr)
            raise SystemExit(1)
