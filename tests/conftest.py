"""Shared fixtures: every test tracks to its own temporary MLflow store, never the project's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def stats_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _private_stores(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, stats_cache: Path) -> None:
    """Every test tracks to its own MLflow store and caches statistics outside the project."""
    db = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    monkeypatch.setenv("BOUNDLAB_CACHE", str(stats_cache))


@pytest.fixture(scope="session")
def svm_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A separable svmlight file written by scikit-learn (iris, setosa against the rest)."""
    import numpy as np
    from sklearn.datasets import dump_svmlight_file, load_iris

    X, t = load_iris(return_X_y=True)
    path = tmp_path_factory.mktemp("files") / "iris.svm"
    dump_svmlight_file(X, np.where(t == 0, 1, -1), str(path))
    return path


def _boundlab(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).parent / "boundlab")
    exe = exe if Path(exe).exists() else shutil.which("boundlab")
    return subprocess.run([exe, *args], cwd=cwd, env=env or dict(os.environ), capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")  # session: module fixtures (a shared sweep) can use it too
def boundlab():  # noqa: ANN201
    """Run the installed ``boundlab`` command: ``boundlab(*args, cwd=..., env=...)``."""
    return _boundlab


@pytest.fixture
def one_line_error(capsys: pytest.CaptureFixture):  # noqa: ANN201
    """``one_line_error(argv)``: the command's pre-flight check on ``argv`` must stop with exit code 2 and
    one line 'boundlab: error: ...' on stderr, which is returned."""
    from pipeline.cli import preflight
    from pipeline.schemas import register

    def check(argv: list[str]) -> str:
        register()
        with pytest.raises(SystemExit) as exit_:
            preflight(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("boundlab: error: "), err
        return err

    return check

