"""MLflow as boundlab's tracking backend (:class:`pipeline.tracking.backend.Backend`: this module is the backend,
its functions and :data:`job_run`). The only module of the package that logs to MLflow.

Every call goes through an explicit ``MlflowClient`` and run id (no fluent active-run state), so
jobs that share a process (basic launcher) or a store (joblib workers) never collide. The database,
the experiment and a sweep's parent run are created once, before jobs start: parallel workers that
open a fresh SQLite store together race on MLflow's schema migration.

Credentials never reach the store or a message: every param, tag and error text logged here goes through
:func:`pipeline.tracking.secrets.redact`. A store found down, locked, refusing or failing is one
:class:`pipeline.tracking.down.StoreDown` (every client call is guarded: :mod:`pipeline.tracking.clients`);
runs it could not end are left to the same command run again, which ends them (:func:`resume_parent`).
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.sweep import context as sweep
from pipeline.paths import project_root
import pipeline.tracking.clients as clients
import pipeline.tracking.down as down
from pipeline.tracking.backend import OPEN_RUNS
from pipeline.tracking.health import check_store as check_store  # the backend's check of a store: MLflow's own
from pipeline.tracking.down import StoreDown, ensure_up, is_connection_error, known_down, mark_down, recheck
from pipeline.tracking.parents import read_parent_marker
from pipeline.tracking.secrets import redact

# per-run statistics logged as metrics when the run has them (certificates, constants of the bounds)
STAT_METRICS = ("R", "gamma_lo", "gamma_hi", "T", "lam", "c", "dual_gap", "f_star_lo", "f_star_hi", "H", "best_expert")

_EXPERIMENTS: dict[tuple[str, str], str] = {}  # (uri, name) -> id, for the jobs that share a process

# The experiment tag MLflow 3's UI reads for an experiment's kind (the web app's ``useExperimentKind``;
# MLflow's own GenAI demo sets it to "genai_development"): "custom_model_development" is its "Machine
# learning" kind, whose experiment page opens on the runs rather than the GenAI traces overview. MLflow UIs
# that choose the view per browser instead (3.17: the "GenAI / Model training" switch, remembered in the
# browser's localStorage "mlflow.workflowType", default GenAI) do not read it: `mlflow ui --app-name boundlab`
# (pipeline/dashboard.py) sets that choice for a fresh browser; docs/mlflow.md says so.
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"


def experiment_id(uri: str, name: str) -> str:
    """The id of experiment ``name``, created if missing (artifacts next to a SQLite database), tagged as
    a model-training experiment (:data:`EXPERIMENT_KIND_TAG`; an existing one only if it has no kind)."""
    if (uri, name) in _EXPERIMENTS:
        return _EXPERIMENTS[uri, name]
    client = clients._client(uri)
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        if EXPERIMENT_KIND_TAG not in exp.tags:  # a user's own choice of kind is kept
            _set_kind(client, exp.experiment_id)
        _EXPERIMENTS[uri, name] = exp.experiment_id
        return exp.experiment_id
    location = None
    if uri.startswith("sqlite:///"):
        location = (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve().as_uri()
    try:
        created = client.create_experiment(name, artifact_location=location, tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
    except StoreDown:
        raise
    except Exception:  # created meanwhile by another process
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        created = exp.experiment_id
    _EXPERIMENTS[uri, name] = created
    return created


def _set_kind(client: Any, exp_id: str) -> None:
    """Tag an existing experiment as model training; a store that refuses (a server's permissions) costs
    only the UI's default view, never the sweep."""
    import logging

    try:
        client.set_experiment_tag(exp_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    except Exception as e:
        if isinstance(e, StoreDown) or is_connection_error(e):
            raise
        logging.getLogger("boundlab").debug("experiment %s: %s not set (%s: %s)", exp_id, EXPERIMENT_KIND_TAG,
                                            type(e).__name__, redact(str(e)))


@functools.cache
def _pipeline_outputs(root: Path) -> list[str]:
    """The paths ``dvc.yaml``'s stages write (outs, metrics, plots): what ``dvc repro`` itself removes and
    rewrites while the stages run (a git-tracked metrics file such as report/claims.json is deleted before its
    stage runs), so never a sign that what the runs compute from was changed."""
    import yaml

    try:
        stages = (yaml.safe_load((root / "dvc.yaml").read_text()) or {}).get("stages", {})
    except (OSError, yaml.YAMLError, AttributeError):
        return []
    paths = []
    for stage in stages.values() if isinstance(stages, dict) else ():
        for kind in ("outs", "metrics", "plots"):
            for entry in (stage or {}).get(kind) or []:
                paths.extend([entry] if isinstance(entry, str) else list(entry) if isinstance(entry, dict) else [])
    return [p for p in paths if isinstance(p, str) and "${" not in p]


COMMIT_SECONDS = 30.0  # how long a process trusts the commit it last read (:func:`git_commit`)
_commit: tuple[float, str] | None = None  # (when it was read: time.monotonic(), the commit)


def git_commit() -> str:
    """:func:`_git_commit`, read at most once every :data:`COMMIT_SECONDS` per process: a sweep's packs open a run
    each (hundreds a minute, two git commands each, ~4 ms), and the code a process runs is the code it imported."""
    global _commit
    now = time.monotonic()
    if _commit is None or not 0 <= now - _commit[0] <= COMMIT_SECONDS:
        _commit = (now, _git_commit())
    return _commit[1]


def _git_commit() -> str:
    """The commit of the project checkout, with '+dirty' when it has uncommitted changes to what the runs
    compute from. ``dvc.lock`` and the pipeline's own outputs are left out (:func:`_pipeline_outputs`):
    ``dvc repro`` itself rewrites them while the stages run, so every run of the main job would otherwise call
    its own commit dirty."""
    root = project_root()
    excluded = [f":(exclude){p}" for p in ("dvc.lock", *_pipeline_outputs(root))]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *excluded],
                               cwd=root, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


git_commit.__wrapped__ = _git_commit  # type: ignore[attr-defined]  # uncached (tests whose checkout changes)


def _param(value: Any) -> str:
    """A param's value as the store keeps it: redacted (a URI's password never lands there), at most
    MLflow's 6000 characters."""
    return redact(str(value))[:6000]


def _tags(tags: Mapping[str, Any]) -> dict[str, str]:
    """Tag values as the store keeps them: redacted."""
    return {k: redact(str(v)) for k, v in tags.items()}


def _log(client: Any, run_id: str, params: Mapping[str, Any] = {}, metrics: Iterable[tuple[str, float, int]] = (),
         tags: Mapping[str, str] = {}) -> None:
    """Log ``params``, ``metrics`` and ``tags`` in as few calls as MLflow allows; params and tags redacted."""
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    p = [Param(k, _param(v)) for k, v in params.items()]
    m = [Metric(k, float(v), now, int(step)) for k, v, step in metrics]
    t = [RunTag(k, v) for k, v in _tags(tags).items()]
    # as few calls as MLflow's limits allow (per call: 100 params, 100 tags, 1000 entities): each is a
    # transaction, and a small job's logging is most of its cost
    while p or m or t:
        bp, p = p[:100], p[100:]
        bt, t = t[:100], t[100:]
        room = 1000 - len(bp) - len(bt)
        bm, m = m[:room], m[room:]
        client.log_batch(run_id, metrics=bm, params=bp, tags=bt)


def start_parent(uri: str, experiment: str, name: str, question: str, sweep_id: str, tags: Mapping[str, str],
                 params: Mapping[str, str] = {}) -> str:
    """Create the sweep's parent run (with the client API: safe when jobs share the process)."""
    recheck(uri)
    client = clients._client(uri)
    run = client.create_run(
        experiment_id(uri, experiment),
        run_name=redact(name),
        tags=_tags({"mlflow.note.content": question, "boundlab.sweep_id": sweep_id, "boundlab.git_commit": git_commit(),
                    **tags}),
    )
    if params:
        _log(client, run.info.run_id, params=params)
    return run.info.run_id


def resume_parent(uri: str, sweep_dir: Path, params: Mapping[str, str] | None = None) -> tuple[str, str, int] | None:
    """Reopen the parent run recorded in ``sweep_dir`` by an earlier start of the same sweep.

    Its children still RUNNING were interrupted (the process died with them): they end KILLED.
    Returns (parent id, sweep id, runs marked KILLED), or None when there is no parent to resume.
    ``params``: the grid of the sweep about to run. A parent that recorded other params ran another
    grid in this directory: it is left as it was (MLflow params cannot be overwritten) and None is
    returned, with one log line, so that the caller starts a new parent.
    """
    import logging

    found = read_parent_marker(sweep_dir)
    if found is None:
        return None
    parent_id, sweep_id = found
    down._SWEEP_DIRS[redact(uri)] = sweep_dir  # a store found down from here on is recorded for the sweep's workers
    recheck(uri)
    client = clients._client(uri)
    try:
        parent = client.get_run(parent_id)
    except StoreDown:
        raise
    except Exception:  # noqa: BLE001 - another store, or the run was purged
        return None
    if parent.info.lifecycle_stage != "active":
        return None
    if params is not None:
        wanted = {str(k): _param(v) for k, v in params.items()}  # as _log records them
        if parent.data.params != wanted:
            changed = sorted(k for k in wanted.keys() | parent.data.params.keys()
                             if wanted.get(k) != parent.data.params.get(k))
            logging.getLogger("boundlab").warning(
                "sweep %s: reused with another grid (%s differ from parent run %s, left as it was); "
                "starting a new parent run", sweep_dir, ", ".join(changed), parent_id)
            return None
    stale = end_children(uri, parent_id, "interrupted: its process ended before the run did")
    client.update_run(parent_id, status="RUNNING")
    return parent_id, sweep_id, stale


ORPHANED = ("its sweep's process ended without ending it (killed, or the machine stopped); the finished jobs are "
            "kept: run the same command to resume")


def end_orphaned_parents(uri: str, experiment: str, own_dir: Path) -> list[str]:
    """End KILLED the parent runs of ``experiment`` still RUNNING whose sweep is over: its directory (the
    ``boundlab.sweep_dir`` tag) is on this machine and no live process holds its lock (a sweep holds it
    while it runs, and the kernel drops it when the process dies, however it dies: a ``SIGKILL``, a
    ``seeds=auto`` round killed and rerun with another grid, a power cut). Their children still RUNNING end
    KILLED too. A parent whose directory cannot be looked at here (another machine's, removed) is left as it
    is; so is ``own_dir``'s (the sweep starting: :func:`resume_parent` reopens it). Returns the ended ids."""
    from pipeline.job import locks

    if _left_to_rerun(uri):
        return []
    client = clients._client(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    running = client.search_runs([exp.experiment_id], max_results=10_000, filter_string=(
        "attributes.status = 'RUNNING' and tags.`boundlab.sweep_dir` LIKE '%'"))
    own = os.path.realpath(own_dir)
    ended = []
    for run in running:
        tags = run.data.tags
        where = tags.get("boundlab.sweep_dir")
        if not where or "mlflow.parentRunId" in tags or os.path.realpath(where) == own:
            continue
        if locks.is_held(Path(where)) is not False:  # running, or not to be told from here
            continue
        end_children(uri, run.info.run_id, ORPHANED)
        client.set_tag(run.info.run_id, "boundlab.error", ORPHANED)
        client.set_terminated(run.info.run_id, status="KILLED")
        ended.append(run.info.run_id)
    return ended


def end_children(uri: str, parent_id: str, reason: str, status: str = "KILLED") -> int:
    """End the parent's child runs still RUNNING as KILLED (or ``status``) with ``reason`` (their processes
    are gone: a stopped sweep's workers, or an earlier start of the sweep). Returns how many. A store known
    down (locked, refusing) is not called: nothing is ended, the next run of the command ends them."""
    if _left_to_rerun(uri):
        return 0
    client = clients._client(uri)
    parent = client.get_run(parent_id)
    stale = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and attributes.status = 'RUNNING'",
        max_results=10_000,
    )
    for run in stale:
        client.set_tag(run.info.run_id, "boundlab.error", redact(reason))
        client.set_terminated(run.info.run_id, status=status)
    return len(stale)


def _left_to_rerun(uri: str) -> bool:
    """Whether this process knows the store ``uri`` down (locked, refusing, failing): the runs an ending sweep
    would end are then left RUNNING, said by the sweep's one line, and the same command run again ends them
    (:func:`resume_parent`)."""
    return redact(uri) in down._DOWN and known_down(uri) is not None


def is_finished(uri: str, run_id: str) -> bool:
    """Whether ``run_id`` is a live (not deleted) FINISHED run of the store ``uri``."""
    try:
        run = clients._client(uri).get_run(run_id)
    except Exception:  # noqa: BLE001 - not in this store, or purged
        return False
    return run.info.status == "FINISHED" and run.info.lifecycle_stage == "active"


def end_run(uri: str, run_id: str, status: str) -> None:
    """End run ``run_id`` ``status``; on a store known down (locked, refusing) nothing is called: the sweep's
    one line already says so, and the same command run again ends it (:func:`resume_parent`)."""
    if _left_to_rerun(uri):
        return
    clients._client(uri).set_terminated(run_id, status=status)


def finish_parent(uri: str, run_id: str, artifacts: Iterable[Path], metrics: Mapping[str, float], failed: bool,
                  tags: Mapping[str, str] = {}) -> None:
    """End a parent run: its metrics (non-finite values left out), tags (e.g. each bound's verdict), files.
    Its children still RUNNING are ended KILLED first: their jobs are over (a job whose store failed while
    it ended its run leaves it so). A store this process found down is looked at again first (:func:`recheck`)."""
    recheck(uri)
    end_children(uri, run_id, "its job ended without ending its run (the tracking store failed meanwhile)")
    client = clients._client(uri)
    _log(client, run_id, metrics=[(k, v, 0) for k, v in metrics.items() if math.isfinite(v)], tags=tags)
    for path in artifacts:
        if Path(path).is_dir():  # a directory keeps its name and layout among the artifacts
            client.log_artifacts(run_id, str(path), Path(path).name)
        else:
            client.log_artifact(run_id, str(path))
    client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")


VERDICT_TAG = "verdict.{bound}"  # a parent's tag per bound: short enough for the run page to show whole
VERDICT_TEXT = 100  # characters of a verdict tag's value; the whole sentence is in the parent's metrics.json


def verdict_tags(stats: Mapping[str, Any]) -> dict[str, str]:
    """The parent run's tag per bound of a sweep summary (:func:`pipeline.sweep.callbacks.summary`):
    ``verdict.BOUND`` = "VERDICT: EVIDENCE", cut at :data:`VERDICT_TEXT` characters with "…" (the whole
    evidence is the ``evidence`` of BOUND in the ``metrics.json`` artifact).

    >>> verdict_tags({"runs": 2, "novikoff": {"verdict": "holds", "evidence": "0 violations in 2 runs"}})
    {'verdict.novikoff': 'holds: 0 violations in 2 runs'}
    >>> len(verdict_tags({"b": {"verdict": "holds", "evidence": "x" * 500}})["verdict.b"]) == VERDICT_TEXT
    True
    """
    out = {}
    for bound, s in stats.items():
        if isinstance(s, dict) and "verdict" in s:
            text = " ".join(f"{s['verdict']}: {s.get('evidence', '')}".split()).rstrip(": ")
            out[VERDICT_TAG.format(bound=bound)] = text if len(text) <= VERDICT_TEXT else text[:VERDICT_TEXT - 1] + "…"
    return out


REUSED_FROM = "boundlab.reused_from"  # on a sweep's light child: the run whose result the job reused
# the tags of a reused run a light child carries over (the rest describe where and when that run was made)
_CARRIED_TAGS = ("boundlab.config_hash", "boundlab.data_hash", "boundlab.holds", "boundlab.vacuous",
                 "boundlab.git_commit", "boundlab.output_dir")


CHILDREN_PAGE = 200  # runs per page of a search for a parent's children (:func:`_children`)


def _children(client: Any, exp_id: str, parent_id: str, light_only: bool = False) -> list[tuple[str, str | None]]:
    """(run id, the run it links or None) of each live child run of ``parent_id``, in MLflow's search order
    (a light child's ``boundlab.reused_from`` tag names the run it links: :func:`link_reused`); with
    ``light_only``, of its light children only (the store finds them by their tag).

    Read a page of :data:`CHILDREN_PAGE` runs at a time, each page's runs dropped before the next: a search
    returns every run whole (its params, metrics and tags), ~0.1 MB each in memory, and a sweep's parent has
    one child per job, so one search of them all made the end of a sweep of 3,000 jobs ~300 MB larger
    (docs/performance.md). What is kept is two ids a child."""
    query = f"tags.mlflow.parentRunId = '{parent_id}'" + (f" and tags.`{REUSED_FROM}` LIKE '%'" if light_only else "")
    out: list[tuple[str, str | None]] = []
    token = None
    while True:
        page = client.search_runs([exp_id], filter_string=query, max_results=CHILDREN_PAGE, page_token=token)
        out += [(c.info.run_id, c.data.tags.get(REUSED_FROM)) for c in page]
        token = page.token
        if not token or not page:
            return out


def link_reused(uri: str, parent_id: str, run_ids: Iterable[str]) -> dict[str, str]:
    """Make the sweep's parent a complete record of its jobs: one light child run under ``parent_id`` per
    run in ``run_ids`` (the finished runs whose results the sweep's jobs reused from the job store).

    A light child has the reused run's name, params, latest metrics and key tags (config and data hash,
    whether the (D) bounds held, the commit that computed it), ``boundlab.reused_from`` = that run's id,
    ``boundlab.reused_artifacts`` = its artifact URI (nothing is copied) and a description linking it; it
    is FINISHED with the reused run's start and end times. Idempotent: a child already linking a run is
    kept, and a light child linking a run no longer in ``run_ids`` (its job was rerun) is soft-deleted. A
    reused run that is already a child of ``parent_id`` (the same sweep, resumed) needs no link.
    A reused run the store no longer has is skipped. Returns {reused run id: light child id}."""
    from mlflow.entities import Metric, Param

    recheck(uri)  # the sweep's end: a store found down during the jobs is looked at again first
    client = clients._client(uri)
    parent = client.get_run(parent_id)
    exp_id = parent.info.experiment_id
    reused = list(dict.fromkeys(run_ids))
    # With no run to link, only the light children can need a change (a rerun let them go): the parent's own
    # children, one a job, are not read (50 pages of whole runs, ~24 s at the end of a sweep of 10,000 jobs).
    children = _children(client, exp_id, parent_id, light_only=not reused)
    own = {run_id for run_id, source in children if source is None}  # already this parent's own children
    wanted = [r for r in reused if r not in own]  # (a rerun of the same sweep reusing its own job)
    linked: dict[str, str] = {}
    for run_id, source in children:
        if source is None:
            continue
        if source in wanted and source not in linked:
            linked[source] = run_id
            continue
        client.set_tag(run_id, "boundlab.superseded", "its job no longer reuses this run (or a duplicate link)")
        client.delete_run(run_id)
    sweep_id = parent.data.tags.get("boundlab.sweep_id", "")
    for source in wanted:
        if source in linked:
            continue
        try:
            run = client.get_run(source)
        except Exception as e:  # purged meanwhile: nothing to link
            if isinstance(e, StoreDown) or is_connection_error(e):
                raise
            continue
        origin = client.get_experiment(run.info.experiment_id).name if run.info.experiment_id != exp_id else None
        note = (f"Reused, not rerun: this job's result is run {source}"
                + (f" of experiment {origin}" if origin else "")
                + f" ({run.info.run_name}), whose artifacts are at {run.info.artifact_uri}.")
        tags = {k: v for k, v in run.data.tags.items() if k in _CARRIED_TAGS}
        tags |= {"mlflow.parentRunId": parent_id, "boundlab.sweep_id": sweep_id, REUSED_FROM: source,
                 "boundlab.reused_artifacts": run.info.artifact_uri or "", "mlflow.note.content": note}
        child = client.create_run(exp_id, start_time=run.info.start_time, run_name=run.info.run_name, tags=_tags(tags))
        metrics = [Metric(m.key, m.value, m.timestamp, m.step) for m in getattr(run.data, "_metric_objs", ())]
        if not metrics:  # an MLflow without the metric objects: the latest values, at step 0
            metrics = [Metric(k, v, run.info.end_time or run.info.start_time, 0) for k, v in run.data.metrics.items()]
        params = [Param(k, v) for k, v in run.data.params.items()]  # as the reused run stored them: redacted
        while params or metrics:
            bp, params = params[:100], params[100:]
            bm, metrics = metrics[:1000 - len(bp)], metrics[1000 - len(bp):]
            client.log_batch(child.info.run_id, metrics=bm, params=bp, tags=[])
        client.set_terminated(child.info.run_id, status="FINISHED", end_time=run.info.end_time)
        linked[source] = child.info.run_id
    return linked


HISTORY_POINTS = 64  # per quantity, in a run's MLflow metric history


def history(curve: Any, points: int = HISTORY_POINTS) -> list[tuple[str, float, int]]:
    """A run's curves as MLflow metric history: (quantity, value, step), at most ``points`` per quantity.

    Each point is a row the store inserts (~0.1 ms each: most of a small job's tracking time), and a
    chart in the MLflow UI shows no more. The kept points are spread evenly over the curve's own points
    (which are spaced on a log scale of t), first and last always included; the whole curve is the
    run's ``curve.parquet`` artifact, which the report and the figures read.
    """
    import numpy as np

    out: list[tuple[str, float, int]] = []
    for quantity, part in curve.groupby("quantity", sort=False):
        t, v = part["t"].to_numpy(), part["empirical"].to_numpy()
        keep = np.unique(np.linspace(0, len(t) - 1, min(points, len(t))).round().astype(int))
        out += [(str(quantity), float(v[i]), int(t[i])) for i in keep]
    return out


class JobRun:
    """One job's MLflow run: opened before the work, ended FINISHED, FAILED or KILLED."""

    def __init__(self, uri: str, experiment: str, name: str, parent_id: str | None, tags: Mapping[str, str],
                 supersede: bool = False) -> None:
        """Open the job's run, then keep one live run per job (per config under the sweep's parent).

        Earlier runs of the same config under the same parent that ended FAILED or KILLED are always
        soft-deleted (restorable in the UI): the rerun replaces them whether or not the job's directory
        remembers them. ``supersede`` (a rerun whose earlier result is outdated or forced) soft-deletes
        every earlier run of the config, FINISHED ones too. The new run is opened first, so a store
        that fails here never leaves the job without a live run.
        """
        self.uri = uri
        ensure_up(uri)  # known down in this process: StoreDown at once, not a retried request
        with _watch(uri):
            self.client = clients._client(uri)
            exp_id = experiment_id(uri, experiment)
            all_tags = _tags({"boundlab.git_commit": git_commit(), **tags})
            if parent_id:
                all_tags["mlflow.parentRunId"] = parent_id
            run = self.client.create_run(exp_id, run_name=redact(name), tags=all_tags)
            self.run_id = run.info.run_id
            OPEN_RUNS[self.run_id] = self
            context = sweep.current()
            new_parent = context.parent_new and context.parent_run_id == parent_id  # no earlier children to look for
            if parent_id and "boundlab.config_hash" in all_tags and not (new_parent and not supersede):
                self._supersede(exp_id, parent_id, all_tags["boundlab.config_hash"], everything=supersede)

    def _supersede(self, exp_id: str, parent_id: str, key: str, everything: bool) -> None:
        """Soft-delete the earlier live runs of config ``key`` under ``parent_id``: the FAILED and KILLED
        ones, or (``everything``) all of them but this one."""
        earlier = self.client.search_runs(  # live runs only (MLflow's default view)
            [exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and tags.`boundlab.config_hash` = '{key}'",
            max_results=10_000,
        )
        for run in earlier:
            if run.info.run_id == self.run_id or not (everything or run.info.status in ("FAILED", "KILLED")):
                continue
            self.client.set_tag(run.info.run_id, "boundlab.superseded",
                                f"rerun in the same sweep as run {self.run_id} (this one ended {run.info.status})")
            self.client.delete_run(run.info.run_id)

    def finish(self, params: Mapping[str, Any], table: Any, curve: Any, artifacts: Iterable[Path]) -> None:
        """Log params, the bound comparison (empirical, theoretical, ratio per bound), curves, artifacts."""
        metrics: list[tuple[str, float, int]] = []
        for row in table.itertuples():
            part = getattr(row, "part", None)
            key = f"{row.bound}/{part}" if isinstance(part, str) and part else row.bound  # one-vs-all: per class
            metrics += [(f"{key}/empirical", row.empirical, 0)]
            if row.applicable:
                metrics += [(f"{key}/theoretical", row.theoretical, 0), (f"{key}/ratio", row.ratio, 0),
                            (f"{key}/trivial", row.trivial, 0), (f"{key}/informative", float(row.informative), 0),
                            (f"{key}/max_ratio_over_t", row.max_ratio_over_t, 0)]
        first = table.iloc[0]
        metrics += [(k, float(first[k]), 0) for k in STAT_METRICS if k in first and first[k] is not None]
        metrics += history(curve)
        from pipeline.judging.guarantees import PER_RUN

        holds = table.loc[table["guarantee"].isin(PER_RUN), "holds"].dropna()
        applicable = table[table["applicable"].astype(bool)]
        tags = {"boundlab.holds": str(bool(holds.all())) if len(holds) else "n/a",
                "boundlab.data_hash": str(first["data_hash"]),
                "boundlab.vacuous": ",".join(sorted(set(applicable.loc[~applicable["informative"].astype(bool), "bound"])))
                or "none"}
        if "tracking.uri" in params:  # the store this run is in, not the config's null (redacted by _log)
            params = {**params, "tracking.uri": self.uri}
        with _watch(self.uri):
            _log(self.client, self.run_id, params=params, metrics=metrics, tags=tags)
            for path in artifacts:
                self.client.log_artifact(self.run_id, str(path))
            self.client.set_terminated(self.run_id, status="FINISHED")
        OPEN_RUNS.pop(self.run_id, None)

    def finish_pack(self, params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: Iterable[Path],
                    failed: bool = False) -> None:
        """End a pack's child run (a packed sweep, ``pipeline.sweep.pack``): its params (index, size, the ranges of its
        swept keys), its aggregate metrics (non-finite values left out) and its results parts as artifacts
        (under ``results/``); FAILED with a ``boundlab.error`` tag when a member failed."""
        tags = {"boundlab.error": "one or more of its runs failed (see the pack's part markers)"} if failed else {}
        with _watch(self.uri):
            _log(self.client, self.run_id, params=params,
                 metrics=[(k, v, 0) for k, v in metrics.items() if math.isfinite(v)], tags=tags)
            for path in artifacts:
                self.client.log_artifact(self.run_id, str(path), "results")
            self.client.set_terminated(self.run_id, status="FAILED" if failed else "FINISHED")
        OPEN_RUNS.pop(self.run_id, None)

    def fail(self, error: BaseException) -> None:
        """End the run FAILED (KILLED for an interrupt) with the error, redacted, as its ``boundlab.error``
        tag. A store known down is not called: :class:`StoreDown` is raised at once, or, for an interrupt,
        nothing (the interrupt must go on); the run is left to the rerun, which ends it KILLED."""
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
        if isinstance(error, KeyboardInterrupt) and known_down(self.uri) is not None:
            return
        ensure_up(self.uri)
        with _watch(self.uri):
            self.client.set_tag(self.run_id, "boundlab.error", redact(f"{type(error).__name__}: {error}")[:5000])
            self.client.set_terminated(self.run_id, status=status)
        OPEN_RUNS.pop(self.run_id, None)


class _watch:  # noqa: N801 - a context manager read as a verb (with _watch(...))
    """Around a job's calls to the store: a connection failure marks the store down for this process
    (:func:`mark_down` without a sweep directory), so that the process's next job fails at once."""

    def __init__(self, uri: str) -> None:
        self.uri = uri

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> bool:
        if error is not None and not isinstance(error, StoreDown) and is_connection_error(error):
            mark_down(self.uri, None, error)
        return False



def read_parent(uri: str, run_id: str) -> dict[str, Any]:
    """A finished sweep's parent run as the API reads it (``runs:/ID``): its status, tags, params, experiment's name
    and the files logged at its top level. A SQLite store that does not exist is a FileNotFoundError (reading one
    never creates an empty store)."""
    db = clients._sqlite_path(uri)
    if db is not None and not Path(db).exists():
        raise FileNotFoundError(f"no MLflow store at {redact(uri)}")
    client = clients._client(uri)
    run = client.get_run(run_id)
    return {"status": run.info.status, "tags": dict(run.data.tags), "params": dict(run.data.params),
            "experiment": client.get_experiment(run.info.experiment_id).name,
            "files": sorted(a.path for a in client.list_artifacts(run_id))}


def download(uri: str, run_id: str, names: Iterable[str], into: Path) -> None:
    """The run's files ``names`` (top level) into the directory ``into``."""
    client = clients._client(uri)
    for name in names:
        client.download_artifacts(run_id, name, str(into))


job_run = JobRun  # the Backend's name for opening a job's run (pipeline.tracking.backend)
