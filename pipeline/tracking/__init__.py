"""Tracking: where a sweep's runs are recorded (MLflow by default; docs/mlflow.md).

The sweep, the job lifecycle, the command and the report ask a :class:`Backend` (:func:`backend` picks it for a
URI): :mod:`~pipeline.tracking.runs` is MLflow's, the only module that logs to it, over the process's guarded
clients (:mod:`~pipeline.tracking.clients`). Around it, for every backend: credentials kept out of text and
URIs (:mod:`~pipeline.tracking.secrets`), whether a store can be used (:mod:`~pipeline.tracking.health`), the
server-down protocol (:mod:`~pipeline.tracking.down`), the sweep's parent-run marker
(:mod:`~pipeline.tracking.parents`) and this process's open runs (:data:`OPEN_RUNS`).
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable

import pipeline.tracking.runs as runs
from pipeline.tracking.backend import OPEN_RUNS, Backend, Run, end_open_runs
from pipeline.tracking.down import HTTP_DEFAULTS, StoreDown, ensure_up, is_connection_error, known_down, mark_down
from pipeline.tracking.health import tracking_uri
from pipeline.tracking.parents import PARENT_FILE, announce_sweep, read_parent_marker, sweep_context
from pipeline.tracking.runs import git_commit, verdict_tags
from pipeline.tracking.secrets import REDACTED, redact, split_credentials

__all__ = ["GROUP", "HTTP_DEFAULTS", "OPEN_RUNS", "PARENT_FILE", "REDACTED", "Backend", "Run", "StoreDown",
           "announce_sweep", "backend", "end_open_runs", "ensure_up", "git_commit", "is_connection_error",
           "known_down", "mark_down", "read_parent_marker", "redact", "register", "split_credentials",
           "sweep_context", "tracking_uri", "verdict_tags"]

GROUP = "boundlab.trackers"  # the entry-point group of tracking backends, named by URI scheme

_REGISTERED: dict[str, Backend] = {}


def register(scheme: str, implementation: Backend | None) -> None:
    """Record ``implementation`` as the backend of URIs with ``scheme`` (None: forget it)."""
    if implementation is None:
        _REGISTERED.pop(scheme.lower(), None)
    else:
        _REGISTERED[scheme.lower()] = implementation


@functools.cache
def _entry_point(scheme: str) -> Backend | None:
    from importlib.metadata import entry_points

    for point in entry_points(group=GROUP):
        if point.name.lower() == scheme:
            return instance(point.load())
    return None


def instance(found: Backend | Callable[[], Backend]) -> Backend:
    """What an entry point of :data:`GROUP` names, as a backend: a class or a function is called (without
    arguments) for it; a module or an object already is one."""
    if isinstance(found, type) or inspect.isfunction(found):
        return found()  # type: ignore[no-any-return]
    return found  # type: ignore[return-value]


def scheme(uri: str) -> str:
    """The scheme of a tracking URI, lower case ("" for a bare path)."""
    head, sep, _ = uri.partition("://")
    return head.lower() if sep else ""


def backend(uri: str) -> Backend:
    """The backend of ``uri``: one registered for its scheme (:func:`register`, then the entry points of
    :data:`GROUP`), MLflow's otherwise (which itself covers its stores and its own plug-ins)."""
    key = scheme(uri)
    if key in _REGISTERED:
        return _REGISTERED[key]
    found = _entry_point(key) if key else None
    if found is not None:
        return found
    return runs  # the module is the backend: its functions, and job_run (JobRun)
