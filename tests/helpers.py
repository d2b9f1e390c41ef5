"""Helpers the test modules share (pytest puts this directory on sys.path: ``from helpers import ...``)."""

from __future__ import annotations

import os
from pathlib import Path


def with_sitecustomize(tmp_path: Path, code: str, env: dict[str, str]) -> dict[str, str]:
    """``env`` with a ``sitecustomize.py`` holding ``code`` on PYTHONPATH, so that a subprocess (a sweep and
    its jobs) runs it first: how faults are injected into the command."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(code)
    return env | {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
