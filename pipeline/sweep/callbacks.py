"""Hydra callback that turns a multirun into one reviewed sweep.

Before the jobs: the tracking store, the experiment and the parent run are created once (so parallel
workers never race on a fresh SQLite store). After the jobs: the per-job tables are concatenated into
the sweep's ``results.parquet``, the figures are drawn, everything is logged to the parent run, and a
failed job or a violated bound (pipeline.judging.verdicts) makes the command exit non-zero.

Hydra 1.3 turns an ``Exception`` raised by a callback into a warning (``Callbacks._notify``) and the
command would exit 0 with a stale table and a RUNNING parent. So each hook catches its own faults,
ends the parent FAILED (KILLED when interrupted), prints one line naming what failed and raises
``SystemExit(1)``, which Hydra lets through. The sweep's files are staged and moved into place with
``os.replace``: an interrupted aggregation leaves the previous files whole, never half of new ones.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from pipeline.sweep import context as sweep
from pipeline.sweep.progress import forget_tallies
from pipeline.outputs import tables
from pipeline.judging.verdicts import VIOLATED, sweep_line

log = logging.getLogger("boundlab")


def _job_dirs(sweep_dir: Path, size: int | None) -> list[Path]:
    if size is not None:
        return [sweep_dir / str(i) for i in range(size)]
    return sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))


READERS, WINDOW = tables.READERS, tables.WINDOW  # threads reading the jobs' tables at a sweep's end, files ahead


def _read_job(job_dir: Path) -> tuple[Any, Any] | Exception | None:
    """A finished job's (results, curve) Arrow tables; None for a job not finished; the error for tables
    that cannot be read (``OSError``: gone or unreadable; ``ValueError``: not parquet, damaged)."""
    from pipeline.job.markers import finished

    if not finished(job_dir):
        return None
    try:
        return tables.read(job_dir / "results.parquet"), tables.read(job_dir / "curve.parquet")
    except (OSError, ValueError) as e:
        return e


def collect(sweep_dir: Path, size: int | None = None, pack: int | None = None,
            attempt: float | None = None) -> tuple[Any, Any, list[Path]]:
    """Concatenate the results and curves of the sweep's ``size`` jobs (all job directories if None),
    in job order; list the jobs that failed or left no readable results. ``pack``: a packed sweep's
    settings per pack (``pipeline.sweep.pack``): its jobs' rows are read from the packs' parts, in the same order,
    only from the parts complete and current for this run of the sweep (``attempt``: its start; a pack that
    failed whole or did not run counts each of its members as failed).
    The tables are the frames ``pd.concat`` of each file's ``pd.read_parquet`` gives, gathered as Arrow
    tables and converted once (pipeline.outputs.tables: at 10,000 jobs, a quarter of the time and less memory).
    The files are read by :data:`READERS` threads, :data:`WINDOW` jobs ahead at most, and gathered in job
    order; a phase that lasts logs its progress."""
    from concurrent.futures import ThreadPoolExecutor

    from pipeline.sweep.progress import Progress

    results, curves = tables.Gather(), tables.Gather()
    if pack and size:
        from pipeline.sweep import pack as packed

        failed = packed.collect(sweep_dir, size, pack, results, curves, attempt)
        return results.frame(), curves.frame(), failed
    failed = []
    jobs = _job_dirs(sweep_dir, size)
    progress = Progress("the sweep's end: reading the jobs' tables", total=len(jobs), unit="jobs")
    with ThreadPoolExecutor(READERS, thread_name_prefix="boundlab-collect") as pool:
        for start in range(0, len(jobs), WINDOW):
            window = jobs[start:start + WINDOW]
            for j, read in zip(window, pool.map(_read_job, window)):
                if read is None:
                    failed.append(j)
                elif isinstance(read, Exception):  # marked done, table gone or damaged: the job has no result
                    log.error("job %s: marked done but its tables cannot be read (%s: %s)", j, type(read).__name__, read)
                    failed.append(j)
                else:
                    results.add(read[0])
                    curves.add(read[1])
            progress.update(start + len(window))
    return results.frame(), curves.frame(), failed


def _write_tables(table: Any, curves: Any, staging: Path) -> list[Path]:
    """The sweep's results and curves tables in ``staging``: their paths."""
    table.to_parquet(staging / "results.parquet", index=False)
    curves.to_parquet(staging / "curves.parquet", index=False)
    return [staging / "results.parquet", staging / "curves.parquet"]


def _job_label(job_dir: Path) -> str:
    """A failed job as a reader finds it: its directory and the overrides that chose it (a packed sweep's
    member: its pack's directory, its index and overrides)."""
    from pipeline.sweep.pack import member_label

    label = member_label(job_dir)
    if label is not None:
        return label
    try:
        overrides = (job_dir / ".hydra" / "overrides.yaml").read_text().splitlines()
        chosen = " ".join(line.removeprefix("- ").strip() for line in overrides if line.startswith("- "))
    except OSError:
        chosen = ""
    return f"{job_dir} ({chosen})" if chosen else str(job_dir)


def _overrides(job_dir: Path) -> list[str]:
    """The overrides that chose a job (a packed sweep's member: as its pack recorded them); [] if unknown."""
    from pipeline.sweep.pack import member_overrides

    listed = member_overrides(job_dir)
    if listed is not None:
        return listed
    try:
        lines = (job_dir / ".hydra" / "overrides.yaml").read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return [line.removeprefix("- ").strip() for line in lines if line.startswith("- ")]


def failures(sweep_dir: Path, failed: list[Path], attempt: float | None = None) -> list[dict[str, Any]]:
    """What the verdicts need of each failed job (``pipeline.judging.verdicts.summarize``, docs/bounds.md section 9,
    "Missing runs"): a label relative to the sweep (its directory, or pack and index, and its overrides), the
    overrides, and the record of its error where the job left one (``pipeline.sweep.stages.failure_record``: the
    kind, a RangeError's bound, value and range, the learner, setting and parameters); a job without one
    (interrupted, lost, its tables unreadable, a pack that failed whole) is a failed job whose setting is
    found from its overrides, if at all. ``attempt``: the sweep's start; a packed member's record is read only
    from a part marker of this run of the sweep (``pipeline.sweep.pack.member_failure``)."""
    from pipeline.sweep.pack import member_failure
    from pipeline.sweep.stages import read_failure

    out = []
    for job_dir in failed:
        overrides = _overrides(job_dir)
        record = member_failure(job_dir, attempt) or read_failure(job_dir)
        try:
            where = job_dir.relative_to(sweep_dir).as_posix()
        except ValueError:
            where = job_dir.name
        where = where.replace("/run-", " run ") if "/run-" in where else f"job {where}"
        chosen = " ".join(overrides)
        out.append((record or {}) | {"label": f"{where} ({chosen})" if chosen else where, "overrides": overrides})
    return out


def _publish(staged: list[Path], sweep_dir: Path) -> list[Path]:
    """Move staged files into the sweep directory (``os.replace``: each appears whole or not at all)."""
    final = []
    for path in staged:
        os.replace(path, sweep_dir / path.name)
        final.append(sweep_dir / path.name)
    return final


def _end_parent(uri: str, parent_id: str | None, status: str) -> None:
    """End the parent run ``status`` if it was opened; a store that fails here is already reported."""
    from pipeline import tracking

    if not parent_id:
        return
    try:
        tracking.backend(uri).end_run(uri, parent_id, status)
    except Exception as e:  # noqa: BLE001 - the original fault is the one to report
        log.error("could not end parent run %s %s: %s: %s", parent_id, status, type(e).__name__, e)


def _stop(what: str, error: BaseException) -> None:
    """One line on stderr naming what failed, then exit 1 past Hydra (it swallows ``Exception`` only)."""
    from pipeline.paths import fault

    log.debug("sweep %s failed", what, exc_info=error)
    said = fault(error)  # the working directory removed, a path too long: the file system's, worded
    print(f"boundlab: sweep {what} failed: {said or f'{type(error).__name__}: {error}'}", file=sys.stderr)
    raise SystemExit(1) from error


def summary(table: Any, config: DictConfig | None = None, failed: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per bound, the sweep's verdict and the numbers behind it (:func:`pipeline.judging.verdicts.summarize`); a
    sweep of ``seeds=auto`` is judged by anytime-valid tests tuned to its seed budget. ``failed``: the
    sweep's failed jobs (:func:`failures`): never "holds" from the survivors, and a run that contradicted a
    bound's declared range refutes that bound (docs/bounds.md section 9, "Missing runs")."""
    from pipeline.judging.verdicts import summarize

    planned = int(config.seed_budget) if config is not None and config.get("seeds") == "auto" else None
    return summarize(table, planned=planned, failed=failed) if failed else summarize(table, planned=planned)


def ahead_of_the_end(sweep_dir: Path) -> None:
    """What a sweep's end needs that its last jobs cannot change, done while they run (the launcher calls this
    once no job waits for a worker: a core is about to idle, or shares its time with this process for the
    jobs' last seconds): the modules that draw the figures imported, and the parts of the packs this run of the
    sweep finished read (:func:`pipeline.sweep.pack.read_ahead`). Only a head start: whatever fails here is
    done again at the end, which reports it."""
    try:
        from pipeline.outputs import plots  # noqa: F401 - matplotlib: ~0.25 s of the end's start otherwise
        from pipeline.sweep import pack

        pack.read_ahead(sweep_dir, sweep.current().start)
    except Exception as e:  # noqa: BLE001 - the end does it all again
        log.debug("sweep %s: nothing read ahead of its end (%s: %s)", sweep_dir, type(e).__name__, e)


LAST: dict[str, Any] = {}  # the last sweep this process aggregated: its summary and claims (pipeline.cli's rounds)


def _description(config: DictConfig) -> str:
    """The parent run's description: the question the sweep asks and the claims it judges."""
    text = str(config.question or f"Sweep of {config.name}: every applicable bound against what the learner measured.")
    claims = config.get("claims") or []
    if claims:
        text += "\n\nClaims:\n" + "\n".join(f"- {c.bound} ({c.guarantee}): {c.claim}" for c in claims)
    return text


def _swept(config: DictConfig) -> dict[str, str]:
    """What the sweep varies and fixes (an experiment's grid, then the command's overrides): the parent
    run's parameters, so a reviewer sees the grid without reading code. ``force`` and the launcher say
    how the sweep runs, not what it ran (the same directory, pipeline.sweep.preflight's sweep key): left out, so that
    ``force=true`` reruns under the same parent; so is ``log.*`` (what the terminal shows)."""
    grid = config.hydra.sweeper.get("params") or {}
    swept = {str(k): str(v) for k, v in grid.items()}
    for override in config.hydra.overrides.task:
        key, _, value = override.lstrip("+~").partition("=")
        if value and not key.startswith(("hydra", "log.")) and key != "force":
            swept[key] = value
    return swept


_sweep_lock: int | None = None  # pipeline.job.locks.hold on the running sweep's directory


def release_sweep() -> None:
    """Drop the running sweep's directory lock (the process's end drops it too; this is for a process that
    goes on, e.g. a sweep run in-process by a test or a notebook after an interrupt)."""
    global _sweep_lock
    from pipeline.job import locks

    locks.release(_sweep_lock)
    _sweep_lock = None


class SweepCallback(Callback):
    """Parent MLflow run, sweep results table, figures and verdict for every ``boundlab -m``."""

    parent_id: str | None = None
    uri: str = ""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from pipeline import files
        from pipeline.job import locks

        sweep_dir = Path(config.hydra.sweep.dir)
        global _sweep_lock
        release_sweep()
        try:  # the sweep owns its directory while it runs: a twin is refused before it touches anything
            _sweep_lock = locks.hold(sweep_dir)
        except locks.Held as e:
            print(f"boundlab: error: sweep directory {sweep_dir} is in use by process {e.holder} (the same sweep, "
                  "already running); wait for it to finish or stop it, then run the command again to resume",
                  file=sys.stderr)
            raise SystemExit(1) from None
        except Exception as e:  # noqa: BLE001 - a directory that cannot be created or locked (read-only, no flock)
            _stop(f"start (cannot take the sweep directory {sweep_dir})", e)
        files.clean_stale(sweep_dir)  # what a killed end of this sweep left (its staging directory)
        try:
            self._start(config)
        except KeyboardInterrupt:
            _end_parent(self.uri, self.parent_id, "KILLED")
            release_sweep()
            raise
        except Exception as e:  # noqa: BLE001 - _stop ends the command, naming the error
            _end_parent(self.uri, self.parent_id, "FAILED")
            release_sweep()
            _stop("start (tracking store, parent run or sweep directory)", e)

    def _start(self, config: DictConfig) -> None:
        from pipeline import tracking

        sweep_dir = Path(config.hydra.sweep.dir)
        self.uri = tracking.tracking_uri(config.tracking.uri)
        if tracking.redact(self.uri) != self.uri:  # a database password: not in the sweep's saved config either
            from pipeline.sweep.stages import redact_saved

            redact_saved(sweep_dir)
        swept = _swept(config)
        backend = tracking.backend(self.uri)
        resumed = backend.resume_parent(self.uri, sweep_dir, params=swept)  # None after another grid: a new parent
        orphans = backend.end_orphaned_parents(self.uri, config.name, sweep_dir)
        if orphans:
            log.warning("sweep: %d earlier parent run(s) of %s were left RUNNING by a process that is gone (%s): "
                        "ended KILLED; their finished jobs are kept", len(orphans), config.name, ", ".join(orphans[:5]))
        if resumed:
            self.parent_id, self.sweep_id, killed = resumed
            log.info("sweep %s: resuming in %s (parent run %s; %d interrupted run(s) marked KILLED)",
                     self.sweep_id, sweep_dir, self.parent_id, killed)
        else:
            self.sweep_id = f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
            self.parent_id = backend.start_parent(
                self.uri,
                experiment=config.name,
                name=f"{config.name} sweep {time.strftime('%Y-%m-%d %H:%M:%S')}",
                question=_description(config),
                sweep_id=self.sweep_id,
                tags={"boundlab.overrides": " ".join(config.hydra.overrides.task),
                      "boundlab.sweep_dir": str(sweep_dir.resolve())},
                params=swept,
            )
            log.info("sweep %s: parent run %s in %s", self.sweep_id, self.parent_id, self.uri)
        tracking.announce_sweep(sweep_dir, self.parent_id, self.sweep_id, new=not resumed)
        self.started = time.perf_counter()
        # the progress of each job's log lines; the directory, for launchers whose workers start elsewhere (ray)
        sweep.update(start=time.time(), driver_cwd=os.getcwd())

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        size, attempt = sweep.current().size, sweep.current().start
        # From here this hook owns the parent run: pipeline.cli's interrupt handler must not end it twice.
        sweep.current().ended().publish()
        staging = sweep_dir / f".aggregate.{os.getpid()}.tmp"
        try:
            with tables.one_heap():  # the end's tables, verdicts and figures: one heap, not two (pipeline.outputs.tables)
                problems = self._aggregate(config, sweep_dir, size or None, staging, attempt)
        except KeyboardInterrupt:
            _end_parent(self.uri, self.parent_id, "KILLED")
            raise
        except Exception as e:  # noqa: BLE001 - _stop ends the command, naming the error
            _end_parent(self.uri, self.parent_id, "FAILED")
            _stop(f"aggregation in {sweep_dir}", e)
        finally:
            tables.forget_ahead()
            shutil.rmtree(staging, ignore_errors=True)
            forget_tallies(sweep_dir)  # the progress of its jobs' lines: the next attempt counts afresh
            release_sweep()
        if problems:
            print("boundlab: sweep " + "; ".join(problems), file=sys.stderr)
            raise SystemExit(1)

    def _aggregate(self, config: DictConfig, sweep_dir: Path, size: int | None, staging: Path,
                   attempt: float | None = None) -> list[str]:
        """Collect, stage, publish and log the sweep's files; end the parent. Returns what to report. ``attempt``:
        the sweep's start (``pipeline.sweep.context.Sweep.start``), what a pack of this run of the sweep recorded."""
        from concurrent.futures import ThreadPoolExecutor

        from pipeline import tracking
        from pipeline.job import markers, store
        from pipeline.outputs import plots

        pack = config.get("pack")
        table, curves, failed = collect(sweep_dir, size, pack, attempt if pack else None)
        tables.forget_ahead()  # what was read ahead and not taken (a part the end refused): not held for the figures
        staging.mkdir(parents=True, exist_ok=True)
        staged: list[Path] = []
        figures_failed: list[str] = []

        def judged() -> dict[str, Any]:  # the failed jobs count against the bounds they concern
            return summary(table, config, failures(sweep_dir, failed, attempt if pack else None)) | {"failed_jobs": len(failed)}

        if len(table):
            # the figures' helper draws while this process writes the tables (a thread: pyarrow writes without the
            # GIL) and judges the bounds, then takes the figures left: no figure can lose the tables or verdicts
            with plots.sweep_figures_beside(table, curves, staging, failed=figures_failed, previous=sweep_dir) as drawn:
                with ThreadPoolExecutor(1, thread_name_prefix="boundlab-tables") as writer:
                    # its own views of the frames: whatever pandas rearranges inside this thread's is not theirs
                    written = writer.submit(_write_tables, table.copy(deep=False), curves.copy(deep=False), staging)
                    stats = judged()
                    staged += written.result()
            staged += drawn
        else:
            stats = judged()
        for what in figures_failed:
            log.error("sweep %s: figure not drawn (the results and verdicts are kept): %s", self.sweep_id, what)
        LAST.clear()
        LAST.update(stats=stats, claims=[{"bound": str(c.bound), "guarantee": str(c.guarantee)}
                                         for c in (config.get("claims") or [])])
        (staging / "metrics.json").write_text(json.dumps(stats, indent=2) + "\n")
        staged.append(staging / "metrics.json")
        if not len(table):  # no job finished: an earlier table would pass for this sweep's
            for name in ("results.parquet", "curves.parquet"):
                (sweep_dir / name).unlink(missing_ok=True)
        files = _publish(staged, sweep_dir)
        violated = [b for b, s in stats.items() if isinstance(s, dict) and s["verdict"] == VIOLATED]
        metrics = {f"{b}/{k}": v for b, s in stats.items() if isinstance(s, dict)
                   for k, v in s.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        parent_tags = tracking.verdict_tags(stats)  # verdict.BOUND, short; the whole evidence is in metrics.json
        # jobs whose result came from the job store: their runs stay where they are; under this parent, a light
        # child per reused run carries its params and metrics and points to it, so the parent lists every job
        reused = [r for j in ([] if pack else _job_dirs(sweep_dir, size))  # a pack's members use no job store
                  if (r := store.reused_run(j)) and markers.finished(j)]
        backend = tracking.backend(self.uri)
        backend.link_reused(self.uri, self.parent_id, reused)
        parent_tags["boundlab.reused_runs"] = (" ".join(reused) or "none")[:5000]
        backend.finish_parent(self.uri, self.parent_id, files, metrics | {"runs": stats["runs"], "reused_jobs": len(reused)},
                              failed=bool(failed or violated), tags=parent_tags)
        elapsed = time.perf_counter() - self.started
        log.info("sweep %s: %d runs in %.1f s (%d reused from earlier sweeps); results in %s", self.sweep_id, stats["runs"],
                 elapsed, len(reused), sweep_dir)
        for b, s in stats.items():
            if isinstance(s, dict):
                log.info("  %s (%s): %s", b, s["guarantee"], sweep_line(s))
        problems = []
        if failed:
            problems.append(f"{len(failed)} job(s) failed (see error.txt in each): " + ", ".join(_job_label(j) for j in failed))
        if violated:
            from pipeline.judging.guarantees import guarantee as kind_of

            kinds = {b: stats[b]["guarantee"] for b in violated}
            problems.append("bound(s) violated: " + ", ".join(f"{b} ({g})" for b, g in kinds.items())
                            + ("; a violated (D) bound is a bug until proven otherwise"
                               if any(kind_of(g).per_run for g in kinds.values()) else ""))
        return problems
