"""MLflow tracking: the only module that imports mlflow.

Every call goes through an explicit ``MlflowClient`` and run id (no fluent active-run state), so
jobs that share a process (basic launcher) or a store (joblib workers) never collide. The database,
the experiment and a sweep's parent run are created once, before jobs start: parallel workers that
open a fresh SQLite store together race on MLflow's schema migration.

Credentials never reach the store or a message: every param, tag and error text logged here, and every
reason :func:`check_store` gives, goes through :func:`redact`; a server URI's ``user:password@`` is taken
out of the URI MLflow sees and handed to it as ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``
(:func:`split_credentials`), so MLflow's own errors, which quote the URL, do not carry it either.

A tracking server that stops answering mid-sweep costs each later job a few seconds, not minutes: MLflow's
HTTP retries are bounded for this process (:data:`HTTP_DEFAULTS`), and once a job has seen the server
down (:func:`is_connection_error`, :func:`mark_down`) the next ones fail at once (:func:`ensure_up` raises
:class:`StoreDown`), in this process and, through a marker file in the sweep directory, in its siblings.

A store that is locked by another process (SQLite's "database is locked"), that refuses the credentials
(HTTP 401/403) or whose database fails (SQLAlchemy's ``OperationalError``) is treated the same way, wherever
the call is made (a job, the sweep's start or end): every call of the client goes through :class:`_Guarded`,
which turns such a failure into :class:`StoreDown`, one line naming the store, what happened and how to
recover (:func:`store_problem`), never MLflow's SQL dump or a traceback. Runs it could not end are left to the
same command run again, which ends them (:func:`resume_parent`).
"""

from __future__ import annotations

import atexit
import base64
import fcntl
import functools
import json
import math
import os
import re
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline import files
from pipeline.sweep import context as sweep
from pipeline.paths import project_root

PARENT_FILE = ".boundlab_parent"  # in the sweep directory: reaches jobs where the environment does not
DOWN_FILE = ".boundlab_store_down"  # in the sweep directory: the store was found down (mark_down)


# per-run statistics logged as metrics when the run has them (certificates, constants of the bounds)
STAT_METRICS = ("R", "gamma_lo", "gamma_hi", "T", "lam", "c", "dual_gap", "f_star_lo", "f_star_hi", "H", "best_expert")

# --------------------------------------------------------------------------- credentials in text and URIs

REDACTED = "***"
_SECRET_QUERY = re.compile(  # a query parameter whose name says it holds a secret: ?password=..., &api_key=...
    r"(?i)([?&;][\w.\-]*(?:pass|pwd|token|secret|key|sig|credential|auth)[\w.\-]*=)([^&#\s]*)")
_SECRET_ASSIGNMENT = re.compile(  # name=value in free text (libpq DSNs, environment dumps): password=..., X_TOKEN=...
    r"(?i)(?<![\w.\-])([\w.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key)=)"
    r"(['\"]?)([^\s'\"&]*)")
_BARE_USERINFO = re.compile(  # user:password@host without a scheme (a scheme's userinfo is handled first)
    r"(?<![\w/:@%.+\-])([A-Za-z0-9._~%+\-]+):([^\s@/]+)@(?=[A-Za-z0-9\[])")


def redact(text: str) -> str:
    """``text`` with every credential it shows replaced by ``***``: the password of each URI's userinfo
    (``http://user:***@host:5000``, ``postgresql+psycopg2://u:***@h/db``), and of a bare ``user:pw@host``;
    query parameters whose name says secret (``?token=***``, ``&password=***``, ``api_key``, ``sig``, ...);
    ``password=...``-style assignments in free text (libpq DSNs, environment dumps). User names, hosts,
    ports and paths are kept. Works on any text (a message, a traceback, a config dump) and is idempotent.

    >>> redact("failed: http://me:s3cr%40t@host:5000/api (retry)")
    'failed: http://me:***@host:5000/api (retry)'
    >>> redact("postgresql://u:pw@db/x?sslmode=require&password=pw")
    'postgresql://u:***@db/x?sslmode=require&password=***'
    >>> redact(redact("https://u:p@h")) == redact("https://u:p@h") == "https://u:***@h"
    True
    """
    if not text:
        return text
    out = text
    # each scheme's authority, right to left so that the offsets stay valid; an authority ends at the
    # first '/', '?', '#' or space, and its userinfo at its last '@' (an unencoded '@' in a password too)
    for m in reversed(list(re.finditer(r"[A-Za-z][A-Za-z0-9+.\-]*://", out))):
        start = end = m.end()
        while end < len(out) and out[end] not in "/?#" and not out[end].isspace():
            end += 1
        userinfo, at, host = out[start:end].rpartition("@")
        user, colon, password = userinfo.partition(":")
        if at and colon and password != REDACTED:
            out = f"{out[:start]}{user}:{REDACTED}@{host}{out[end:]}"
    out = _BARE_USERINFO.sub(lambda m: f"{m[1]}:{REDACTED}@", out)
    out = _SECRET_QUERY.sub(lambda m: m[1] + REDACTED, out)
    return _SECRET_ASSIGNMENT.sub(lambda m: m[1] + m[2] + REDACTED, out)


# the environment variables MLflow reads for a server's basic auth (mlflow/environment_variables.py;
# mlflow/utils/credentials.py reads them, else ~/.mlflow/credentials, on every request)
USERNAME_ENV, PASSWORD_ENV, TOKEN_ENV = "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"


def split_credentials(uri: str) -> tuple[str, dict[str, str]]:
    """``uri`` without its credentials, and the environment variables that give them to MLflow instead.

    For an http(s) server, ``http://user:pw@host:5000/prefix`` gives ``("http://host:5000/prefix",
    {"MLFLOW_TRACKING_USERNAME": "user", "MLFLOW_TRACKING_PASSWORD": "pw"})`` (percent-decoded; only the
    parts present). MLflow sends basic auth from these variables; a password kept in the URI would be
    quoted in each of MLflow's error messages, which include the request's URL.

    Any other URI is returned unchanged with ``{}``: a database URI (SQLAlchemy) must keep its password,
    which the driver needs; :func:`redact` hides it wherever it is shown or stored.

    >>> split_credentials("https://ann:p%40ss@mlflow.example:443/x")
    ('https://mlflow.example:443/x', {'MLFLOW_TRACKING_USERNAME': 'ann', 'MLFLOW_TRACKING_PASSWORD': 'p@ss'})
    >>> split_credentials("postgresql://u:pw@db/mlflow")
    ('postgresql://u:pw@db/mlflow', {})
    """
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(uri)
    if parts.scheme.lower() not in ("http", "https") or "@" not in parts.netloc:
        return uri, {}
    userinfo, _, host = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    env = {USERNAME_ENV: unquote(user)} if user else {}
    if colon:
        env[PASSWORD_ENV] = unquote(password)
    return urlunsplit(parts._replace(netloc=host)), env


def _auth_header(uri: str) -> tuple[dict[str, str], bool]:
    """The Authorization header MLflow would send to the server ``uri`` (basic from the URI's userinfo,
    else from MLflow's variables or ~/.mlflow/credentials; else a bearer token), and whether any
    credentials were found."""
    import configparser

    _, given = split_credentials(uri)
    user, password = given.get(USERNAME_ENV), given.get(PASSWORD_ENV)
    if not given:
        file = configparser.ConfigParser()
        try:
            file.read(os.path.expanduser("~/.mlflow/credentials"))
        except (configparser.Error, OSError, UnicodeDecodeError):
            pass
        section = file["mlflow"] if file.has_section("mlflow") else {}
        user = os.environ.get(USERNAME_ENV) or section.get(USERNAME_ENV.lower())
        password = os.environ.get(PASSWORD_ENV) or section.get(PASSWORD_ENV.lower())
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}, True
    if os.environ.get(TOKEN_ENV):
        return {"Authorization": f"Bearer {os.environ[TOKEN_ENV]}"}, True
    return {}, bool(user or password)


def _get(url: str, headers: Mapping[str, str], timeout: float) -> None:
    """GET ``url`` (credentials in ``headers``, never in the URL): returns once it answers 2xx, else raises."""
    with urllib.request.urlopen(urllib.request.Request(url, headers=dict(headers)), timeout=timeout):
        pass


def _probe_server(uri: str, timeout: float = 5.0, credentials: bool = True) -> str | None:
    """None if the tracking server ``uri`` answers (and, with ``credentials``, takes the credentials MLflow
    would send); otherwise why not, one clause, redacted."""
    base = split_credentials(uri)[0].rstrip("/")
    headers, have = _auth_header(uri)

    def refused(e: urllib.error.HTTPError) -> str:
        if have:
            return f"the server refuses these credentials (HTTP {e.code} {e.reason})"
        return (f"the server asks for credentials (HTTP {e.code} {e.reason}): give them as "
                f"{USERNAME_ENV} and {PASSWORD_ENV}, or in the URI (http://USER:PASSWORD@HOST:PORT)")

    try:  # /health: the server's own liveness route, which MLflow's auth leaves open
        _get(base + "/health", headers, timeout)
    except urllib.error.HTTPError as e:  # a proxy in front may guard every route
        return redact(refused(e) if e.code in (401, 403) else f"the server does not answer ({e})")
    except (urllib.error.URLError, OSError) as e:
        return redact(f"the server does not answer ({getattr(e, 'reason', e)})")
    if not credentials:
        return None
    try:  # a route MLflow's auth guards: do the credentials open it?
        _get(base + "/api/2.0/mlflow/experiments/search?max_results=1", headers, timeout)
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            return redact(refused(e))
    except (urllib.error.URLError, OSError):  # answered /health a moment ago: leave the rest to MLflow
        pass
    return None


def tracking_uri(configured: str | None = None) -> str:
    """The store a command tracks to: ``configured`` (the config's ``tracking.uri``: the command line's, the more
    explicit) if set, else ``MLFLOW_TRACKING_URI``, else a SQLite store in the project root. Every run records
    this URI as its ``tracking.uri`` parameter (:meth:`JobRun.finish`), the store it is in (docs/mlflow.md)."""
    return configured or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{project_root() / 'mlflow.db'}"


def check_store(uri: str) -> str | None:
    """None if the store at ``uri`` can take runs now; otherwise why not (one clause, redacted: it never
    shows a password). Cheap: no mlflow import.

    File stores (``file:`` URIs and plain paths) are refused: MLflow 3 keeps them in maintenance mode and
    this project's parent/child runs are tested on database and server stores only. A server is asked
    for ``/health`` and then for one guarded route with the credentials MLflow would send (the URI's
    ``user:password@``, else ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``), so that refused
    credentials are told apart from a server that does not answer.
    """
    why = _check_store(uri)
    return redact(why) if why else None


MLFLOW_SCHEMES = ("databricks", "databricks-uc", "uc")  # MLflow's own stores, taken as they are (bare or as a scheme)


def _check_store(uri: str) -> str | None:
    from urllib.parse import urlsplit

    if uri.lower() in MLFLOW_SCHEMES:  # MLflow's URIs that are not paths
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
        return _probe_server(uri)
    if scheme in MLFLOW_SCHEMES or scheme in _plugin_schemes():
        return None
    return (f"MLflow has no store for {scheme or uri}: URIs; use a SQLite store (sqlite:////absolute/path/mlflow.db), "
            "a tracking server (http://host:port) or a database (postgresql://, mysql://, mssql://)")


def _plugin_schemes() -> set[str]:
    """The URI schemes of the MLflow tracking-store plug-ins installed (entry points, read without importing
    mlflow)."""
    from importlib.metadata import entry_points

    return {ep.name.lower() for ep in entry_points(group="mlflow.tracking_store")}


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
    if path.is_dir():
        return f"{path} is a directory, not a database file"
    if not path.exists():
        try:  # a real write: permission bits alone do not tell (root, read-only mounts)
            with tempfile.TemporaryFile(dir=path.parent):
                pass
        except OSError as e:
            return f"its directory {path.parent} is not writable ({e.strerror or e})"
        return None
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as e:
        return f"the database cannot be read ({e.strerror or e})"
    if head and head != SQLITE_HEADER:  # an empty file is a new database to SQLite
        return (f"{path} is not a SQLite database (its {path.stat().st_size} bytes do not start with SQLite's "
                "header): point tracking.uri at a new file or an MLflow database")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=2.0, isolation_level=None)
        try:
            # take the write lock as a run would, read what the database holds, then write for real (a
            # read-only file, directory or mount only fails on a write), and undo it
            conn.execute("BEGIN IMMEDIATE")
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                      if not r[0].startswith("sqlite_")}
            version = None
            if "alembic_version" in tables:
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
                version = row[0] if row else None
            conn.execute("CREATE TABLE boundlab_write_probe (x)")
            conn.execute("INSERT INTO boundlab_write_probe VALUES (1)")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    except sqlite3.Error as e:
        if _LOCK_TEXT.search(str(e)):
            return (f"the database cannot be written: it is locked by another process ({e}); run the same command "
                    "once that process lets it go (another command's write, a database browser)")
        return f"the database cannot be written ({e})"
    return _check_schema(path, tables, version)


SQLITE_HEADER = b"SQLite format 3\x00"
# the tables MLflow's first migration creates (mlflow/store/tracking/dbmodels/initial_models.py), before
# alembic records a version: a store whose creation was cut short holds some of them and nothing else
MLFLOW_INITIAL_TABLES = frozenset({"experiments", "runs", "tags", "metrics", "params"})


def _check_schema(path: Path, tables: set[str], version: str | None) -> str | None:
    """Whether a SQLite database holding ``tables`` (alembic at ``version``) is one MLflow can use: empty
    (MLflow creates its tables), MLflow's, or MLflow's being created. A database of another application
    would get MLflow's ~60 tables added to it; a store written by a newer MLflow fails every run."""
    if not tables:
        return None
    mlflow_like = {"experiments", "runs"} <= tables and ("alembic_version" in tables or tables <= MLFLOW_INITIAL_TABLES)
    if not mlflow_like:
        names = sorted(tables)
        shown = ", ".join(names[:6]) + (f", ... ({len(names)} tables)" if len(names) > 6 else "")
        return (f"{path} is a SQLite database with other tables ({shown}), not an MLflow store: "
                "point tracking.uri at a new file or an MLflow database")
    known = _mlflow_revisions()
    if version is None or not known or version in known[0]:
        return None
    return (f"its MLflow schema version {version} is unknown to the installed MLflow {known[1]} (its newest "
            f"is {known[2]}): a newer MLflow wrote this store; upgrade mlflow (pip install -U mlflow) or point "
            "tracking.uri at another store")


@functools.cache
def _mlflow_revisions() -> tuple[frozenset[str], str, str] | None:
    """(every schema revision the installed MLflow's migrations know, its version, its newest revision),
    read from the migration scripts' text (importing alembic and MLflow would cost seconds); None when
    MLflow or its migrations cannot be found."""
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    versions = Path(next(iter(spec.submodule_search_locations))) / "store" / "db_migrations" / "versions"
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in versions.glob("*.py"):
        text = script.read_text(errors="replace")
        found = re.search(r"^revision\s*=\s*['\"]([0-9A-Za-z_]+)['\"]", text, re.MULTILINE)
        if found:
            revisions.add(found[1])
            down = re.search(r"^down_revision\s*=\s*(.+)$", text, re.MULTILINE)
            parents.update(re.findall(r"['\"]([0-9A-Za-z_]+)['\"]", down[1]) if down else ())
    heads = sorted(revisions - parents)
    if not revisions:
        return None
    try:
        release = importlib.metadata.version("mlflow")
    except importlib.metadata.PackageNotFoundError:
        release = "(unknown version)"
    return frozenset(revisions), release, "/".join(heads) or "?"


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


# --------------------------------------------------------------------------- a store found down

# MLflow's HTTP client retries a failed request 7 times with a backoff factor of 2 and a 120 s timeout
# (mlflow/environment_variables.py): about 4 minutes per call on a refused connection, more on a silent
# one, and a job makes several calls. For this process (and the workers it starts), unless the user set
# them: 2 retries, backoff factor 1 (urllib3 waits 0 s, then 2 s, plus up to 1 s of MLflow's jitter) and
# 30 s per attempt. A server that is down fails a call in ~3 s; one that hangs, in 90 s at most; a
# restart or a rate limit of a second or two is still ridden out, and a 30 s answer is still waited for.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}
RECHECK_S = 60.0  # a store known down for longer is probed again (one quick request) before it is trusted
PROBE_TIMEOUT_S = 3.0


class StoreDown(Exception):
    """The tracking store is known to be down, locked, refusing the credentials or failing: raised by
    :func:`ensure_up` before a job touches it, and by every client call that finds it so (:class:`_Guarded`).

    ``str(e)`` is one line: "tracking server URI is down since TIME (REASON); finished jobs are kept: run the
    same command when it is back", or for the other ``kind``s (:data:`PROBLEMS`) "is locked by another process
    since ...", "refuses these credentials since ...", "fails since ..." with how to recover (URI and REASON
    redacted)."""

    def __init__(self, uri: str, since: float, reason: str, kind: str = "down") -> None:
        self.uri, self.since, self.reason, self.kind = redact(uri), since, redact(reason), kind
        what = "server" if _is_http(uri) else "store"
        _, recover = PROBLEMS.get(kind, PROBLEMS["down"])
        super().__init__(f"tracking {what} {self.uri} {_down_phrase(since, self.reason, kind)}; finished jobs are "
                         f"kept: {recover}")


# what each kind of store failure is called, and how to recover: the rest of the one line (StoreDown)
PROBLEMS = {
    "down": ("is down", "run the same command when it is back"),
    "locked": ("is locked by another process",
               "run the same command once that process lets it go (another command's write, a database browser)"),
    "refused": ("refuses these credentials",
                f"set valid ones ({USERNAME_ENV} and {PASSWORD_ENV}, or in the URI) and run the same command"),
    "failing": ("fails", "run the same command once it works again"),
}


def _is_http(uri: str) -> bool:
    return uri.lower().startswith(("http://", "https://"))


def _down_phrase(since: float, reason: str, kind: str = "down") -> str:
    """"is down since TIME (REASON)", or what ``kind`` says instead of "is down" (:data:`PROBLEMS`)."""
    what = PROBLEMS.get(kind, PROBLEMS["down"])[0]
    return f"{what} since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))} ({reason})"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception behind it: causes, contexts, and what requests/urllib3 wrap (a
    ``ConnectionError``'s ``MaxRetryError``, whose ``reason`` is the socket's error)."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if not isinstance(e, BaseException) or any(e is s for s in seen) or len(seen) > 50:
            continue
        seen.append(e)
        todo += [e.__cause__, e.__context__, getattr(e, "reason", None)]
        todo += [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
    return seen


# what MLflow's message says when it wraps a connection failure without chaining it
_DOWN_TEXT = re.compile(r"Max retries exceeded|Failed to establish a new connection|Connection refused|"
                        r"Connection aborted|Connection reset|RemoteDisconnected|Read timed out|"
                        r"failed with timeout exception|too many 50[234] error responses")


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a call to the tracking store, means the store cannot be reached: a
    refused, reset or timed-out connection, a name that does not resolve, or retries exhausted on a
    gateway's 502/503/504, as requests or urllib3 raise them or as MLflow wraps them in an
    ``MlflowException``. Not: a TLS certificate error, an HTTP 4xx/500 answer, or an error of the job."""
    import http.client
    import socket

    kinds: list[type] = [ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError, socket.gaierror,
                         http.client.RemoteDisconnected]
    ssl_errors: list[type] = []
    retry_errors: list[type] = []
    try:
        import requests.exceptions as rq

        kinds += [rq.ConnectionError, rq.Timeout]
        ssl_errors.append(rq.SSLError)
        retry_errors.append(rq.RetryError)
    except ImportError:
        pass
    try:
        import urllib3.exceptions as u3

        kinds += [u3.NewConnectionError, u3.ConnectTimeoutError, u3.ReadTimeoutError, u3.ProtocolError]
        ssl_errors.append(u3.SSLError)
        retry_errors.append(u3.MaxRetryError)
    except ImportError:
        pass
    chain = _chain(exc)
    if any(isinstance(e, tuple(ssl_errors)) for e in chain):  # a certificate problem: not a store that is down
        return False
    for e in chain:
        if isinstance(e, tuple(kinds)):
            return True
        if isinstance(e, tuple(retry_errors)) and re.search(r"too many 50[234] error responses", str(e)):
            return True
        if type(e).__name__ == "MlflowException" and _DOWN_TEXT.search(str(e)):
            return True
    return False


_LOCK_TEXT = re.compile(r"database is locked|database table is locked|lock wait timeout|could not obtain lock|"
                        r"deadlock detected|Deadlock found", re.IGNORECASE)
_DB_ERROR_TEXT = re.compile(r"\((?:sqlite3|psycopg2?|pymysql|MySQLdb|pg8000|pyodbc)[\w.]*\.OperationalError\)\s*([^\n]*)")


def _http_status(e: BaseException) -> int | None:
    """The HTTP status a failure of a call to a server carries: MLflow's exception (its error code, e.g.
    UNAUTHENTICATED = 401) or requests' ``HTTPError`` (an artifact upload)."""
    response = getattr(e, "response", None)
    code = getattr(response, "status_code", None)
    if isinstance(code, int):
        return code
    if hasattr(e, "get_http_status_code") and hasattr(e, "error_code"):  # MlflowException and its kinds
        try:
            return int(e.get_http_status_code())
        except Exception:  # noqa: BLE001 - an MLflow without the mapping
            return None
    return None


def store_problem(exc: BaseException) -> tuple[str, str] | None:
    """(kind, reason) when ``exc``, raised by a call to the tracking store, means the store cannot take calls
    now, whatever the call: ``down`` (:func:`is_connection_error`), ``locked`` (SQLite's "database is locked",
    another database's lock timeout), ``refused`` (HTTP 401 or 403: the credentials) or ``failing`` (any other
    ``OperationalError`` of the database: a disk I/O error, a file it cannot open). None for an error of the
    call itself (a bad parameter, a run that does not exist). ``reason``: one short clause, redacted, never the
    SQL statement or its parameters."""
    if isinstance(exc, StoreDown):
        return exc.kind, exc.reason
    if is_connection_error(exc):
        return "down", _reason(exc)
    chain = _chain(exc)
    for e in chain:
        status = _http_status(e)
        if status in (401, 403):
            code = getattr(e, "error_code", None)
            return "refused", redact(f"HTTP {status}" + (f" {code}" if isinstance(code, str) and code else ""))
    for e in chain:
        text = str(e)
        inner = text.splitlines()[0] if text else type(e).__name__
        match = _DB_ERROR_TEXT.search(text)
        if match:  # MLflow's message quoting SQLAlchemy's: "(sqlite3.OperationalError) database is locked ..."
            inner = match[1]
        is_db_error = type(e).__name__ == "OperationalError" or match is not None
        if is_db_error and _LOCK_TEXT.search(inner):
            return "locked", redact(inner.strip())[:200]
    for e in chain:
        text = str(e)
        match = _DB_ERROR_TEXT.search(text)
        if type(e).__name__ == "OperationalError" or match is not None:
            inner = match[1] if match else re.sub(r"^\([\w.]+\)\s*", "", text.splitlines()[0] if text else "")
            return "failing", redact(f"OperationalError: {inner.strip()}")[:200]
    return None


def _reason(exc: BaseException | str) -> str:
    """The short cause of a failure: the innermost socket-level error behind it, redacted."""
    if isinstance(exc, str):
        return redact(exc)[:300]
    chain = _chain(exc)
    inner = [e for e in chain if isinstance(e, OSError) and not type(e).__module__.startswith("requests")]
    e = inner[-1] if inner else chain[-1]
    text = str(e)
    text = re.sub(r"^<[^>]*>: ", "", text)  # urllib3's "<HTTPConnection object at 0x...>: ..."
    return redact(f"{type(e).__name__}: {text}" if text else type(e).__name__)[:300]


_DOWN: dict[str, dict[str, Any]] = {}  # redacted uri -> {"since", "checked", "reason"}: this process's knowledge


def _marker(sweep_dir: Path | str | None) -> Path | None:
    return Path(sweep_dir) / DOWN_FILE if sweep_dir else None


def _read_marker(uri: str, sweep_dir: Path | str | None) -> dict[str, Any] | None:
    path = _marker(sweep_dir)
    try:
        data = json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("uri") != redact(uri):  # garbled, or about another store
        return None
    try:
        return {"since": float(data["since"]), "checked": float(data["checked"]), "reason": str(data["reason"]),
                "kind": str(data.get("kind") or "down"), "driver": data.get("driver")}
    except (KeyError, TypeError, ValueError):
        return None


def _write_marker(uri: str, sweep_dir: Path | str | None, state: Mapping[str, Any]) -> None:
    path = _marker(sweep_dir)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_text(path, json.dumps({  # staged: a sibling never reads half of it, nor writes through a link
            "uri": redact(uri), "since": state["since"], "checked": state["checked"], "reason": redact(state["reason"]),
            "kind": state.get("kind", "down"), "driver": sweep.current().driver_pid, "pid": os.getpid()}) + "\n")
    except OSError:  # the marker only saves the siblings time: this process knows anyway
        pass


def mark_down(uri: str, sweep_dir: Path | str | None = None, reason: BaseException | str = "",
              kind: str | None = None) -> None:
    """Record that the store ``uri`` is down: in this process, and (``sweep_dir``: the sweep directory)
    in the marker file ``.boundlab_store_down`` there, which the sweep's other worker processes read.

    ``reason``: the exception that showed it (its socket-level cause is kept) or a text; stored redacted.
    The first time it was seen down is kept across calls. Call it when :func:`is_connection_error` is
    true of what a tracking call raised. ``kind``: what :func:`store_problem` calls it (``down`` by default;
    ``locked``, ``refused``, ``failing``), kept with it: the one line says it, and the recheck asks the
    credentials of a store that refused them."""
    key = redact(uri)
    now = time.time()
    sweep_dir = sweep_dir if sweep_dir is not None else _SWEEP_DIRS.get(key)
    known = _DOWN.get(key) or _read_marker(uri, sweep_dir) or {}
    if kind is None:
        found = store_problem(reason) if isinstance(reason, BaseException) else None
        kind = found[0] if found else "down"
    why = (store_problem(reason) or ("", ""))[1] if isinstance(reason, BaseException) and kind != "down" else ""
    state = {"since": known.get("since", now), "checked": now, "reason": why or _reason(reason) or "no answer",
             "kind": kind}
    _DOWN[key] = state
    _write_marker(uri, sweep_dir, state)


def mark_up(uri: str, sweep_dir: Path | str | None = None) -> None:
    """Forget that the store ``uri`` was down, here and in ``sweep_dir``'s marker (e.g. once the command's
    pre-flight :func:`check_store` found it answering again)."""
    _DOWN.pop(redact(uri), None)
    path = _marker(sweep_dir)
    if path is not None and _read_marker(uri, sweep_dir) is not None:
        path.unlink(missing_ok=True)


def _probe(uri: str, kind: str = "down") -> str | None:
    """One quick look at whether the store answers (and, after a refusal, takes the credentials): None if it
    does, else why not."""
    if _is_http(uri):
        return _probe_server(uri, timeout=PROBE_TIMEOUT_S, credentials=kind == "refused")
    return check_store(uri)


_SWEEP_DIRS: dict[str, Path | str] = {}  # redacted uri -> the sweep directory of this process's latest job


def known_down(uri: str, sweep_dir: Path | str | None = None) -> str | None:
    """"down since TIME (REASON)" if the store ``uri`` is known to be down, else None.

    Known from this process's :func:`mark_down` or from ``sweep_dir``'s marker. Knowledge older than
    :data:`RECHECK_S`, or a marker left by another command (an earlier run of the sweep), is checked
    with one quick request first: a store that answers again is forgotten (the marker removed), one
    that still does not is recorded down again (so the siblings trust it for another minute). Cheap
    when nothing is known (a dict look-up and a missing file)."""
    key = redact(uri)
    if sweep_dir is not None:  # where this process's later calls record what they find (_Guarded)
        _SWEEP_DIRS[key] = sweep_dir
    state = _DOWN.get(key)
    marker = _read_marker(uri, sweep_dir)
    if marker is not None and (state is None or marker["checked"] > state["checked"]):
        current_driver = sweep.current().driver_pid
        if marker.get("driver") != current_driver:  # left by an earlier command: never trusted unchecked
            marker["checked"] = 0.0
        state = _DOWN[key] = {k: marker[k] for k in ("since", "checked", "reason", "kind")}
    if state is None:
        return None
    if time.time() - state["checked"] > RECHECK_S:
        kind = state.get("kind", "down")
        why = _probe(uri, kind)
        if why is None:
            mark_up(uri, sweep_dir)
            return None
        mark_down(uri, sweep_dir, why if kind == "down" else state["reason"], kind)  # a lock: its first words
        state = _DOWN[key]
    return _down_phrase(state["since"], state["reason"], state.get("kind", "down")).removeprefix("is ")


def ensure_up(uri: str, sweep_dir: Path | str | None = None) -> None:
    """Raise :class:`StoreDown` if the store ``uri`` is known to be down (:func:`known_down`); else return
    at once, without a request. Call it before a job opens its run."""
    if known_down(uri, sweep_dir) is not None:
        state = _DOWN[redact(uri)]
        raise StoreDown(uri, state["since"], state["reason"], state.get("kind", "down"))


def recheck(uri: str) -> None:
    """At a sweep's start and end: a store this process found down, locked or refusing is looked at again at
    once (one quick request, :func:`_probe`), not trusted for the rest of :data:`RECHECK_S`: a lock released,
    credentials restored or a server back since then let the sweep go on (a command run again in the same
    process, a notebook's, starts afresh). Nothing is asked of a store not known down."""
    key = redact(uri)
    state = _DOWN.get(key)
    if state is None:
        return
    kind = state.get("kind", "down")
    why = _probe(uri, kind)
    if why is None:
        mark_up(uri, _SWEEP_DIRS.get(key))
    else:
        mark_down(uri, None, why if kind == "down" else state["reason"], kind)


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
    # staged: a job reading the marker never sees half of it, and a link planted there is not written through
    files.write_text(sweep_dir / PARENT_FILE, f"{parent_id} {sweep_id}\n")


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
    if redact(uri) in _DOWN:
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
    state = _DOWN[redact(uri)]
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
    client = _client(uri)
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


def git_commit() -> str:
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
    client = _client(uri)
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
    _SWEEP_DIRS[redact(uri)] = sweep_dir  # a store found down from here on is recorded for the sweep's workers
    recheck(uri)
    client = _client(uri)
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
    client = _client(uri)
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
    client = _client(uri)
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
    return redact(uri) in _DOWN and known_down(uri) is not None


def is_finished(uri: str, run_id: str) -> bool:
    """Whether ``run_id`` is a live (not deleted) FINISHED run of the store ``uri``."""
    try:
        run = _client(uri).get_run(run_id)
    except Exception:  # noqa: BLE001 - not in this store, or purged
        return False
    return run.info.status == "FINISHED" and run.info.lifecycle_stage == "active"


def end_run(uri: str, run_id: str, status: str) -> None:
    """End run ``run_id`` ``status``; on a store known down (locked, refusing) nothing is called: the sweep's
    one line already says so, and the same command run again ends it (:func:`resume_parent`)."""
    if _left_to_rerun(uri):
        return
    _client(uri).set_terminated(run_id, status=status)


def finish_parent(uri: str, run_id: str, artifacts: Iterable[Path], metrics: Mapping[str, float], failed: bool,
                  tags: Mapping[str, str] = {}) -> None:
    """End a parent run: its metrics (non-finite values left out), tags (e.g. each bound's verdict), files.
    Its children still RUNNING are ended KILLED first: their jobs are over (a job whose store failed while
    it ended its run leaves it so). A store this process found down is looked at again first (:func:`recheck`)."""
    recheck(uri)
    end_children(uri, run_id, "its job ended without ending its run (the tracking store failed meanwhile)")
    client = _client(uri)
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
    client = _client(uri)
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
            self.client = _client(uri)
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


def finish_pack(run: JobRun, params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: Iterable[Path],
                failed: bool = False) -> None:
    """End a pack's child run (a packed sweep, ``pipeline.sweep.pack``): its params (index, size, the ranges of its
    swept keys), its aggregate metrics (non-finite values left out) and its results parts as artifacts
    (under ``results/``); FAILED with a ``boundlab.error`` tag when a member failed."""
    tags = {"boundlab.error": "one or more of its runs failed (see the pack's part markers)"} if failed else {}
    with _watch(run.uri):
        _log(run.client, run.run_id, params=params,
             metrics=[(k, v, 0) for k, v in metrics.items() if math.isfinite(v)], tags=tags)
        for path in artifacts:
            run.client.log_artifact(run.run_id, str(path), "results")
        run.client.set_terminated(run.run_id, status="FAILED" if failed else "FINISHED")
    OPEN_RUNS.pop(run.run_id, None)


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


OPEN_RUNS: dict[str, JobRun] = {}  # this process's job runs not ended yet (end_open_runs on a hard stop)


def end_open_runs(reason: str) -> None:
    """End this process's open job runs KILLED with ``reason``, from a thread other than the one running the
    job (which is stuck in a native call, or about to be stopped): a hard stop leaves no run RUNNING."""
    for run in list(OPEN_RUNS.values()):
        try:
            run.fail(KeyboardInterrupt(reason))
        except Exception:  # noqa: BLE001 - stopping matters more; a rerun marks it KILLED
            pass
