"""The process's MLflow clients, one per store, every call guarded (:class:`_Guarded`): a store down, locked, refusing
the credentials or failing is one :class:`pipeline.tracking.down.StoreDown`, never MLflow's SQL dump. SQLite stores
run in write-ahead mode, and their logs are folded back on exit."""

from __future__ import annotations

import atexit
import fcntl
import functools
import os
import sqlite3
from typing import Any

import pipeline.tracking.down as down
from pipeline.tracking.down import HTTP_DEFAULTS, StoreDown, _is_http, ensure_up, mark_down, store_problem
from pipeline.tracking.secrets import redact, split_credentials

_CLIENTS: dict[str, Any] = {}  # uri -> client: a sweep's jobs in one process share one (and its engine)


def _client(uri: str):  # noqa: ANN202
    """The process's MLflow client of ``uri`` (one per store: opening one costs ~10 ms a job), guarded
    (:class:`_Guarded`): a store down, locked, refusing or failing is one :class:`StoreDown`."""
    if uri not in _CLIENTS:
        _guard_known(uri)
        try:
            _CLIENTS[uri] = _Guarded(uri, _open_client(uri))
        except Exception as e:
            raise _classified(uri, e) from e
    return _CLIENTS[uri]


def _guard_known(uri: str) -> None:
    """:class:`StoreDown` at once when this process knows the store down (no request; the knowledge is
    checked again once :data:`RECHECK_S` old, :func:`known_down`)."""
    if redact(uri) in down._DOWN:
        ensure_up(uri)


def _classified(uri: str, error: BaseException) -> BaseException:
    """``error`` as a call to the store ``uri`` raised it, or, when it means the store cannot take calls now
    (:func:`store_problem`), :class:`StoreDown` for it, the store recorded so for this process and its
    sweep's other workers (:func:`mark_down`)."""
    if isinstance(error, StoreDown):
        return error
    found = store_problem(error)
    if found is None:
        return error
    kind, _ = found
    mark_down(uri, None, error, kind)
    state = down._DOWN[redact(uri)]
    return StoreDown(uri, state["since"], state["reason"], kind)


class _Guarded:
    """An MLflow client whose every call that finds the store down, locked, refusing the credentials or
    failing raises :class:`StoreDown` (one line, :func:`store_problem`) instead of MLflow's exception (whose
    text is the SQL statement and its parameters, hundreds of lines), and that fails at once, without a
    request, while the store is known so. Everything else passes through unchanged."""

    def __init__(self, uri: str, client: Any) -> None:
        self._uri, self._inner = uri, client

    def __getattr__(self, name: str) -> Any:
        if name in ("_uri", "_inner"):  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        value = getattr(self._inner, name)
        if name.startswith("_") or not callable(value):
            return value
        uri = self._uri

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            _guard_known(uri)
            try:
                return value(*args, **kwargs)
            except Exception as e:
                classified = _classified(uri, e)
                if classified is e:
                    raise
                raise classified from e

        return call


def _close_clients() -> None:
    """Close the stores' database connections at the process's exit, which the command takes without
    tearing its modules down (:func:`pipeline.sweep.interrupts.quick_exit`): SQLite folds its write-ahead log
    into the database file when the last connection closes, so no ``-wal``/``-shm`` file stays beside it."""
    for client in _CLIENTS.values():
        client = getattr(client, "_inner", client)
        engine = getattr(getattr(getattr(client, "_tracking_client", None), "store", None), "engine", None)
        try:
            if engine is not None:
                engine.dispose()
        except Exception:  # noqa: BLE001 - at exit: a connection that cannot close is closed by the OS
            pass


atexit.register(_close_clients)
# A forked process (a sweep's worker, the figures' helper) must not inherit open SQLite connections: SQLite's
# locks are the process's own (POSIX), so a copy used or closed in the child corrupts what the parent holds.
# The idle connections are closed just before any fork; the parent reopens one on its next call, the child
# its own.
os.register_at_fork(before=_close_clients)


def _open_client(uri: str):  # noqa: ANN202
    import mlflow  # lazy: importing mlflow costs ~1.4 s

    if _is_http(uri):
        for name, value in HTTP_DEFAULTS.items():  # bounded retries, unless the user chose (module comment)
            os.environ.setdefault(name, value)
        # the URI's credentials go to MLflow as its variables (read on every request, inherited by the
        # workers): a URI without them is what MLflow's errors and the run's artifact URIs show
        plain, credentials = split_credentials(uri)
        os.environ.update(credentials)
        return mlflow.MlflowClient(tracking_uri=plain)
    _quiet_database_errors()
    path = _sqlite_path(uri)
    if path is None:
        return mlflow.MlflowClient(tracking_uri=uri)
    # MLflow creates and migrates a new SQLite store's tables when a client first opens it, and two
    # processes doing so at once fail ("table experiments already exists", an alembic version mismatch):
    # two runs started together on a fresh store. The first to open it does it alone, under flock on the
    # database's directory. Not on the database file itself: closing any descriptor of that file releases
    # every fcntl lock this process holds on it, SQLite's included (POSIX), and a process whose connection
    # has lost its lock looks absent to the others: the last of them to close its own connection then folds
    # the write-ahead log into the file and deletes it under this one ("database disk image is malformed").
    _write_ahead()
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return mlflow.MlflowClient(tracking_uri=uri)
    finally:
        os.close(fd)


class _StoreProblemFilter:
    """Drops MLflow's own log record of a database error that :class:`_Guarded` reports as one line (MLflow
    logs every SQLAlchemy ``OperationalError`` with its traceback, the SQL statement and its parameters: 325
    lines for a sweep's end on a locked SQLite store)."""

    def filter(self, record: Any) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, BaseException) and store_problem(error) is not None)


def _quiet_database_errors() -> None:
    import logging

    logger = logging.getLogger("mlflow.store.db.utils")
    if not any(isinstance(f, _StoreProblemFilter) for f in logger.filters):
        logger.addFilter(_StoreProblemFilter())


_WAL: list[bool] = []  # the listener below is installed once per process


def _write_ahead() -> None:
    """Every SQLite connection MLflow opens in this process uses SQLite's write-ahead log with
    ``synchronous=NORMAL``: a commit appends to the log instead of syncing the database file, so a job's
    eight commits cost ~1 ms instead of ~12 ms each (docs/performance.md; the store's share of a job of a
    sweep of 10^4). A committed run survives the process's crash, a kill or Ctrl-C, as before; only a
    power loss or an OS crash may lose the last commits (SQLite's documented trade-off for this mode; the
    jobs' results tables on disk are not affected). The log mode is kept in the database file, so
    ``mlflow ui`` and other processes read it alike; a database on a network file system, where SQLite's
    write-ahead log is unsupported, is opened as before (the pragma fails and is ignored)."""
    if _WAL:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def pragmas(dbapi_connection: Any, _record: Any) -> None:
        if not isinstance(dbapi_connection, sqlite3.Connection):
            return
        try:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
            finally:
                cursor.close()
        except sqlite3.Error:  # read-only, or a file system without shared memory: the default journal
            pass

    event.listen(Engine, "connect", pragmas)
    _WAL.append(True)


def _sqlite_path(uri: str) -> str | None:
    """The file of a ``sqlite:///`` URI on disk (None for other stores and in-memory databases)."""
    if not uri.lower().startswith("sqlite"):
        return None
    raw = uri.split("://", 1)[1].partition("?")[0]
    path = raw[1:] if raw.startswith("/") else raw
    return path if path not in ("", ":memory:") and not path.startswith("file:") else None
