"""MLflow tracking: the only module that imports mlflow.

Every call goes through an explicit ``MlflowClient`` and run id (no fluent active-run state), so
jobs that share a process (basic launcher) or a store (joblib workers) never collide. The database,
the experiment and a sweep's parent run are created once, before jobs start: parallel workers that
open a fresh SQLite store together race on MLflow's schema migration.
"""

from __future__ import annotations

import fcntl
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

from pipeline import sweep
from pipeline.paths import project_root

PARENT_FILE = ".boundlab_parent"  # in the sweep directory: reaches jobs where the environment does not


# per-run statistics logged as metrics when the run has them (certificates, constants of the bounds)
STAT_METRICS = ("R", "gamma_lo", "gamma_hi", "T", "lam", "c", "dual_gap", "f_star_lo", "f_star_hi", "H", "best_expert")

def tracking_uri(configured: str | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else ``configured``, else a SQLite store in the project root."""
    return os.environ.get("MLFLOW_TRACKING_URI") or configured or f"sqlite:///{project_root() / 'mlflow.db'}"


def check_store(uri: str) -> str | None:
    """None if the store at ``uri`` can take runs now; otherwise why not (one clause). Cheap: no mlflow import.

    File stores (``file:`` URIs and plain paths) are refused: MLflow 3 keeps them in maintenance mode and
    this project's parent/child runs are tested on database and server stores only.
    """
    from urllib.parse import urlsplit

    if uri.lower() in ("databricks", "databricks-uc", "uc"):  # MLflow's URIs that are not paths
        return None
    scheme = urlsplit(uri).scheme.lower() if "://" in uri or uri.lower().startswith("file:") else ""
    engine = scheme.split("+", 1)[0]
    if scheme in ("", "file"):  # MLflow reads a bare path as a file store
        return ("a file store: MLflow 3 deprecates file stores and boundlab refuses them; "
                "use a SQLite store, e.g. sqlite:////absolute/path/mlflow.db")
    if engine == "sqlite":
        return _check_sqlite(uri)
    if engine in ("postgresql", "mysql", "mssql"):  # MLflow's other SQLAlchemy engines
        return _check_driver(uri)
    if scheme in ("http", "https"):
        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=5.0):
                pass
        except (urllib.error.URLError, OSError) as e:
            return f"the server does not answer ({getattr(e, 'reason', e)})"
    return None


def _check_sqlite(uri: str) -> str | None:
    """A SQLite store: on disk (not in memory), in an existing directory, and writable now."""
    import tempfile

    rest = uri.split("://", 1)[1]
    raw, _, query = rest.partition("?")
    path_text = raw[1:] if raw.startswith("/") else raw  # sqlite:///rel.db -> rel.db, sqlite:////abs -> /abs
    if path_text in ("", ":memory:") or "mode=memory" in query or path_text.startswith("file::memory:"):
        return "an in-memory SQLite database: every run would be lost when the process ends"
    path = Path(path_text)
    if not path.parent.is_dir():
        return f"its directory {path.parent} does not exist"
    if not path.exists():
        try:  # a real write: permission bits alone do not tell (root, read-only mounts)
            with tempfile.TemporaryFile(dir=path.parent):
                pass
        except OSError as e:
            return f"its directory {path.parent} is not writable ({e.strerror or e})"
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=2.0, isolation_level=None)
        try:
            # take the write lock as a run would, then write for real (a read-only file, directory or mount
            # only fails on a write), and undo it
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("CREATE TABLE boundlab_write_probe (x)")
            conn.execute("INSERT INTO boundlab_write_probe VALUES (1)")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    except sqlite3.Error as e:
        return f"the database cannot be written ({e})"
    return None


def _check_driver(uri: str) -> str | None:
    """A SQLAlchemy database URI: its driver must be importable (MLflow would fail on the first run)."""
    try:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError, NoSuchModuleError

        url = make_url(uri)
        dialect = url.get_dialect()
    except ImportError:
        return "a database store, but SQLAlchemy is not installed"
    except (ArgumentError, NoSuchModuleError) as e:
        return f"not a database URI SQLAlchemy can read ({e})"
    try:
        dialect.import_dbapi()
    except ImportError as e:
        module = e.name or str(e)
        return (f"its database driver {module} ({url.get_backend_name()}+{url.get_driver_name()}) is not installed: "
                f"pip install it, or name an installed driver ({url.get_backend_name()}+DRIVER://...)")
    return None


def sweep_context(sweep_dir: Path) -> tuple[str | None, str]:
    """The parent run id and sweep id of the running sweep, from the sweep context or the sweep dir."""
    context = sweep.current()
    parent, sweep_id = context.parent_run_id, context.sweep_id
    if not parent:
        parent, sweep_id = read_parent_marker(sweep_dir) or (None, "")
    return parent, sweep_id


def announce_sweep(sweep_dir: Path, parent_id: str, sweep_id: str, new: bool = False) -> None:
    """Make the parent run id known to the sweep's jobs, whichever process they run in (``new``: this
    command created it, so it has no earlier children)."""
    sweep.update(parent_run_id=parent_id, sweep_id=sweep_id, parent_new=new)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    tmp = sweep_dir / f"{PARENT_FILE}.{os.getpid()}.tmp"  # a job reading the marker never sees half of it
    tmp.write_text(f"{parent_id} {sweep_id}\n")
    os.replace(tmp, sweep_dir / PARENT_FILE)


def read_parent_marker(sweep_dir: Path) -> tuple[str, str] | None:
    """(parent run id, sweep id) from the sweep directory's marker; None, with a warning, when it is
    missing, empty or garbled: such a marker means "no parent to resume", never a crash."""
    import logging

    marker = sweep_dir / PARENT_FILE
    if not marker.exists():
        return None
    try:
        fields = marker.read_text().split()
    except (OSError, UnicodeDecodeError) as e:
        fields, why = [], f"unreadable ({type(e).__name__})"
    else:
        why = "empty" if not fields else f"garbled ({len(fields)} field(s), expected a run id and a sweep id)"
    # an MLflow run id is 32 hex digits; anything else was not written by announce_sweep
    if len(fields) == 2 and len(fields[0]) == 32 and all(c in "0123456789abcdef" for c in fields[0]):
        return fields[0], fields[1]
    if len(fields) == 2:
        why = f"garbled (run id {fields[0][:40]!r} is not an MLflow run id)"
    logging.getLogger("boundlab").warning("sweep %s: parent-run marker %s is %s; no parent run to resume",
                                          sweep_dir, marker.name, why)
    return None


_CLIENTS: dict[str, Any] = {}  # uri -> client: a sweep's jobs in one process share one (and its engine)


def _client(uri: str):  # noqa: ANN202
    """The process's MLflow client of ``uri`` (one per store: opening one costs ~10 ms a job)."""
    if uri not in _CLIENTS:
        _CLIENTS[uri] = _open_client(uri)
    return _CLIENTS[uri]


def _open_client(uri: str):  # noqa: ANN202
    import mlflow  # lazy: importing mlflow costs ~1.4 s

    path = _sqlite_path(uri)
    if path is None:
        return mlflow.MlflowClient(tracking_uri=uri)
    # MLflow creates and migrates a new SQLite store's tables when a client first opens it, and two
    # processes doing so at once fail ("table experiments already exists", an alembic version mismatch):
    # two runs started together on a fresh store. The first to open it does it alone, under flock on the
    # database file (SQLite's own locks are fcntl byte ranges, independent of flock).
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return mlflow.MlflowClient(tracking_uri=uri)
    finally:
        os.close(fd)


def _sqlite_path(uri: str) -> str | None:
    """The file of a ``sqlite:///`` URI on disk (None for other stores and in-memory databases)."""
    if not uri.lower().startswith("sqlite"):
        return None
    raw = uri.split("://", 1)[1].partition("?")[0]
    path = raw[1:] if raw.startswith("/") else raw
    return path if path not in ("", ":memory:") and not path.startswith("file:") else None


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
    """The commit of the project checkout, with '+dirty' when it has uncommitted changes to what the runs
    compute from. ``dvc.lock`` is left out: ``dvc repro`` itself rewrites it while the stages run, so every
    run of the main job would otherwise call its own commit dirty."""
    root = project_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)dvc.lock"],
                               cwd=root, capture_output=True, text=True)
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
    client = _client(uri)
    try:
        parent = client.get_run(parent_id)
    except Exception:  # another store, or the run was purged
        return None
    if parent.info.lifecycle_stage != "active":
        return None
    if params is not None:
        wanted = {str(k): str(v)[:6000] for k, v in params.items()}  # as _log records them
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


def end_children(uri: str, parent_id: str, reason: str) -> int:
    """End the parent's child runs still RUNNING as KILLED with ``reason`` (their processes are gone: a
    stopped sweep's workers, or an earlier start of the sweep). Returns how many."""
    client = _client(uri)
    parent = client.get_run(parent_id)
    stale = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and attributes.status = 'RUNNING'",
        max_results=10_000,
    )
    for run in stale:
        client.set_tag(run.info.run_id, "boundlab.error", reason)
        client.set_terminated(run.info.run_id, status="KILLED")
    return len(stale)


def is_finished(uri: str, run_id: str) -> bool:
    """Whether ``run_id`` is a live (not deleted) FINISHED run of the store ``uri``."""
    try:
        run = _client(uri).get_run(run_id)
    except Exception:  # noqa: BLE001 - not in this store, or purged
        return False
    return run.info.status == "FINISHED" and run.info.lifecycle_stage == "active"


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
        self.client = _client(uri)
        exp_id = experiment_id(uri, experiment)
        all_tags = {"boundlab.git_commit": git_commit(), **tags}
        if parent_id:
            all_tags["mlflow.parentRunId"] = parent_id
        run = self.client.create_run(exp_id, run_name=name, tags=all_tags)
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
        holds = table.loc[table["guarantee"] == "D", "holds"].dropna()
        applicable = table[table["applicable"].astype(bool)]
        tags = {"boundlab.holds": str(bool(holds.all())) if len(holds) else "n/a",
                "boundlab.data_hash": str(first["data_hash"]),
                "boundlab.vacuous": ",".join(sorted(set(applicable.loc[~applicable["informative"].astype(bool), "bound"]))) or "none"}
        _log(self.client, self.run_id, params=params, metrics=metrics, tags=tags)
        for path in artifacts:
            self.client.log_artifact(self.run_id, str(path))
        self.client.set_terminated(self.run_id, status="FINISHED")
        OPEN_RUNS.pop(self.run_id, None)

    def fail(self, error: BaseException) -> None:
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
        self.client.set_tag(self.run_id, "boundlab.error", f"{type(error).__name__}: {error}"[:5000])
        self.client.set_terminated(self.run_id, status=status)
        OPEN_RUNS.pop(self.run_id, None)


OPEN_RUNS: dict[str, JobRun] = {}  # this process's job runs not ended yet (end_open_runs on a hard stop)


def end_open_runs(reason: str) -> None:
    """End this process's open job runs KILLED with ``reason``, from a thread other than the one running the
    job (which is stuck in a native call, or about to be stopped): a hard stop leaves no run RUNNING."""
    for run in list(OPEN_RUNS.values()):
        try:
            run.fail(KeyboardInterrupt(reason))
        except Exception:  # noqa: BLE001 - stopping matters more; a rerun marks it KILLED
            pass
