"""Shared fixtures: every test tracks to its own temporary MLflow store, never the project's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _private_tracking(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")


def _boundlab(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).parent / "boundlab")
    exe = exe if Path(exe).exists() else shutil.which("boundlab")
    return subprocess.run([exe, *args], cwd=cwd, env=env or dict(os.environ), capture_output=True, text=True, timeout=900)


@pytest.fixture
def boundlab():  # noqa: ANN201
    """Run the installed ``boundlab`` command: ``boundlab(*args, cwd=..., env=...)``."""
    return _boundlab
