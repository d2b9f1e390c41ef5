"""Issue 50 (reliability, round four), classes 4, 5 and 7: what a run, the tracking store and the job store
do with their inputs and outputs.

4. A learner that writes into the data it is handed fails its run with one line naming it; nothing of the
   changed data is kept (pipeline.job.run: the dataset's arrays hashed before and after the learner).
5. A tracking store that is locked by another process or refuses the credentials mid-sweep gets what an outage
   gets: one line naming the store and what happened, how to recover, no SQL and no traceback, finished runs
   kept, and the same command completing what is missing (pipeline.tracking: every client call classified).
7. Nothing is written or removed outside the job store: every path it writes or removes is reached from its root
   without following a link (pipeline.job.locks.open_dir/remove), so a planted link is refused or removed, never
   written through.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from helpers import compose_tiny, migrated_store, wrap_call

from pipeline import tracking
from pipeline.job import locks, store
from pipeline.params import UserError

# --------------------------------------------------------------------------- 4. a learner that changes its input


def _job(overrides: list[str]):  # noqa: ANN202
    import warnings

    from pipeline.job.config import build

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(compose_tiny(overrides))


def _write_x_element(ds) -> None:  # noqa: ANN001
    ds.X[0, 0] += 1.0


def _write_y(ds) -> None:  # noqa: ANN001
    ds.y[:] = -ds.y


def _write_row(ds) -> None:  # noqa: ANN001
    ds.X[3] = 0.0


def _write_view(ds) -> None:  # noqa: ANN001
    column = ds.X[:, 1]  # a view: writing it writes X
    column *= 0.5


def _write_in_place_op(ds) -> None:  # noqa: ANN001
    np.multiply(ds.X, 2.0, out=ds.X)


def _write_direction(ds) -> None:  # noqa: ANN001
    next(iter(ds.directions.values()))[0] += 1.0


def _replace_x(ds) -> None:  # noqa: ANN001
    object.__setattr__(ds, "X", ds.X * 2.0)


def _write_hypotheses(ds) -> None:  # noqa: ANN001
    ds.hypotheses[0] = -ds.hypotheses[0]


def _write_held_out(ds) -> None:  # noqa: ANN001
    ds.X_test[0] = 0.0


WRITES = [  # (learner config, what it writes, the array the refusal names)
    (["algorithm=perceptron"], _write_x_element, "X, y"),
    (["algorithm=perceptron"], _write_y, "X, y"),
    (["algorithm=perceptron"], _write_row, "X, y"),
    (["algorithm=perceptron"], _write_view, "X, y"),
    (["algorithm=pegasos"], _write_in_place_op, "X, y"),
    (["algorithm=perceptron"], _write_direction, "directions"),
    (["algorithm=perceptron"], _replace_x, "X, y"),
    (["algorithm=halving", "dataset=finite_class"], _write_hypotheses, "hypotheses"),
    (["algorithm=multiclass_sgd", "dataset=multiclass_margin", "dataset.n_test=1000"], _write_held_out, "X_test"),
]


@pytest.mark.parametrize(("overrides", "write", "named"), WRITES, ids=[w.__name__.lstrip("_") for _, w, _ in WRITES])
def test_a_learner_that_writes_into_its_input_fails_its_run_in_one_line(overrides: list[str], write, named: str,  # noqa: ANN001
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.job.run import prepare, run

    job = _job(overrides)
    ds = prepare(job)
    learner_class = type(job.learner)
    original = learner_class.run

    def writing(self, dataset, rng):  # noqa: ANN001, ANN202
        write(dataset)
        return original(self, dataset, rng)

    monkeypatch.setattr(learner_class, "run", writing)
    with pytest.raises(UserError) as refused:
        run(job, ds)
    text = str(refused.value)
    assert text.startswith(f"learner {job.learner.name} changed its input data: ") and "\n" not in text, text
    assert named in text.split(":", 1)[1].split(" differ")[0], text


@pytest.mark.parametrize("overrides", [
    ["algorithm=perceptron", "algorithm.ordering=random"], ["algorithm=perceptron", "algorithm.ordering=adaptive"],
    ["algorithm=batch_perceptron"], ["algorithm=pegasos_projected"], ["algorithm=kernel_pegasos"],
    ["algorithm=weighted_majority", "dataset=finite_class"], ["algorithm=ova", "dataset=multiclass_margin",
                                                              "dataset.n_test=1000"],
    ["algorithm=perceptron", "dataset=stream"], ["algorithm=perceptron", "dataset=sparse_margin"],
], ids=lambda o: "-".join(x.split("=")[1] for x in o))
def test_the_built_in_learners_leave_their_input_alone(overrides: list[str]) -> None:
    """The check holds every built-in learner to it: none writes into what it is handed (the data kept are the
    ones it saw, and their hash is the run's data_hash)."""
    from pipeline.data.certify import content_hash
    from pipeline.job.run import fingerprint, prepare, run

    job = _job(overrides)
    ds = prepare(job)
    before = fingerprint(ds)
    result = run(job, ds)
    assert fingerprint(ds) == before
    if ds.kind != "stream":
        assert result.table["data_hash"].iloc[0] == content_hash(ds.X, ds.y)


@pytest.mark.e2e
def test_a_sweep_keeps_nothing_of_a_learner_that_changed_its_data(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's example: the run was accepted and the data kept with it were the changed data. Now each job
    fails with the one line, and no data, table or done marker is kept in its directory."""
    from pipeline.learners.perceptron import Perceptron

    original = Perceptron.run

    def writing(self, dataset, rng):  # noqa: ANN001, ANN202
        dataset.X[0] *= 3.0  # a row, three times longer than the radius certified for it
        return original(self, dataset, rng)

    monkeypatch.setattr(Perceptron, "run", writing)
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    sweep = tmp_path / "sweep"
    done = boundlab_in_process("-m", "seed=0,1", "n=50", "name=writer", f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "2 job(s) failed" in done.stderr
    for job in ("0", "1"):
        error = (sweep / job / "error.txt").read_text()
        assert "learner perceptron changed its input data: X, y differ" in error
        assert not (sweep / job / "data.npz").exists() and not (sweep / job / "done.json").exists()
    assert not list((tmp_path / "cache" / "jobs").glob(f"*/{store.ENTRY}"))  # nothing stored for reuse either


# --------------------------------------------------------------------------- 7. nothing written outside the job store


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """BOUNDLAB_CACHE for the test, and an ``outside`` directory beside it that nothing may touch."""
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "outside").mkdir()
    return tmp_path / "cache"


def _snapshot(directory: Path) -> dict[str, tuple[bytes | None, float]]:
    """Every file and directory under ``directory``: its content (files) and modification time."""
    out = {}
    for p in sorted(directory.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(directory))] = (p.read_bytes() if p.is_file() and not p.is_symlink() else None, st.st_mtime)
    return out


def _victim(outside: Path, name: str = "victim") -> Path:
    """A directory outside the store with a file the store's lock would be: what a planted link points to."""
    target = outside / name
    (target / "x").mkdir(parents=True)
    (target / "x" / locks.LOCK).write_text("someone else's file\n")
    (target / locks.LOCK).write_text("someone else's file\n")
    return target


@pytest.mark.parametrize("planted", ["locks", "locks/job", "jobs"])
def test_a_lock_is_never_taken_through_a_planted_link(cache: Path, planted: str) -> None:
    """The issue's example: the lock directory resolved through a link, a sweep wrote its pid into a file outside
    the store. A link where the store, its ``locks`` or a job's lock directory belongs is refused, naming it."""
    outside = cache.parent / "outside"
    target = _victim(outside)
    root = store.store_dir()
    link = root if planted == "jobs" else root / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    before = _snapshot(outside)
    with pytest.raises(OSError, match="symbolic link") as refused:
        store.hold_identity("job" if planted != "locks" else "x")
    assert str(link) in str(refused.value) and "\n" not in str(refused.value)
    assert _snapshot(outside) == before, "written outside the store"
    if planted == "jobs":
        assert "symbolic link" in (store.problem() or "")


def test_a_planted_entry_is_neither_reused_nor_touched(cache: Path) -> None:
    """An entry that is a link to a directory outside the store: never reused (it is not the store's), and its
    marker's time is not touched (the store's reuse used to set it through the link)."""
    outside = cache.parent / "outside" / "entry"
    outside.mkdir()
    for name in store.KEPT:
        (outside / name).write_bytes(b"x")
    (outside / store.ENTRY).write_text(json.dumps({"identity": "job", "tracking_uri": "u", "streamed": True,
                                                   "run_id": "r"}))
    os.utime(outside / store.ENTRY, (1_000_000, 1_000_000))
    store.store_dir().mkdir(parents=True)
    (store.store_dir() / "job").symlink_to(outside, target_is_directory=True)
    assert store.stored("job", "u", finished=lambda run_id: True) is None
    assert (outside / store.ENTRY).stat().st_mtime == 1_000_000


def test_storing_over_a_planted_entry_replaces_the_link_not_its_target(cache: Path, tmp_path: Path) -> None:
    """A link where an entry belongs is replaced (the link, never its target); a link where the store itself
    belongs is refused, naming it: the entry used to be written into the directory it points to."""
    outside = cache.parent / "outside" / "entry"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    store.store_dir().mkdir(parents=True)
    (store.store_dir() / "job").symlink_to(outside, target_is_directory=True)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.parquet").write_bytes(b"PAR1")
    store.put("job", out, {"run_id": "r"})
    entry = store.store_dir() / "job"
    assert entry.is_dir() and not entry.is_symlink() and json.loads((entry / store.ENTRY).read_text())["run_id"] == "r"
    assert [p.name for p in outside.iterdir()] == ["keep.txt"]
    store.forget("job")
    assert not entry.exists() and (outside / "keep.txt").exists()
    # the store itself planted: jobs -> a directory outside
    import shutil

    shutil.rmtree(store.store_dir())
    store.store_dir().symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError, match="is a symbolic link"):
        store.put("job", out, {"run_id": "r"})
    assert [p.name for p in outside.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("planted", ["locks", "locks/job", "entry", "temporary"])
def test_prune_removes_planted_links_and_nothing_they_point_to(cache: Path, planted: str) -> None:
    """The issue's example: prune deleted a file outside the store through the link. Now each link planted in the
    store is removed (the link itself) and what it points to is left as it was."""
    outside = cache.parent / "outside"
    target = _victim(outside)
    root = store.store_dir()
    fd = store.hold_identity("kept")  # a real, unheld lock beside the planted link: pruned as before
    locks.release(fd)
    path = {"locks": root / "locks", "locks/job": root / "locks" / "job", "entry": root / "job",
            "temporary": root / ".job.999999999.tmp"}[planted]
    if planted == "locks":
        import shutil

        shutil.rmtree(path)
    path.symlink_to(target, target_is_directory=True)
    before = _snapshot(outside)
    done = store.prune(older_than_days=0)
    assert _snapshot(outside) == before, "removed or written outside the store"
    assert not path.is_symlink() and not path.exists()
    assert done["links"] + done["temporary"] >= 1
    again = store.hold_identity("kept")  # the store works again once the link is gone
    locks.release(again)


def test_a_store_whose_parent_is_a_link_stays_inside_where_it_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BOUNDLAB_CACHE is the user's path: a link to a shared disk is where the store lives. Everything lands in the
    directory it points to, and pruning removes only from there."""
    real = tmp_path / "shared"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "link"))
    assert store.problem() is None
    fd = store.hold_identity("job")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.parquet").write_bytes(b"PAR1")
    store.put("job", out, {"run_id": "r"})
    locks.release(fd)
    assert (real / "jobs" / "job" / store.ENTRY).is_file() and (real / "jobs" / "locks" / "job" / locks.LOCK).is_file()
    target = _victim(tmp_path / "outside")  # and a link planted inside it: removed, its target left alone
    (real / "jobs" / "locks" / "planted").symlink_to(target, target_is_directory=True)
    before = _snapshot(tmp_path / "outside")
    done = store.prune(older_than_days=0)
    assert done["entries"] == 1 and done["locks"] == 1 and sorted(p.name for p in (real / "jobs").iterdir()) == ["locks"]
    assert not list((real / "jobs" / "locks").iterdir()) and _snapshot(tmp_path / "outside") == before


@pytest.mark.e2e
def test_a_sweep_with_a_planted_lock_directory_writes_nothing_outside(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    """The sweep runs every job, without the store (said in one line naming the link), and the file the link
    points to keeps its content."""
    target = _victim(tmp_path / "outside")
    root = tmp_path / "cache" / "jobs"
    root.mkdir(parents=True)
    (root / "locks").symlink_to(target, target_is_directory=True)
    before = _snapshot(tmp_path / "outside")
    env = {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(tmp_path / "mlflow.db"), "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    done = boundlab_in_process("-m", "seed=0,1", "n=50", "name=planted", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                               cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 runs in" in done.stdout
    assert f"{root / 'locks'} is a symbolic link" in done.stdout + done.stderr
    assert _snapshot(tmp_path / "outside") == before


@pytest.mark.e2e
def test_each_sweep_of_a_process_says_its_store_cannot_be_used(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    """The warning is said once a sweep, not once a process: a second sweep in the same process (a test's, a
    notebook's) says it too. It was said once a process, so this file's planted-lock test failed whenever an
    earlier test in the same worker had been told first."""
    for k in range(2):
        here = tmp_path / str(k)
        root = here / "cache" / "jobs"
        root.mkdir(parents=True)
        (root / "locks").symlink_to(_victim(here / "outside"), target_is_directory=True)
        env = {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(here / "mlflow.db"), "BOUNDLAB_CACHE": str(here / "cache")}
        done = boundlab_in_process("-m", "seed=0,1", "n=50", "name=planted", f"hydra.sweep.dir={here / 'sweep'}",
                                   cwd=here, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"{root / 'locks'} is a symbolic link" in done.stdout + done.stderr, k


# --------------------------------------------------------------------------- 5. the tracking store failing mid-sweep


def _mlflow_lock_error() -> BaseException:
    """What MLflow raises for a write to a SQLite store another process holds: an MlflowException raised from
    SQLAlchemy's OperationalError raised from sqlite3's (the message quotes the SQL and its parameters)."""
    import sqlalchemy.exc
    from mlflow.exceptions import MlflowException

    try:
        try:
            try:
                raise sqlite3.OperationalError("database is locked")
            except sqlite3.OperationalError as e:
                raise sqlalchemy.exc.OperationalError("INSERT INTO params (key, value) VALUES (?, ?)", [("a", "b")] * 50,
                                                      e) from e
        except sqlalchemy.exc.OperationalError as e:
            raise MlflowException(message=e) from e
    except MlflowException as e:
        return e


def _refusal(status: int) -> BaseException:
    """What MLflow raises when the server answers 401 or 403 (mlflow.utils.rest_utils.verify_rest_response)."""
    from mlflow.exceptions import MlflowException, get_error_code

    body = "You are not authenticated." if status == 401 else "Permission denied"
    return MlflowException(f"API request to endpoint /api/2.0/mlflow/runs/log-batch failed with error code {status} "
                           f"!= 200. Response body: '{body}'", error_code=get_error_code(status))


def _http_error(status: int) -> BaseException:
    import requests

    response = requests.Response()
    response.status_code = status
    return requests.HTTPError(f"{status} Client Error: FORBIDDEN for url: http://h/api/2.0/mlflow-artifacts/x",
                              response=response)


def _disk_error() -> BaseException:
    import sqlalchemy.exc

    try:
        raise sqlite3.OperationalError("disk I/O error")
    except sqlite3.OperationalError as e:
        return sqlalchemy.exc.OperationalError("SELECT 1", (), e)


def _not_found() -> BaseException:
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST

    return MlflowException("Run 'abc' not found", error_code=RESOURCE_DOES_NOT_EXIST)


@pytest.mark.parametrize(("make", "kind", "reason"), [
    (_mlflow_lock_error, "locked", "database is locked"),
    (lambda: sqlite3.OperationalError("database table is locked"), "locked", "database table is locked"),
    (lambda: _refusal(401), "refused", "HTTP 401"),
    (lambda: _refusal(403), "refused", "HTTP 403"),
    (lambda: _http_error(403), "refused", "HTTP 403"),
    (_disk_error, "failing", "disk I/O error"),
    (lambda: ConnectionRefusedError(111, "Connection refused"), "down", "Connection refused"),
    (_not_found, None, None),
    (lambda: ValueError("a bad value of the call"), None, None),
], ids=["mlflow-lock", "table-lock", "401", "403", "artifact-403", "disk", "refused-connection", "not-found", "value"])
def test_a_store_failure_is_classified_in_one_clause(make, kind: str | None, reason: str | None) -> None:  # noqa: ANN001
    found = tracking.down.store_problem(make())
    if kind is None:
        assert found is None
        return
    assert found is not None and found[0] == kind and reason in found[1] and "\n" not in found[1], found
    assert "INSERT" not in found[1] and len(found[1]) <= 300


@pytest.fixture
def fresh_tracking(monkeypatch: pytest.MonkeyPatch) -> None:
    """No store known down, no client cached: each test opens its own."""
    monkeypatch.setattr(tracking.down, "_DOWN", {})
    monkeypatch.setattr(tracking.clients, "_CLIENTS", {})
    monkeypatch.setattr(tracking.runs, "_EXPERIMENTS", {})
    monkeypatch.setattr(tracking.down, "_SWEEP_DIRS", {}, raising=False)


@pytest.fixture
def short_busy_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow waits 20 s for a SQLite lock on each call (its sessions' ``PRAGMA busy_timeout = 20000``): 0.3 s here,
    so that a lock held throughout costs the test a fraction of a second per call. Only the wait is shortened: the
    lock, its error and everything boundlab does with it are the real ones."""
    import sqlalchemy.sql

    import mlflow.store.db.utils as db_utils

    class _Sql:
        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(sqlalchemy.sql, name)

        @staticmethod
        def text(statement: str):  # noqa: ANN205
            return sqlalchemy.sql.text(statement.replace("busy_timeout = 20000", "busy_timeout = 300"))

    monkeypatch.setattr(db_utils, "sql", _Sql())


class _Locker:
    """An exclusive lock on a SQLite store, held from a second connection (as another process's write holds it)."""

    def __init__(self, db: Path) -> None:
        self.db, self.conn = db, None

    def take(self) -> None:
        if self.conn is None:
            self.conn = sqlite3.connect(self.db, isolation_level=None, timeout=30)
            self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        if self.conn is not None:
            self.conn.execute("ROLLBACK")
            self.conn.close()
            self.conn = None


class _MlflowLog(list):
    """MLflow's own log records of level ERROR (its database errors are logged with the SQL and a traceback)."""

    def __init__(self) -> None:
        import logging

        super().__init__()
        self.handler = logging.Handler(logging.ERROR)
        self.handler.emit = self.append


@pytest.fixture
def mlflow_errors() -> _MlflowLog:
    import logging

    log = _MlflowLog()
    logger = logging.getLogger("mlflow")
    logger.addHandler(log.handler)
    yield log
    logger.removeHandler(log.handler)


def _after(monkeypatch: pytest.MonkeyPatch, target: str, calls: int, action) -> None:  # noqa: ANN001
    """Run ``action()`` once, before call number ``calls`` of ``target`` ("module:Attr.path")."""
    wrap_call(monkeypatch, target, lambda n: action() if n == calls else None)


class _Revoked:
    """Credentials revoked on a server: from ``revoke()`` on, every call of MLflow's client raises what MLflow
    raises for the server's answer (401, or 403), until ``restore()``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
        import functools

        import mlflow

        self.on, self.status = False, status
        for name in dir(mlflow.MlflowClient):
            method = getattr(mlflow.MlflowClient, name)
            if name.startswith("_") or not callable(method):
                continue

            def make(method):  # noqa: ANN001, ANN202
                @functools.wraps(method)
                def call(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
                    if self.on:
                        raise _refusal(self.status)
                    return method(*args, **kwargs)

                return call

            monkeypatch.setattr(mlflow.MlflowClient, name, make(method))

    def revoke(self) -> None:
        self.on = True

    def restore(self) -> None:
        self.on = False


SWEEP = ["-m", "seed=0,1,2", "n=50", "name=store_fault"]


def _sweep(boundlab_in_process, tmp_path: Path, env: dict[str, str]):  # noqa: ANN001, ANN202
    return boundlab_in_process(*SWEEP, f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path, env=env)


def _one_line_each(done, what: str, recover: str) -> list[str]:  # noqa: ANN001
    """The lines that speak of the store's failure: each one line naming the store, what happened and how to
    recover; no SQL, no traceback anywhere."""
    text = done.stdout + done.stderr
    assert "[SQL:" not in text and "Traceback" not in text and "[parameters:" not in text, text[-3000:]
    lines = [line for line in text.splitlines() if what in line]
    assert lines, text[-3000:]
    assert all("tracking store sqlite:///" in line and recover in line for line in lines), lines
    end = [line for line in done.stderr.splitlines() if line.startswith("boundlab: ")]
    assert len(end) == 1 and what in end[0], done.stderr[-3000:]
    return lines


def _statuses(uri: str) -> tuple[list[str], list[tuple[str, str]]]:
    from helpers import sweep_runs

    parents, children = sweep_runs(uri, "store_fault")
    return ([p.info.status for p in parents],
            sorted((c.data.tags["mlflow.runName"], c.info.status) for c in children))


def _completes(boundlab_in_process, tmp_path: Path, env: dict[str, str], uri: str) -> None:  # noqa: ANN001
    """The same command, once the store is back, completes what is missing and ends what was left open."""
    again = _sweep(boundlab_in_process, tmp_path, env)
    assert again.returncode == 0, again.stderr[-3000:]
    parents, children = _statuses(uri)
    assert parents == ["FINISHED"], parents
    assert children == [(f"perceptron seed={s} n=50", "FINISHED") for s in range(3)], children


@pytest.mark.e2e
@pytest.mark.usefixtures("fresh_tracking", "short_busy_wait")
@pytest.mark.parametrize("when", ["mid", "end"])
def test_a_store_locked_by_another_process_gets_one_line_and_the_same_command_completes(
        when: str, tmp_path: Path, boundlab_in_process, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
        mlflow_errors: _MlflowLog) -> None:
    """The issue's example: a store locked while a sweep ran failed the sweep's end, left the parent RUNNING and
    printed 325 lines of SQL. Locked after the first job (mid) or once every job has finished (end)."""
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    locker = _Locker(tmp_path / "mlflow.db")
    if when == "mid":
        _after(monkeypatch, "pipeline.tracking.runs:JobRun.finish", 2, locker.take)
    else:
        _after(monkeypatch, "pipeline.tracking.runs:link_reused", 1, locker.take)
    try:
        done = _sweep(boundlab_in_process, tmp_path, env)
    finally:
        locker.release()
    assert done.returncode == 1
    lines = _one_line_each(done, "is locked by another process", "run the same command once that process lets it go")
    assert len(lines) == (3 if when == "mid" else 1), lines  # mid: two jobs and the end
    assert not mlflow_errors, [r.getMessage()[:200] for r in mlflow_errors]
    parents, children = _statuses(uri)
    assert ("perceptron seed=0 n=50", "FINISHED") in children  # a finished run is kept
    _completes(boundlab_in_process, tmp_path, env, uri)


@pytest.mark.e2e
@pytest.mark.usefixtures("fresh_tracking", "short_busy_wait")
def test_a_store_locked_at_the_sweeps_start_gets_one_line(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Locked before the command (its pre-flight says so, before any work) or between the pre-flight and the parent
    run (the sweep's start says so): one line each, how to recover, nothing run."""
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    locker = _Locker(tmp_path / "mlflow.db")
    locker.take()
    try:
        before = _sweep(boundlab_in_process, tmp_path, env)
    finally:
        locker.release()
    assert before.returncode == 2 and before.stderr.count("\n") == 1, before.stderr
    assert "is locked by another process" in before.stderr and "run the same command once" in before.stderr
    _after(monkeypatch, "pipeline.tracking.runs:start_parent", 1, locker.take)
    try:
        started = _sweep(boundlab_in_process, tmp_path, env)
    finally:
        locker.release()
    assert started.returncode == 1
    _one_line_each(started, "is locked by another process", "run the same command once that process lets it go")
    assert not list((tmp_path / "sweep").glob("*/done.json"))


@pytest.mark.e2e
@pytest.mark.usefixtures("fresh_tracking")
@pytest.mark.parametrize(("status", "when"), [(401, "mid"), (403, "end")])
def test_credentials_revoked_mid_sweep_get_one_line_and_the_same_command_completes(
        status: int, when: str, tmp_path: Path, boundlab_in_process, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The issue's example: credentials revoked mid-sweep left a parent and a child RUNNING on the server, with
    three different error lines. Now each line is the same one, and the same command with valid credentials ends
    what was left open and runs what is missing."""
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    revoked = _Revoked(monkeypatch, status)
    if when == "mid":  # revoked while the second job logs its results: its run stays open
        _after(monkeypatch, "pipeline.tracking.runs:JobRun.finish", 2, revoked.revoke)
    else:
        _after(monkeypatch, "pipeline.tracking.runs:link_reused", 1, revoked.revoke)
    done = _sweep(boundlab_in_process, tmp_path, env)
    revoked.restore()
    assert done.returncode == 1
    lines = _one_line_each(done, "refuses these credentials", "set valid ones (MLFLOW_TRACKING_USERNAME")
    assert all(f"(HTTP {status}" in line for line in lines), lines
    import re

    same = {re.sub(r"since \S+ \S+ ", "since TIME ", line[line.index("tracking store"):]) for line in lines}
    assert len(same) == 1, "\n".join(lines)  # the same line each time (a SQLite store's probe cannot see a refusal)
    _completes(boundlab_in_process, tmp_path, env, uri)


@pytest.mark.usefixtures("fresh_tracking", "short_busy_wait")
def test_a_jobs_run_on_a_locked_store_fails_the_next_job_at_once(tmp_path: Path) -> None:
    """Without a sweep: the job's call that meets the lock is one StoreDown, and the next job's, without a request."""
    uri = migrated_store(tmp_path / "mlflow.db")
    run = tracking.runs.JobRun(uri, experiment="e", name="job 0", parent_id=None, tags={})
    locker = _Locker(tmp_path / "mlflow.db")
    locker.take()
    try:
        with pytest.raises(tracking.StoreDown, match="is locked by another process since .* \\(database is locked\\)"):
            run.fail(RuntimeError("any"))
        import time

        started = time.perf_counter()
        with pytest.raises(tracking.StoreDown):
            tracking.runs.JobRun(uri, experiment="e", name="job 1", parent_id=None, tags={})
        assert time.perf_counter() - started < 0.2
    finally:
        locker.release()
