"""MLflow tracking: the only module that imports mlflow.

Every call goes through an explicit ``MlflowClient`` and run id (no fluent active-run state), so
jobs that share a process (basic launcher) or a store (joblib workers) never collide. The database,
the experiment and a sweep's parent run are created once, before jobs start (ECOSYSTEM.md: parallel
workers on a fresh SQLite store race on schema migration).
"""

from __future__ import annotations

import functools
import math
import os
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.paths import project_root

PARENT_ENV = "BOUNDLAB_PARENT_RUN_ID"
SWEEP_ENV = "BOUNDLAB_SWEEP_ID"
PARENT_FILE = ".boundlab_parent"  # in the sweep directory: reaches jobs where the environment does not


# per-run statistics logged as metrics when the run has them (certificates, constants of the bounds)
STAT_METRICS = ("R", "gamma_lo", "gamma_hi", "T", "lam", "c", "dual_gap", "f_star_lo", "f_star_hi", "H", "best_expert")

def tracking_uri(configured: str | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else ``configured``, else a SQLite store in the project root."""
    return os.environ.get("MLFLOW_TRACKING_URI") or configured or f"sqlite:///{project_root() / 'mlflow.db'}"


def check_store(uri: str) -> str | None:
    """None if the store at ``uri`` can take runs now; otherwise why not. Cheap: no mlflow import."""
    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
        if not path.parent.is_dir():
            return f"its directory {path.parent} does not exist"
        if not path.exists():
            return None if os.access(path.parent, os.W_OK) else f"its directory {path.parent} is not writable"
        try:
            conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=2.0)
            try:
                conn.execute("BEGIN IMMEDIATE")  # takes the write lock, as a run would
                conn.rollback()
            finally:
                conn.close()
        except sqlite3.Error as e:
            return f"the database cannot be written ({e})"
    elif uri.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=5.0):
                pass
        except (urllib.error.URLError, OSError) as e:
            return f"the server does not answer ({getattr(e, 'reason', e)})"
    return None


def sweep_context(sweep_dir: Path) -> tuple[str | None, str]:
    """The parent run id and sweep id of the running sweep, from the environment or the sweep dir."""
    parent, sweep = os.environ.get(PARENT_ENV), os.environ.get(SWEEP_ENV, "")
    marker = sweep_dir / PARENT_FILE
    if not parent and marker.exists():
        parent, sweep = marker.read_text().split()
    return parent, sweep


def announce_sweep(sweep_dir: Path, parent_id: str, sweep_id: str) -> None:
    """Make the parent run id known to the sweep's jobs, whichever process they run in."""
    os.environ[PARENT_ENV], os.environ[SWEEP_ENV] = parent_id, sweep_id
    sweep_dir.mkdir(parents=True, exist_ok=True)
    (sweep_dir / PARENT_FILE).write_text(f"{parent_id} {sweep_id}\n")


def _client(uri: str):  # noqa: ANN202
    import mlflow  # lazy: importing mlflow costs ~1.4 s

    return mlflow.MlflowClient(tracking_uri=uri)


_EXPERIMENTS: dict[tuple[str, str], str] = {}  # (uri, name) -> id, for the jobs that share a process


def experiment_id(uri: str, name: str) -> str:
    """The id of experiment ``name``, created if missing (artifacts next to a SQLite database)."""
    if (uri, name) in _EXPERIMENTS:
        return _EXPERIMENTS[uri, name]
    client = _client(uri)
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        _EXPERIMENTS[uri, name] = exp.experiment_id
        return exp.experiment_id
    location = None
    if uri.startswith("sqlite:///"):
        location = (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve().as_uri()
    try:
        return client.create_experiment(name, artifact_location=location)
    except Exception:  # created meanwhile by another process
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


@functools.cache
def git_commit() -> str:
    """The commit of the project checkout, with '+dirty' when it has uncommitted changes."""
    root = project_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _log(client: Any, run_id: str, params: Mapping[str, Any] = {}, metrics: Iterable[tuple[str, float, int]] = (), tags: Mapping[str, str] = {}) -> None:
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    p = [Param(k, str(v)[:6000]) for k, v in params.items()]
    m = [Metric(k, float(v), now, int(step)) for k, v, step in metrics]
    t = [RunTag(k, str(v)) for k, v in tags.items()]
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
    client = _client(uri)
    run = client.create_run(
        experiment_id(uri, experiment),
        run_name=name,
        tags={"mlflow.note.content": question, "boundlab.sweep_id": sweep_id, "boundlab.git_commit": git_commit(), **tags},
    )
    if params:
        _log(client, run.info.run_id, params=params)
    return run.info.run_id


def resume_parent(uri: str, sweep_dir: Path) -> tuple[str, str, int] | None:
    """Reopen the parent run recorded in ``sweep_dir`` by an earlier start of the same sweep.

    Its children still RUNNING were interrupted (the process died with them): they end KILLED.
    Returns (parent id, sweep id, runs marked KILLED), or None when there is no parent to resume.
    """
    marker = sweep_dir / PARENT_FILE
    if not marker.exists():
        return None
    parent_id, sweep_id = marker.read_text().split()
    client = _client(uri)
    try:
        parent = client.get_run(parent_id)
    except Exception:  # another store, or the run was purged
        return None
    if parent.info.lifecycle_stage != "active":
        return None
    stale = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and attributes.status = 'RUNNING'",
        max_results=10_000,
    )
    for run in stale:
        client.set_tag(run.info.run_id, "boundlab.error", "interrupted: its process ended before the run did")
        client.set_terminated(run.info.run_id, status="KILLED")
    client.update_run(parent_id, status="RUNNING")
    return parent_id, sweep_id, len(stale)


def end_run(uri: str, run_id: str, status: str) -> None:
    _client(uri).set_terminated(run_id, status=status)


def finish_parent(uri: str, run_id: str, artifacts: Iterable[Path], metrics: Mapping[str, float], failed: bool,
                  tags: Mapping[str, str] = {}) -> None:
    """End a parent run: its metrics (non-finite values left out), tags (e.g. each bound's verdict), files."""
    client = _client(uri)
    _log(client, run_id, metrics=[(k, v, 0) for k, v in metrics.items() if math.isfinite(v)], tags=tags)
    for path in artifacts:
        client.log_artifact(run_id, str(path))
    client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")


class JobRun:
    """One job's MLflow run: opened before the work, ended FINISHED, FAILED or KILLED."""

    def __init__(self, uri: str, experiment: str, name: str, parent_id: str | None, tags: Mapping[str, str],
                 supersede: bool = False) -> None:
        """``supersede``: a rerun in a sweep; earlier runs of the same config under the same parent are
        soft-deleted (restorable in the UI) so the sweep keeps one live run per config."""
        self.client = _client(uri)
        exp_id = experiment_id(uri, experiment)
        all_tags = {"boundlab.git_commit": git_commit(), **tags}
        if parent_id:
            all_tags["mlflow.parentRunId"] = parent_id
            if supersede:
                self._supersede(exp_id, parent_id, all_tags["boundlab.config_hash"])
        run = self.client.create_run(exp_id, run_name=name, tags=all_tags)
        self.run_id = run.info.run_id

    def _supersede(self, exp_id: str, parent_id: str, key: str) -> None:
        earlier = self.client.search_runs(
            [exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and tags.`boundlab.config_hash` = '{key}'",
            max_results=10_000,
        )
        for run in earlier:
            self.client.set_tag(run.info.run_id, "boundlab.superseded", "rerun in the same sweep")
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
        metrics += [(q, v, t) for q, t, v in curve[["quantity", "t", "empirical"]].itertuples(index=False)]
        holds = table.loc[table["guarantee"] == "D", "holds"].dropna()
        applicable = table[table["applicable"].astype(bool)]
        tags = {"boundlab.holds": str(bool(holds.all())) if len(holds) else "n/a",
                "boundlab.data_hash": str(first["data_hash"]),
                "boundlab.vacuous": ",".join(sorted(set(applicable.loc[~applicable["informative"].astype(bool), "bound"]))) or "none"}
        _log(self.client, self.run_id, params=params, metrics=metrics, tags=tags)
        for path in artifacts:
            self.client.log_artifact(self.run_id, str(path))
        self.client.set_terminated(self.run_id, status="FINISHED")

    def fail(self, error: BaseException) -> None:
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
        self.client.set_tag(self.run_id, "boundlab.error", f"{type(error).__name__}: {error}"[:5000])
        self.client.set_terminated(self.run_id, status=status)
