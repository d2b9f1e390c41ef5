"""Hydra callback that turns a multirun into one reviewed sweep.

Before the jobs: the tracking store, the experiment and the parent run are created once (so parallel
workers never race on a fresh SQLite store). After the jobs: the per-job tables are concatenated into
the sweep's ``results.parquet``, the figures are drawn, everything is logged to the parent run, and a
failed job or a violated bound (pipeline.verdicts) makes the command exit non-zero.
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
from pipeline.verdicts import VIOLATED, sweep_line

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


def summary(table: Any) -> dict[str, Any]:
    """Per bound, the sweep's verdict and the numbers behind it (:func:`pipeline.verdicts.summarize`)."""
    from pipeline.verdicts import summarize

    return summarize(table)


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
        violated = [b for b, s in stats.items() if isinstance(s, dict) and s["verdict"] == VIOLATED]
        metrics = {f"{b}/{k}": v for b, s in stats.items() if isinstance(s, dict)
                   for k, v in s.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        verdict_tags = {f"boundlab.verdict.{b}": f"{s['verdict']}: {s['evidence']}"[:5000]
                        for b, s in stats.items() if isinstance(s, dict)}
        tracking.finish_parent(self.uri, self.parent_id, files, metrics | {"runs": stats["runs"]},
                               failed=bool(failed or violated), tags=verdict_tags)
        elapsed = time.perf_counter() - self.started
        log.info("sweep %s: %d runs in %.1f s; results in %s", self.sweep_id, stats["runs"], elapsed, sweep_dir)
        for b, s in stats.items():
            if isinstance(s, dict):
                log.info("  %s (%s): %s", b, s["guarantee"], sweep_line(s))
        problems = []
        if failed:
            problems.append(f"{len(failed)} job(s) failed (see error.txt in each): " + ", ".join(str(j) for j in failed))
        if violated:
            kinds = {b: stats[b]["guarantee"] for b in violated}
            problems.append("bound(s) violated: " + ", ".join(f"{b} ({g})" for b, g in kinds.items())
                            + ("; a violated (D) bound is a bug until proven otherwise" if "D" in kinds.values() else ""))
        if problems:
            print("boundlab: sweep " + "; ".join(problems), file=sys.stderr)
            raise SystemExit(1)
