"""A tracking store that stops answering mid-sweep costs each later job a few seconds, not minutes.

MLflow's HTTP retries are bounded for this process (:data:`HTTP_DEFAULTS`), and once a job has seen the server
down (:func:`is_connection_error`, :func:`mark_down`) the next ones fail at once (:func:`ensure_up` raises
:class:`StoreDown`), in this process and, through a marker file in the sweep directory (:data:`DOWN_FILE`), in its
siblings. A store that is locked by another process (SQLite's "database is locked"), that refuses the credentials
(HTTP 401/403) or whose database fails (SQLAlchemy's ``OperationalError``) is treated the same way
(:func:`store_problem`): one line naming the store, what happened and how to recover, never a SQL dump or a
traceback. Nothing here depends on the backend but the wording of MLflow's errors it recognises.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Mapping

from pipeline import files
from pipeline.sweep import context as sweep
import pipeline.tracking.health as health
from pipeline.tracking.secrets import PASSWORD_ENV, USERNAME_ENV, redact
from pipeline.tracking.health import _LOCK_TEXT, check_store

DOWN_FILE = ".boundlab_store_down"  # in the sweep directory: the store was found down (mark_down)


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
        return health._probe_server(uri, timeout=PROBE_TIMEOUT_S, credentials=kind == "refused")
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
