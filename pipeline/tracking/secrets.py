"""Credentials kept out of the tracking store and every message: :func:`redact` for text, :func:`split_credentials`
for a server URI (its ``user:password@`` handed to MLflow through the environment instead)."""

from __future__ import annotations

import base64
import os
import re



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
