"""The DVC stage of one experiment: ``python -m pipeline.dvc_stage NAME`` (dvc.yaml, one stage per experiment).

It runs ``boundlab -m experiment=NAME`` with the overrides in ``params.yaml`` (a list value sweeps), so
``dvc exp run -S gamma=0.2`` changes the sweep, and publishes its results into ``results/NAME``
(:func:`run_sweep`). A violated bound is recorded and left for the report stage to fail on (loudly,
after every experiment ran); any other failure stops the pipeline at once (:func:`stage`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

WORK_DIR = Path("multirun") / "dvc"  # the DVC stages' sweeps run here; results/NAME gets what they determine
PUBLISHED = ("results.parquet", "curves.parquet", "metrics.json", "*.png", "*.svg")


def run_sweep(experiment: str, params_file: Path = Path("params.yaml"), results: Path = Path("results")) -> None:
    """Run the named experiment with the overrides of ``params_file``, then publish it into results/NAME.

    The sweep runs in ``multirun/dvc/NAME`` (its job directories, logs, Hydra's records with absolute
    paths, done markers with code hashes, the parent run's id): a rerun resumes there. DVC tracks
    results/NAME, which receives only what the computation determines (:func:`publish`), so a fresh
    clone's ``dvc repro`` reproduces the committed ``dvc.lock``. A sweep that ends with exit code 1 (a
    failed job or a violated bound) is published too, then the exit is passed on."""
    from omegaconf import OmegaConf

    from pipeline import callbacks
    from pipeline.cli import main

    params = OmegaConf.to_container(OmegaConf.load(params_file)) if params_file.exists() else {}
    overrides = []
    for key, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        overrides.append(f"{key}={value}")
    work = WORK_DIR / experiment
    callbacks.LAST.clear()  # filled by this sweep's aggregation: only then are the sweep's files its own
    try:
        main(["-m", f"experiment={experiment}", f"hydra.sweep.dir={work}", *overrides])
    except SystemExit as e:
        # an earlier sweep's metrics.json may still be there: published only if this sweep wrote it
        if e.code == 1 and callbacks.LAST and (work / "metrics.json").exists():
            publish(work, results / experiment)
        raise
    publish(work, results / experiment)


def publish(sweep_dir: Path, dest: Path) -> list[Path]:
    """Copy the sweep's tables, verdict summary and figures (:data:`PUBLISHED`) into ``dest``, replacing it
    whole: staged beside it and renamed, so ``dest`` never mixes two sweeps' files."""
    import shutil

    staging = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    old = dest.with_name(f".{dest.name}.old.{os.getpid()}.tmp")
    from pipeline import files

    files.clean_stale(dest.parent)  # what a killed stage left here
    for leftover in (staging, old):
        shutil.rmtree(leftover, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for pattern in PUBLISHED:
            for path in sorted(sweep_dir.glob(pattern)):
                shutil.copyfile(path, staging / path.name)
    except BaseException:  # a full disk: the previous results stay as they were
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if dest.exists():  # set aside, not deleted, until the new copy is in place: a crash never leaves neither
        os.replace(dest, old)
    os.replace(staging, dest)
    shutil.rmtree(old, ignore_errors=True)
    return sorted(dest.iterdir())


def stage(name: str, results: Path = Path("results")) -> None:
    """The DVC stage of experiment ``name``: its sweep into ``results/NAME``. A sweep whose only problem
    is a violated bound is recorded (results, metrics, MLflow parent run FAILED) and the stage goes on,
    so the report shows it and then fails the pipeline; any other failure stops it here."""
    from pipeline.verdicts import VIOLATED

    try:
        run_sweep(name, results=results)
    except SystemExit as e:
        from pipeline import callbacks

        metrics_file = results / name / "metrics.json"
        if e.code != 1 or not metrics_file.exists() or not callbacks.LAST:  # not this sweep's results: a real failure
            raise
        m = json.loads(metrics_file.read_text())
        violated = [b for b, s in m.items() if isinstance(s, dict) and s.get("verdict") == VIOLATED]
        if m.get("failed_jobs") or not violated:
            raise
        print(f"boundlab: {name}: BOUND(S) VIOLATED: {', '.join(violated)}; recorded in {results / name} "
              "and in MLflow (parent run FAILED); the report stage will fail", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m pipeline.dvc_stage EXPERIMENT")
    stage(sys.argv[1])
