"""The tracking store's reliability (pipeline/tracking/): credentials kept out of the store and the
messages, a server that dies mid-sweep failing the next jobs at once, SQLite files that are not (or
not yet) MLflow's refused before MLflow touches them, stores that cannot keep runs (in-memory, file, read-only,
unreachable, a missing driver) refused before any work, parallel sweeps on one store losing nothing, and the
parent-run marker (a garbled one means no parent to resume)."""

from __future__ import annotations

import base64
import shutil
import http.server
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import all_runs as _all_runs
from helpers import fault_env as _env
from helpers import migrated_store
from helpers import mlflow_store as _store
from helpers import serving
from helpers import sweep_runs as _runs
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import tracking
from pipeline.sweep import context as sweep
from pipeline.cli import main
from pipeline.tracking import StoreDown, ensure_up, is_connection_error, known_down, mark_down, redact, split_credentials
from pipeline.tracking.down import DOWN_FILE, mark_up
from pipeline.tracking.health import check_store

HOST = "127.0.0.1"
SECRET = "s3cr3t-Pw"  # in every credentialed URI below: it must never come out


@pytest.fixture(autouse=True)
def _fresh_state(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each test starts with no store known down, no cached client, no credentials (not even a
    ~/.mlflow/credentials), and gets its environment back (``_open_client`` sets MLflow's variables)."""
    saved = dict(os.environ)
    monkeypatch.setattr(tracking.down, "_DOWN", {})
    monkeypatch.setattr(tracking.clients, "_CLIENTS", {})
    monkeypatch.setattr(tracking.runs, "_EXPERIMENTS", {})
    secrets = tracking.secrets
    for name in (*tracking.HTTP_DEFAULTS, secrets.USERNAME_ENV, secrets.PASSWORD_ENV, secrets.TOKEN_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    yield
    os.environ.clear()
    os.environ.update(saved)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- redact

REDACT_CASES = [
    ("http://user:s3cr3t-Pw@host:5000", "http://user:***@host:5000"),
    ("https://user:s3cr3t-Pw@mlflow.example.org", "https://user:***@mlflow.example.org"),
    ("https://user:s3cr3t-Pw@mlflow.example.org/prefix/?x=1", "https://user:***@mlflow.example.org/prefix/?x=1"),
    ("postgresql+psycopg2://u:s3cr3t-Pw@db.example:5432/mlflow", "postgresql+psycopg2://u:***@db.example:5432/mlflow"),
    ("mysql+pymysql://u:s3cr3t-Pw@db/mlflow", "mysql+pymysql://u:***@db/mlflow"),
    ("http://user:s3cr3t%40Pw@host:5000/api", "http://user:***@host:5000/api"),  # '@' percent-encoded
    ("http://user:s3cr3t@Pw@host:5000/api", "http://user:***@host:5000/api"),  # '@' not encoded: the last one ends it
    ("the store postgresql://u:s3cr3t-Pw@h/db, reached at 5 s, failed",
     "the store postgresql://u:***@h/db, reached at 5 s, failed"),
    ("tracking store 'http://a:s3cr3t-Pw@h:1': no", "tracking store 'http://a:***@h:1': no"),
    ("a=http://u:s3cr3t-Pw@h,b=https://v:s3cr3t-Pw@k", "a=http://u:***@h,b=https://v:***@k"),  # two, no space between
    ("http://h:5000/x?token=s3cr3t-Pw&n=1", "http://h:5000/x?token=***&n=1"),
    ("postgresql://h/db?sslmode=require&password=s3cr3t-Pw", "postgresql://h/db?sslmode=require&password=***"),
    ("https://h/x?X-Amz-Signature=s3cr3t-Pw&api_key=s3cr3t-Pw", "https://h/x?X-Amz-Signature=***&api_key=***"),
    ("host=db user=u password=s3cr3t-Pw dbname=mlflow", "host=db user=u password=*** dbname=mlflow"),
    ("MLFLOW_TRACKING_PASSWORD=s3cr3t-Pw boundlab -m", "MLFLOW_TRACKING_PASSWORD=*** boundlab -m"),
    ("connect u:s3cr3t-Pw@db.example for it", "connect u:***@db.example for it"),
]
UNTOUCHED = [
    "http://host:5000", "https://user@host/x", "sqlite:////tmp/mlflow.db", "perceptron gamma=0.1 seed=0",
    "[2026-01-01 10:11:12,345][boundlab][INFO] - ratio 0.04 (holds at every t)", "git@github.com:org/repo.git",
    "dataset.tokenizer=bert", "novikoff/ratio", "",
]


@pytest.mark.parametrize(("text", "expected"), REDACT_CASES, ids=[c[0][:40] for c in REDACT_CASES])
def test_redact_hides_the_password_and_keeps_the_rest(text: str, expected: str) -> None:
    out = redact(text)
    assert out == expected
    assert SECRET not in out and "s3cr3t" not in out
    assert redact(out) == out  # idempotent


@pytest.mark.parametrize("text", UNTOUCHED)
def test_redact_leaves_text_without_credentials_alone(text: str) -> None:
    assert redact(text) == text


def test_redact_in_a_traceback() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as e:
            raise RuntimeError(f"API request to https://ann:{SECRET}@h.example:443/api/2.0/mlflow/runs/create failed") from e
    except RuntimeError:
        import traceback

        text = traceback.format_exc()
    assert SECRET in text
    out = redact(text)
    assert SECRET not in out and "https://ann:***@h.example:443/api/2.0/mlflow/runs/create" in out
    assert out.count("\n") == text.count("\n") and "ConnectionRefusedError" in out


_PASSWORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=%@:",
                     min_size=1, max_size=24)
_WORDS = st.text(alphabet="abcdefghij klmnop,.;()'\"\n", max_size=30)


@settings(max_examples=300, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "postgresql", "postgresql+psycopg2", "mysql+pymysql", "mssql+pyodbc"]),
       user=st.text(alphabet="abcdefghijk0123456789._-", min_size=1, max_size=10),
       password=_PASSWORDS,
       host=st.sampled_from(["host", "db.example.org", "10.0.0.7", "[::1]"]),
       port=st.one_of(st.none(), st.integers(1, 65535)),
       path=st.sampled_from(["", "/", "/mlflow", "/db?sslmode=require"]),
       before=_WORDS, after=_WORDS)
def test_redact_never_lets_a_uri_password_through(scheme: str, user: str, password: str, host: str, port: int | None,
                                                  path: str, before: str, after: str) -> None:
    secret = "ZZ" + password  # 'ZZ' appears nowhere else: any 'ZZ' left is the password
    netloc = f"{host}:{port}" if port else host
    uri = f"{scheme}://{user}:{secret}@{netloc}{path}"
    text = f"{before} {uri} {after}"
    out = redact(text)
    assert "ZZ" not in out, out
    assert f"{scheme}://{user}:***@{netloc}" in out  # the rest of the URI stays readable
    assert redact(out) == out


# --------------------------------------------------------------------------- split_credentials

SPLITS = [
    ("http://ann:s3cr3t-Pw@host:5000", "http://host:5000",
     {"MLFLOW_TRACKING_USERNAME": "ann", "MLFLOW_TRACKING_PASSWORD": SECRET}),
    ("https://ann:s3%40cr%3At@mlflow.example/prefix", "https://mlflow.example/prefix",
     {"MLFLOW_TRACKING_USERNAME": "ann", "MLFLOW_TRACKING_PASSWORD": "s3@cr:t"}),
    ("HTTPS://ann:pw@h", "https://h", {"MLFLOW_TRACKING_USERNAME": "ann", "MLFLOW_TRACKING_PASSWORD": "pw"}),
    ("http://ann@host:5000", "http://host:5000", {"MLFLOW_TRACKING_USERNAME": "ann"}),
    ("http://host:5000", "http://host:5000", {}),
    ("postgresql://u:s3cr3t-Pw@db/mlflow", "postgresql://u:s3cr3t-Pw@db/mlflow", {}),  # SQLAlchemy needs it
    ("mysql+pymysql://u:pw@db/mlflow", "mysql+pymysql://u:pw@db/mlflow", {}),
    ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db", {}),
]


@pytest.mark.parametrize(("uri", "plain", "env"), SPLITS, ids=[s[0] for s in SPLITS])
def test_split_credentials(uri: str, plain: str, env: dict[str, str]) -> None:
    assert split_credentials(uri) == (plain, env)


def test_mlflow_reads_the_variables_split_credentials_gives() -> None:
    """The names are MLflow's own: what its REST client sends as basic auth comes from them."""
    from mlflow.utils.credentials import get_default_host_creds

    plain, env = split_credentials(f"http://ann:{SECRET}@{HOST}:5000")
    os.environ.update(env)
    creds = get_default_host_creds(plain)
    assert (creds.host, creds.username, creds.password) == (f"http://{HOST}:5000", "ann", SECRET)


# --------------------------------------------------------------------------- check_store of a server


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    password = SECRET
    guard_health = False
    seen: list[tuple[str, str | None]]


class _Handler(http.server.BaseHTTPRequestHandler):
    """/health open (as MLflow's auth leaves it), /api/ guarded by basic auth ann:SECRET; records every
    request's path and Authorization header."""

    def do_GET(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        auth = self.headers.get("Authorization")
        server.seen.append((self.path, auth))
        good = auth == "Basic " + base64.b64encode(f"ann:{server.password}".encode()).decode()
        if (self.path.startswith("/api/") or server.guard_health) and not good:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="mlflow"')
            self.end_headers()
            return
        body = b"OK" if self.path == "/health" else b'{"experiments": []}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def guarded() -> Iterator[_Server]:
    server = _Server((HOST, 0), _Handler)
    server.seen = []
    with serving(server):
        yield server


def _url(server: _Server, userinfo: str = "") -> str:
    return f"http://{userinfo}{HOST}:{server.server_address[1]}"


def test_check_store_takes_a_server_with_credentials_in_its_uri(guarded: _Server) -> None:
    assert check_store(_url(guarded, f"ann:{SECRET}@")) is None
    assert [p for p, _ in guarded.seen] == ["/health", "/api/2.0/mlflow/experiments/search?max_results=1"]
    assert all(auth and auth.startswith("Basic ") for _, auth in guarded.seen)  # sent as a header, not in the URL


def test_check_store_takes_credentials_from_mlflows_variables(guarded: _Server) -> None:
    os.environ.update({"MLFLOW_TRACKING_USERNAME": "ann", "MLFLOW_TRACKING_PASSWORD": SECRET})
    assert check_store(_url(guarded)) is None


@pytest.mark.parametrize(("userinfo", "guard_health", "fragment"), [
    ("ann:wrong-Pw@", False, "the server refuses these credentials (HTTP 401"),
    ("ann:wrong-Pw@", True, "the server refuses these credentials (HTTP 401"),  # a proxy guarding every route
    ("", False, "the server asks for credentials (HTTP 401"),
])
def test_check_store_tells_refused_credentials(guarded: _Server, userinfo: str, guard_health: bool, fragment: str) -> None:
    guarded.guard_health = guard_health
    why = check_store(_url(guarded, userinfo))
    assert why is not None and fragment in why and "wrong-Pw" not in why


def test_check_store_of_a_dead_server_is_one_redacted_clause() -> None:
    why = check_store(f"http://ann:{SECRET}@{HOST}:{_closed_port()}")
    assert why is not None and why.startswith("the server does not answer") and SECRET not in why


# --------------------------------------------------------------------------- nothing secret logged


class _FakeClient:
    """Records what would be sent to the store."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> SimpleNamespace:
        self.sent.append(("create_run", run_name, dict(tags)))
        return SimpleNamespace(info=SimpleNamespace(run_id="f" * 32))

    def log_batch(self, run_id: str, metrics: list, params: list, tags: list) -> None:
        self.sent.append(("log_batch", [(p.key, p.value) for p in params], [(t.key, t.value) for t in tags]))

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        self.sent.append(("set_tag", key, value))

    def set_terminated(self, run_id: str, status: str) -> None:
        self.sent.append(("set_terminated", status))

    def log_artifact(self, run_id: str, path: str) -> None:
        self.sent.append(("log_artifact", path))


@pytest.fixture
def fake_store(monkeypatch: pytest.MonkeyPatch) -> _FakeClient:
    client = _FakeClient()
    monkeypatch.setattr(tracking.clients, "_client", lambda uri: client)
    monkeypatch.setattr(tracking.runs, "experiment_id", lambda uri, name: "0")
    return client


def _table_and_curve():  # noqa: ANN202
    import pandas as pd

    table = pd.DataFrame([{"bound": "novikoff", "quantity": "mistakes", "empirical": 4.0, "applicable": True,
                           "theoretical": 100.0, "ratio": 0.04, "trivial": 50.0, "informative": False,
                           "max_ratio_over_t": 0.05, "guarantee": "D", "holds": True, "data_hash": "abc"}])
    curve = pd.DataFrame({"quantity": ["mistakes"] * 3, "t": [1, 2, 3], "empirical": [0.0, 1.0, 1.0]})
    return table, curve


def test_a_jobs_run_never_sends_a_password_to_the_store(fake_store: _FakeClient) -> None:
    uri = f"http://ann:{SECRET}@{HOST}:5000"
    run = tracking.runs.JobRun(uri, experiment="e", name=f"perceptron tracking.uri={uri}", parent_id=None,
                          tags={"boundlab.output_dir": "/x", "mlflow.note.content": f"sent to {uri}"})
    table, curve = _table_and_curve()
    run.finish({"tracking.uri": uri, "gamma": 0.1, "db": f"postgresql://u:{SECRET}@db/x"}, table, curve, [])
    run.fail(RuntimeError(f"API request to {uri}/api/2.0/mlflow/runs/update failed"))
    tracking.runs.start_parent(uri, "e", "sweep", question=f"reached through {uri}?", sweep_id="s",
                          tags={"boundlab.store": uri}, params={"tracking.uri": uri})
    sent = json.dumps(fake_store.sent)
    assert SECRET not in sent, sent
    # what was redacted is still there, readable
    assert f"http://ann:***@{HOST}:5000" in sent and "postgresql://u:***@db/x" in sent and '"gamma", "0.1"' in sent


def test_resume_compares_the_grid_as_it_was_logged(fake_store: _FakeClient, tmp_path: Path) -> None:
    """A parent whose params were redacted is the same grid as the command's unredacted one."""
    uri = f"http://ann:{SECRET}@{HOST}:5000"
    params = {"tracking.uri": uri, "seed": "0,1"}
    logged = {k: redact(v) for k, v in params.items()}
    parent = SimpleNamespace(info=SimpleNamespace(lifecycle_stage="active", experiment_id="0"),
                             data=SimpleNamespace(params=logged))
    fake_store.get_run = lambda run_id: parent  # type: ignore[attr-defined]
    fake_store.search_runs = lambda *a, **k: []  # type: ignore[attr-defined]
    fake_store.update_run = lambda run_id, status: None  # type: ignore[attr-defined]
    (tmp_path / tracking.PARENT_FILE).write_text(f"{'a' * 32} sweep1\n")
    assert tracking.runs.resume_parent(uri, tmp_path, params=params) == ("a" * 32, "sweep1", 0)


# --------------------------------------------------------------------------- connection errors


def _mlflow_error_from(port: int) -> BaseException:
    """What MLflow raises for a call to a server at ``port`` (no retries: fast)."""
    import mlflow

    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = "2"
    with pytest.raises(Exception) as caught:  # noqa: PT011 - whatever MLflow raises is the subject
        mlflow.MlflowClient(tracking_uri=f"http://{HOST}:{port}").get_experiment_by_name("x")
    return caught.value


def test_mlflows_error_for_a_refused_connection_is_a_connection_error() -> None:
    error = _mlflow_error_from(_closed_port())
    assert type(error).__name__ == "MlflowException" and is_connection_error(error)
    assert tracking.down._reason(error) == "ConnectionRefusedError: [Errno 111] Connection refused"


def test_mlflows_error_for_a_refused_request_is_not(guarded: _Server) -> None:
    error = _mlflow_error_from(guarded.server_address[1])  # the fake server answers 401 to /api/
    assert not is_connection_error(error)


def _built_errors() -> list[tuple[str, BaseException, bool]]:
    import requests.exceptions as rq
    import urllib3.exceptions as u3
    from mlflow.exceptions import MlflowException

    conn = u3.NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused")
    wrapped = MlflowException("API request to http://h:5000/api/2.0/mlflow/runs/create failed with exception "
                              "HTTPConnectionPool(host='h', port=5000): Max retries exceeded with url: ...")
    return [
        ("requests ConnectionError", rq.ConnectionError(u3.MaxRetryError(None, "/x", conn)), True),
        ("requests ReadTimeout", rq.ReadTimeout("Read timed out. (read timeout=30)"), True),
        ("urllib3 MaxRetryError", u3.MaxRetryError(None, "/x", conn), True),
        ("MlflowException by its text", wrapped, True),
        ("ConnectionResetError", ConnectionResetError(104, "Connection reset by peer"), True),
        ("retries exhausted on 503", rq.RetryError("too many 503 error responses"), True),
        ("retries exhausted on 500", rq.RetryError("too many 500 error responses"), False),
        ("TLS certificate", rq.SSLError("certificate verify failed"), False),
        ("MlflowException of the store", MlflowException("Run 'abc' not found"), False),
        ("HTTP 404", rq.HTTPError("404 Client Error: Not Found"), False),
        ("the job's own error", ValueError("gamma must be positive"), False),
        ("a lock's timeout", TimeoutError("waiting for process 12"), False),
    ]


@pytest.mark.parametrize("case", range(12))
def test_is_connection_error(case: int) -> None:
    name, error, expected = _built_errors()[case]
    assert is_connection_error(error) is expected, name


# --------------------------------------------------------------------------- known down, marker, ensure_up


def test_ensure_up_raises_at_once_after_mark_down(tmp_path: Path) -> None:
    uri = f"http://ann:{SECRET}@{HOST}:{_closed_port()}"
    ensure_up(uri, tmp_path)  # nothing known: returns (no request: the port is closed)
    mark_down(uri, tmp_path, ConnectionRefusedError(111, "Connection refused"))
    started = time.perf_counter()
    with pytest.raises(StoreDown) as down:
        ensure_up(uri, tmp_path)
    assert time.perf_counter() - started < 0.1
    text = str(down.value)
    assert text.startswith(f"tracking server http://ann:***@{HOST}:") and " is down since " in text
    assert "(ConnectionRefusedError: [Errno 111] Connection refused); finished jobs are kept: run the same command " \
           "when it is back" in text and SECRET not in text
    marker = (tmp_path / DOWN_FILE).read_text()
    assert SECRET not in marker and json.loads(marker)["reason"].startswith("ConnectionRefusedError")


def test_a_sibling_process_learns_it_from_the_marker(tmp_path: Path) -> None:
    uri = f"http://{HOST}:{_closed_port()}"
    mark_down(uri, tmp_path, "no answer")
    tracking.down._DOWN.clear()  # another worker of the same sweep: only the marker tells it
    started = time.perf_counter()
    assert "down since" in (known_down(uri, tmp_path) or "")
    with pytest.raises(StoreDown):
        ensure_up(uri, tmp_path)
    assert time.perf_counter() - started < 0.1  # trusted: no probe
    assert known_down(uri, None) is not None  # and now this process knows too
    assert known_down(f"http://{HOST}:1", tmp_path) is None  # the marker is about another store


def _age_marker(sweep_dir: Path, seconds: float, **changes: object) -> None:
    path = sweep_dir / DOWN_FILE
    data = json.loads(path.read_text())
    data["checked"] -= seconds
    data.update(changes)
    path.write_text(json.dumps(data))
    tracking.down._DOWN.clear()


@pytest.mark.parametrize("why_checked", ["older than a minute", "left by another command"])
def test_a_stale_marker_is_checked_once(tmp_path: Path, guarded: _Server, why_checked: str) -> None:
    uri = _url(guarded)
    mark_down(uri, tmp_path, "no answer")
    if why_checked == "older than a minute":
        _age_marker(tmp_path, tracking.down.RECHECK_S + 5)
    else:
        _age_marker(tmp_path, 0, driver=-1)
    assert known_down(uri, tmp_path) is None  # the server answers /health again
    assert [p for p, _ in guarded.seen] == ["/health"] and not (tmp_path / DOWN_FILE).exists()
    ensure_up(uri, tmp_path)


def test_a_stale_marker_of_a_store_still_down_is_renewed(tmp_path: Path) -> None:
    uri = f"http://{HOST}:{_closed_port()}"
    mark_down(uri, tmp_path, "first reason")
    since = json.loads((tmp_path / DOWN_FILE).read_text())["since"]
    _age_marker(tmp_path, tracking.down.RECHECK_S + 5)
    with pytest.raises(StoreDown, match="does not answer"):
        ensure_up(uri, tmp_path)
    data = json.loads((tmp_path / DOWN_FILE).read_text())
    assert data["since"] == since and time.time() - data["checked"] < 5  # down since the first time; checked now


@pytest.mark.parametrize("content", ["", "garbage", "{}", '{"uri": 3}', '{"uri": "x", "since": "y"}'])
def test_a_garbled_marker_is_ignored(tmp_path: Path, content: str) -> None:
    (tmp_path / DOWN_FILE).write_text(content)
    assert known_down(f"http://{HOST}:1", tmp_path) is None


def test_mark_up_forgets(tmp_path: Path) -> None:
    uri = f"http://{HOST}:{_closed_port()}"
    mark_down(uri, tmp_path, "no answer")
    mark_up(uri, tmp_path)
    assert known_down(uri, tmp_path) is None and not (tmp_path / DOWN_FILE).exists()


def test_a_jobs_connection_failure_fails_the_next_job_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without any wiring: JobRun marks the store down for its process, and the next JobRun, or the
    failure record of the first, raises StoreDown without a request."""
    uri = f"http://{HOST}:{_closed_port()}"
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"  # the bounded defaults are tested against a real server
    with pytest.raises(Exception) as first:  # noqa: PT011 - classified by is_connection_error below
        tracking.runs.JobRun(uri, experiment="e", name="n", parent_id=None, tags={})
    assert is_connection_error(first.value)
    monkeypatch.setattr(tracking.clients, "_open_client", lambda uri: pytest.fail("a request to a store known down"))
    monkeypatch.setattr(tracking.clients, "_CLIENTS", {})
    started = time.perf_counter()
    with pytest.raises(StoreDown):
        tracking.runs.JobRun(uri, experiment="e", name="n", parent_id=None, tags={})
    assert time.perf_counter() - started < 0.1


@pytest.fixture
def made_clients(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tracking URIs ``_open_client`` makes MLflow clients of (none is made)."""
    import mlflow

    made: list[str] = []
    monkeypatch.setattr(mlflow, "MlflowClient", lambda tracking_uri: made.append(tracking_uri))
    return made


def test_open_client_bounds_mlflows_retries_unless_the_user_chose(made_clients: list[str]) -> None:
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = "77"  # the user's choice stays
    tracking.clients._open_client(f"http://ann:{SECRET}@{HOST}:5000")
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2" and os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] == "1"
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "77"
    assert (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]) == ("ann", SECRET)
    assert made_clients == [f"http://{HOST}:5000"]  # what MLflow's errors quote: no password


def test_a_database_store_is_left_to_mlflows_defaults(made_clients: list[str]) -> None:
    tracking.clients._open_client(f"postgresql://u:{SECRET}@db/mlflow")
    assert not set(tracking.HTTP_DEFAULTS) & set(os.environ) and tracking.secrets.PASSWORD_ENV not in os.environ
    assert made_clients == [f"postgresql://u:{SECRET}@db/mlflow"]  # SQLAlchemy needs the password


# --------------------------------------------------------------------------- SQLite files


def _sqlite(path: Path, *statements: str) -> Path:
    with sqlite3.connect(path) as conn:
        for s in statements:
            conn.execute(s)
    conn.close()
    return path


def _mlflow_head() -> str:
    """MLflow's own answer (alembic's script directory), not the one pipeline.tracking.health reads from the scripts' text."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    return _get_latest_schema_revision()


def _fake_mlflow_db(path: Path, version: str | None) -> Path:
    statements = ["CREATE TABLE experiments (x)", "CREATE TABLE runs (x)", "CREATE TABLE metrics (x)"]
    if version is not None:
        statements += ["CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)",
                       f"INSERT INTO alembic_version VALUES ('{version}')"]
    return _sqlite(path, *statements)


SQLITE_REFUSED = [
    ("application", lambda p: _sqlite(p, "CREATE TABLE users (id)", "CREATE TABLE orders (id)"),
     ("app.db is a SQLite database with other tables (orders, users), not an MLflow store: point tracking.uri at a "
      "new file or an MLflow database")),
    ("application with alembic", lambda p: _sqlite(p, "CREATE TABLE alembic_version (version_num)", "CREATE TABLE users (id)"),
     "other tables (alembic_version, users), not an MLflow store"),
    ("many tables", lambda p: _sqlite(p, *(f"CREATE TABLE t{i} (x)" for i in range(9))),
     "other tables (t0, t1, t2, t3, t4, t5, ... (9 tables)), not an MLflow store"),
    ("half MLflow, half not",
     lambda p: _sqlite(p, "CREATE TABLE experiments (x)", "CREATE TABLE runs (x)", "CREATE TABLE users (x)"),
     "other tables (experiments, runs, users)"),
    ("random bytes", lambda p: (p.write_bytes(bytes(range(256)) * 16), p)[1],
     ("app.db is not a SQLite database (its 4096 bytes do not start with SQLite's header): point tracking.uri at a new "
      "file or an MLflow database")),
    ("text", lambda p: (p.write_text("name,value\nx,1\n"), p)[1], "is not a SQLite database (its 15 bytes"),
    ("newer MLflow", lambda p: _fake_mlflow_db(p, "ffffffffffff"),
     ("its MLflow schema version ffffffffffff is unknown to the installed MLflow {release} (its newest is {head}): a "
      "newer MLflow wrote this store; upgrade mlflow (pip install -U mlflow) or point tracking.uri at another store")),
    ("a directory", lambda p: (p.mkdir(), p)[1], "app.db is a directory, not a database file"),
]


@pytest.mark.parametrize(("make", "fragment"), [c[1:] for c in SQLITE_REFUSED], ids=[c[0] for c in SQLITE_REFUSED])
def test_a_sqlite_file_that_is_not_an_mlflow_store_is_refused_untouched(tmp_path: Path, make, fragment: str) -> None:  # noqa: ANN001
    import importlib.metadata

    path = make(tmp_path / "app.db")
    before = path.read_bytes() if path.is_file() else None
    why = check_store(f"sqlite:///{path}")
    assert why is not None and fragment.format(release=importlib.metadata.version("mlflow"), head=_mlflow_head()) in why, why
    assert (path.read_bytes() if path.is_file() else None) == before


SQLITE_TAKEN = [
    ("new file", lambda p: p),
    ("empty file", lambda p: (p.touch(), p)[1]),
    ("SQLite without tables", lambda p: _sqlite(p, "PRAGMA user_version = 3")),
    ("tables dropped", lambda p: _sqlite(p, "CREATE TABLE t (x)", "DROP TABLE t")),
    ("MLflow at the installed head", lambda p: _fake_mlflow_db(p, _mlflow_head())),
    ("MLflow at an older revision", lambda p: _fake_mlflow_db(p, "451aebb31d03")),  # MLflow's first migration
    ("MLflow's creation cut short", lambda p: _fake_mlflow_db(p, None)),
]


@pytest.mark.parametrize("make", [c[1] for c in SQLITE_TAKEN], ids=[c[0] for c in SQLITE_TAKEN])
def test_an_mlflow_store_or_a_new_one_is_taken(tmp_path: Path, make) -> None:  # noqa: ANN001
    path = make(tmp_path / "mlflow.db")
    assert check_store(f"sqlite:///{path}") is None


def test_the_command_refuses_an_application_database_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture) -> None:
    from pipeline.cli import main

    db = _sqlite(tmp_path / "app.db", "CREATE TABLE users (id)")
    before = db.read_bytes()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    with pytest.raises(SystemExit) as exit_:
        main(["-m", "seed=0,1", "n=50"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "not an MLflow store" in err, err
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


# --------------------------------------------------------------------------- a real server dies mid-sweep


def _start_mlflow_server(root: Path) -> tuple[subprocess.Popen, str]:
    from helpers import migrated_store

    uri = migrated_store(root / "mlflow.db")  # a migrated store: the server starts without the migrations' seconds
    assert check_store(uri) is None  # a store MLflow made is MLflow's
    exe = Path(sys.executable).parent / "mlflow"
    port = _closed_port()
    proc = subprocess.Popen(
        [str(exe), "server", "--host", HOST, "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}", "--default-artifact-root", str(root / "artifacts")],
        cwd=root, env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 25
    while time.monotonic() < deadline and proc.poll() is None:
        if tracking.health._probe_server(url, timeout=1.0, credentials=False) is None:
            return proc, url
        time.sleep(0.25)
    _kill(proc)
    pytest.skip(f"mlflow server did not start within 25 s (exit code {proc.returncode})")


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the server and its uvicorn worker: the group started for it
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.mark.slow  # an MLflow server, killed mid-way
def test_a_server_killed_mid_sweep_fails_the_next_jobs_within_seconds(tmp_path: Path) -> None:
    proc, url = _start_mlflow_server(tmp_path)
    sweep_dir = tmp_path / "sweep"
    try:
        run = tracking.runs.JobRun(url, experiment="e", name="job 0", parent_id=None, tags={})
        assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"  # the bounded defaults, not MLflow's 7
        table, curve = _table_and_curve()
        run.finish({"seed": 0}, table, curve, [])
        second = tracking.runs.JobRun(url, experiment="e", name="job 1", parent_id=None, tags={})
    finally:
        _kill(proc)
    started = time.perf_counter()
    with pytest.raises(Exception) as dead:  # noqa: PT011 - classified by is_connection_error below
        second.finish({"seed": 1}, table, curve, [])
    took = time.perf_counter() - started
    assert is_connection_error(dead.value) and took < 10, (took, dead.value)  # MLflow's defaults: ~4 min a call
    mark_down(url, sweep_dir, dead.value)
    tracking.down._DOWN.clear()  # a sibling worker: only the marker tells it
    started = time.perf_counter()
    with pytest.raises(StoreDown, match=r"is down since .* \(ConnectionRefusedError"):
        ensure_up(url, sweep_dir)
    with pytest.raises(StoreDown):
        tracking.runs.JobRun(url, experiment="e", name="job 2", parent_id=None, tags={})
    assert time.perf_counter() - started < 0.5
    print(f"\na call to the killed server failed in {took:.1f} s; the next job in "
          f"{time.perf_counter() - started:.3f} s")


# --- the command: a credentialed URL is accepted, its password reaches no saved config --------------------

@pytest.mark.parametrize("arg", ["tracking.uri=http://ann:s3cr%40t@127.0.0.1:5000", "+tracking.uri=http://ann:s3cr%40t@127.0.0.1:5000",
                                 "tracking.uri='http://ann:s3cr%40t@127.0.0.1:5000'"])
def test_the_command_moves_a_servers_credentials_out_of_its_overrides(arg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import _credentials_aside

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    out = _credentials_aside(["-m", "seed=0,1", arg])
    assert out[:2] == ["-m", "seed=0,1"] and "s3cr" not in out[2] and "ann" not in out[2]
    assert out[2].split("=", 1)[1].strip("'") == "http://127.0.0.1:5000"
    assert os.environ["MLFLOW_TRACKING_USERNAME"] == "ann" and os.environ["MLFLOW_TRACKING_PASSWORD"] == "s3cr@t"


def test_the_command_moves_credentials_out_of_the_environments_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import _credentials_aside

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://bob:pw@mlflow.example.org")
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    assert _credentials_aside(["n=50"]) == ["n=50"]
    assert os.environ["MLFLOW_TRACKING_URI"] == "https://mlflow.example.org"
    assert (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]) == ("bob", "pw")


def test_a_database_password_is_hidden_in_the_configs_hydra_saved(tmp_path: Path) -> None:
    from pipeline.sweep.stages import redact_saved

    saved = tmp_path / ".hydra"
    saved.mkdir()
    (saved / "overrides.yaml").write_text("- tracking.uri=postgresql://ann:hunter2@db.example.org/mlflow\n- seed=0\n")
    (saved / "config.yaml").write_text("tracking:\n  uri: postgresql://ann:hunter2@db.example.org/mlflow\nseed: 0\n")
    (saved / "hydra.yaml").write_text("hydra:\n  run:\n    dir: outputs\n")
    before = (saved / "hydra.yaml").read_bytes()
    redact_saved(saved)
    for path in saved.iterdir():
        assert "hunter2" not in path.read_text(), path
    assert "postgresql://ann:***@db.example.org/mlflow" in (saved / "config.yaml").read_text()
    assert (saved / "hydra.yaml").read_bytes() == before  # nothing to hide: not rewritten


slow = pytest.mark.slow


# ---------------------------------------------------------------- the parent-run marker


PARENT_MARKERS = {
    "empty": "", "blank": " \n\n", "one_field": "0123456789abcdef0123456789abcdef\n",
    "three_fields": "0123456789abcdef0123456789abcdef s x\n", "not_a_run_id": "parent sweep\n",
    "short_id": "0123 sweep\n", "upper_hex": "0123456789ABCDEF0123456789ABCDEF sweep\n",
    "binary": "\x00\x01\x02 \x03", "truncated": "0123456789abcdef01234",
}


@pytest.mark.parametrize("content", PARENT_MARKERS.values(), ids=PARENT_MARKERS.keys())
def test_garbled_parent_marker_means_no_parent(tmp_path: Path, content: str, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / tracking.PARENT_FILE).write_text(content)
    monkeypatch.delenv(sweep.ENV, raising=False)
    assert tracking.read_parent_marker(tmp_path) is None
    assert tracking.runs.resume_parent("sqlite:///never-opened.db", tmp_path) is None  # no store touched
    assert tracking.sweep_context(tmp_path) == (None, "")
    assert "no parent run to resume" in caplog.text


def test_valid_parent_marker_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sweep.ENV, raising=False)
    tracking.announce_sweep(tmp_path, "0123456789abcdef0123456789abcdef", "s-1")
    assert sweep.current().parent_run_id == "0123456789abcdef0123456789abcdef"
    monkeypatch.delenv(sweep.ENV)  # a job that did not inherit the context: the marker tells
    assert tracking.sweep_context(tmp_path) == ("0123456789abcdef0123456789abcdef", "s-1")
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.e2e
@pytest.mark.parametrize("content", ["abc def ghi\n"], ids=["three_words"])  # every garbling: unit level above
def test_a_garbled_parent_marker_starts_a_new_parent(tmp_path: Path, boundlab_in_process, content: str) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    cmd = ["-m", "seed=0,1", "n=50", "name=marker", f"hydra.sweep.dir={sweep}"]
    assert boundlab(*cmd, cwd=tmp_path, env=env).returncode == 0
    (sweep / tracking.PARENT_FILE).write_text(content)
    again = boundlab(*cmd, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "no parent run to resume" in again.stdout + again.stderr
    parents, _ = _runs(uri, "marker")
    assert len(parents) == 2 and all(p.info.status == "FINISHED" for p in parents)
    assert tracking.read_parent_marker(sweep) is not None


# ---------------------------------------------------------------- stores that cannot keep runs, refused before any work


STORES = [
    ("sqlite://", "in-memory SQLite database"),
    ("sqlite:///:memory:", "in-memory SQLite database"),
    ("sqlite:///file::memory:?cache=shared", "in-memory SQLite database"),
    ("file:///tmp/boundlab-mlruns", "a file store: MLflow 3 deprecates file stores"),
    ("./mlruns", "a file store"),
    ("/tmp/boundlab-mlruns", "a file store"),
    ("postgresql://user@localhost/boundlab", "database driver"),
    ("mysql://user@localhost/boundlab", "database driver MySQLdb"),
    ("mssql://user@localhost/boundlab", "database driver"),
    ("postgresql+pg8000://user@localhost/boundlab", "database driver pg8000"),
    ("ftp://host/mlflow", "MLflow has no store for ftp: URIs; use a SQLite store"),
    ("s3://bucket/runs", "MLflow has no store for s3: URIs"),  # an artifact location, not a tracking store
]


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


@pytest.mark.usefixtures("shared_compositions")  # the pre-flight's compositions, one per group choice for the module
@pytest.mark.parametrize("how", ["env", "config", "config-over-env"])  # the last: tracking.uri wins over a good env
@pytest.mark.parametrize(("uri", "why"), STORES, ids=[u for u, _ in STORES])
def test_unusable_store_stops_before_any_work(uri: str, why: str, how: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    if "driver" in why and not all(_missing(m) for m in ("psycopg", "psycopg2", "MySQLdb", "pyodbc", "pg8000")):
        pytest.skip("a database driver is installed here: the missing-driver case cannot be made")
    monkeypatch.chdir(tmp_path)
    argv = ["-m", "seed=0,1", "n=50"]
    if how == "env":
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    else:  # config-over-env keeps this test's own store in MLFLOW_TRACKING_URI: tracking.uri is the one checked
        if how == "config":
            monkeypatch.delenv("MLFLOW_TRACKING_URI")
        argv.append(f"tracking.uri='{uri}'")  # quoted: Hydra's grammar takes '?' and '=' only in quotes
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"tracking store {uri}: " in err and why in err and "MLFLOW_TRACKING_URI" in err, err
    assert not any(tmp_path.iterdir()), "nothing written before the check"


def test_a_database_with_its_driver_installed_passes() -> None:
    assert check_store("sqlite:///" + str(Path(tempfile.gettempdir()) / "boundlab-probe-absent.db")) is None
    assert check_store("databricks") is None and check_store("databricks://profile") is None


def test_a_tracking_store_plugins_scheme_is_mlflows_to_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scheme an installed MLflow plug-in registers (entry point group mlflow.tracking_store) passes; the
    same scheme without the plug-in is refused."""
    assert "MLflow has no store for custom: URIs" in check_store("custom://host/store")
    monkeypatch.setattr(tracking.health, "_plugin_schemes", lambda: {"custom"})
    assert check_store("custom://host/store") is None


def _check_as_nobody(uri: str) -> str | None:
    """``check_store(uri)`` in a forked child that dropped root (root ignores file permissions)."""
    if os.geteuid() != 0:
        return check_store(uri)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(check_store(uri)).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture
def open_dir():  # noqa: ANN201
    """A directory outside pytest's private (0700) temp tree, so an unprivileged child can reach it."""
    where = Path(tempfile.mkdtemp(prefix="blro"))
    where.chmod(0o755)
    yield where
    for p in where.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    shutil.rmtree(where, ignore_errors=True)


def _db(path: Path) -> None:
    """A database with MLflow's first tables (a store whose creation was cut short: accepted, and written)."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        for table in ("experiments", "runs", "tags", "metrics", "params"):
            conn.execute(f"CREATE TABLE {table} (x)")


@pytest.mark.slow  # as root, the check runs in a forked child that drops root (_check_as_nobody)
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_read_only_sqlite_file_is_refused(open_dir: Path) -> None:
    """chmod 444 on the database: the check writes for real (as an unprivileged user when run as root)."""
    open_dir.chmod(0o777)
    _db(open_dir / "mlflow.db")
    (open_dir / "mlflow.db").chmod(0o444)
    why = _check_as_nobody(f"sqlite:///{open_dir / 'mlflow.db'}")
    assert why is not None and "cannot be written" in why and "readonly" in why


@pytest.mark.slow  # as root, the check runs in a forked child that drops root (_check_as_nobody)
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_sqlite_file_in_a_read_only_directory_is_refused(open_dir: Path) -> None:
    """A writable file in a directory that is not: SQLite cannot make its journal, so no run can be written."""
    sub = open_dir / "ro"
    sub.mkdir()
    _db(sub / "mlflow.db")
    (sub / "mlflow.db").chmod(0o666)
    sub.chmod(0o555)
    why = _check_as_nobody(f"sqlite:///{sub / 'mlflow.db'}")
    assert why is not None and "cannot be written" in why
    fresh = _check_as_nobody(f"sqlite:///{sub / 'new.db'}")
    assert fresh is not None and "not writable" in fresh


def test_the_write_probe_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    import sqlite3

    _db(tmp_path / "mlflow.db")
    before = (tmp_path / "mlflow.db").read_bytes()
    assert check_store(f"sqlite:///{tmp_path / 'mlflow.db'}") is None
    assert (tmp_path / "mlflow.db").read_bytes() == before
    with sqlite3.connect(tmp_path / "mlflow.db") as conn:
        assert sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master")) == [
            "experiments", "metrics", "params", "runs", "tags"]


@slow
def test_unreachable_tracking_store_stops_before_any_work(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    locked = tmp_path / "locked.db"
    holder = sqlite3.connect(locked)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    work = tmp_path / "work"
    work.mkdir()
    cases = {
        "http://127.0.0.1:9": "does not answer",
        f"sqlite:///{tmp_path / 'missing' / 'mlflow.db'}": "does not exist",
        f"sqlite:///{locked}": "cannot be written",
    }
    try:
        for uri, why in cases.items():
            proc = boundlab("-m", "seed=0,1", "n=50", cwd=work, env={**os.environ, "MLFLOW_TRACKING_URI": uri})
            assert proc.returncode == 2, proc.stderr
            assert proc.stderr.count("\n") == 1 and why in proc.stderr and "MLFLOW_TRACKING_URI" in proc.stderr
    finally:
        holder.rollback()
        holder.close()
    assert not any(work.iterdir()), "nothing written before the check"


@slow
def test_repeated_parallel_sweeps_on_one_store_lose_nothing(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    """Four worker processes writing to one SQLite store at once, three sweeps in a row: joblib's fresh
    processes, then workers forked from the command (``hydra/launcher=fork``, each opening its own connection)."""
    uri, env = _store(tmp_path)
    for rep, launcher in enumerate(("joblib", "fork", "fork")):
        seeds = ",".join(str(8 * rep + i) for i in range(8))
        proc = boundlab("-m", f"seed={seeds}", "n=500", "name=parallel", f"hydra/launcher={launcher}",
                        "hydra.launcher.n_jobs=4", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
    runs = _all_runs(uri, "parallel")
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len([r for r in runs if "mlflow.parentRunId" not in r.data.tags]) == 3
    assert len(children) == 24 and all(r.info.status == "FINISHED" for r in runs)
    assert len({r.data.tags["boundlab.config_hash"] for r in children}) == 24
    assert all("novikoff/ratio" in r.data.metrics and "mistakes" in r.data.metrics for r in children)
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
@pytest.mark.slow  # a forked child
def test_no_sqlite_connection_of_a_store_is_carried_across_a_fork(tmp_path: Path) -> None:
    """SQLite's locks are the process's own: a forked process (a sweep's worker, the figures' helper) that used or
    closed a copy of the parent's connection would corrupt what the parent holds. The idle connections are closed
    just before any fork; both processes open their own afterwards."""
    from pipeline.tracking import clients

    uri = migrated_store(tmp_path / "mlflow.db")
    client = clients._client(uri)
    client.search_experiments()
    store = client._inner._tracking_client.store
    assert store.engine.pool.checkedin() >= 1  # the call's connection, kept for the next
    pid = os.fork()
    if pid == 0:  # the child: no connection inherited
        os._exit(0 if store.engine.pool.checkedin() == 0 else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.engine.pool.checkedin() == 0
    assert client.search_experiments()  # the parent opens a new one
