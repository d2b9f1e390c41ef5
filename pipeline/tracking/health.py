"""Whether a tracking store can be used before a sweep starts: :func:`check_store` gives one clause why not (a server
that does not answer or refuses the credentials, a SQLite file that is not MLflow's or of a newer schema, a missing
database driver); :func:`tracking_uri` is the store a command uses."""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping

from pipeline.paths import project_root
from pipeline.tracking.secrets import PASSWORD_ENV, USERNAME_ENV, _auth_header, redact, split_credentials

# what a database's error says when another process holds its lock (SQLite, PostgreSQL, MySQL)
_LOCK_TEXT = re.compile(r"database is locked|database table is locked|lock wait timeout|could not obtain lock|"
                        r"deadlock detected|Deadlock found", re.IGNORECASE)


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
