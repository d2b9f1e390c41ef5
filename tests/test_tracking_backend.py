"""Tracking behind a protocol (pipeline/tracking/backend.py): a sweep, its reuse of stored jobs and the API's
reading of a parent run go through ``pipeline.tracking.backend(uri)`` alone, so a backend that is not MLflow,
registered for its URI scheme, records a whole sweep and MLflow never opens a store."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd
import pytest

from pipeline import tracking


class MemoRun:
    def __init__(self, memo: Memo, run_id: str) -> None:
        self.memo, self.run_id = memo, run_id

    def finish(self, params: Mapping[str, Any], table: Any, curve: Any, artifacts: Iterable[Path]) -> None:
        run = self.memo.runs[self.run_id]
        run.update(status="FINISHED", params=dict(params), rows=len(table), files=[Path(a).name for a in artifacts])
        tracking.OPEN_RUNS.pop(self.run_id, None)

    def finish_pack(self, params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: Iterable[Path],
                    failed: bool = False) -> None:
        self.memo.runs[self.run_id].update(status="FAILED" if failed else "FINISHED", params=dict(params))
        tracking.OPEN_RUNS.pop(self.run_id, None)

    def fail(self, error: BaseException) -> None:
        self.memo.runs[self.run_id]["status"] = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
        tracking.OPEN_RUNS.pop(self.run_id, None)


class Memo:
    """A tracking backend that keeps runs in a dict and files in a directory: what another store would do."""

    def __init__(self, files: Path) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self.files = files
        self.ids = (f"{i:032x}" for i in itertools.count(1))
        self.calls: list[str] = []

    def _new(self, **fields: Any) -> str:
        run_id = next(self.ids)
        self.runs[run_id] = {"status": "RUNNING", **fields}
        return run_id

    def check_store(self, uri: str) -> str | None:
        self.calls.append("check_store")
        return None

    def start_parent(self, uri: str, experiment: str, name: str, question: str, sweep_id: str,
                     tags: Mapping[str, str], params: Mapping[str, str] = {}) -> str:
        self.calls.append("start_parent")
        return self._new(kind="parent", experiment=experiment, tags=dict(tags), params=dict(params), parent=None)

    def resume_parent(self, uri: str, sweep_dir: Path,
                      params: Mapping[str, str] | None = None) -> tuple[str, str, int] | None:
        self.calls.append("resume_parent")
        return None

    def end_orphaned_parents(self, uri: str, experiment: str, own_dir: Path) -> list[str]:
        return []

    def finish_parent(self, uri: str, run_id: str, artifacts: Iterable[Path], metrics: Mapping[str, float],
                      failed: bool, tags: Mapping[str, str] = {}) -> None:
        self.calls.append("finish_parent")
        kept = self.files / run_id
        kept.mkdir(parents=True, exist_ok=True)
        for path in map(Path, artifacts):
            if path.is_file():
                shutil.copy(path, kept / path.name)
        self.runs[run_id].update(status="FAILED" if failed else "FINISHED", metrics=dict(metrics),
                                 files=sorted(p.name for p in kept.iterdir()))
        self.runs[run_id]["tags"].update(tags)

    def link_reused(self, uri: str, parent_id: str, run_ids: Iterable[str]) -> dict[str, str]:
        return {r: self._new(kind="reused", parent=parent_id, reused_from=r, status="FINISHED") for r in run_ids}

    def end_children(self, uri: str, parent_id: str, reason: str, status: str = "KILLED") -> int:
        open_ = [r for r in self.runs.values() if r.get("parent") == parent_id and r["status"] == "RUNNING"]
        for run in open_:
            run["status"] = status
        return len(open_)

    def end_run(self, uri: str, run_id: str, status: str) -> None:
        self.runs[run_id]["status"] = status

    def is_finished(self, uri: str, run_id: str) -> bool:
        return self.runs.get(run_id, {}).get("status") == "FINISHED"

    def job_run(self, uri: str, experiment: str, name: str, parent_id: str | None, tags: Mapping[str, str],
                supersede: bool = False) -> MemoRun:
        run_id = self._new(kind="job", experiment=experiment, name=name, parent=parent_id, tags=dict(tags))
        run = tracking.OPEN_RUNS[run_id] = MemoRun(self, run_id)
        return run

    def read_parent(self, uri: str, run_id: str) -> dict[str, Any]:
        run = self.runs[run_id]
        return {"status": run["status"], "tags": run["tags"], "params": run["params"],
                "experiment": run["experiment"], "files": run["files"]}

    def download(self, uri: str, run_id: str, names: Iterable[str], into: Path) -> None:
        for name in names:
            shutil.copy(self.files / run_id / name, Path(into) / name)


@pytest.fixture
def memo(tmp_path: Path):  # noqa: ANN201
    backend = Memo(tmp_path / "memo-files")
    tracking.register("memo", backend)
    yield backend
    tracking.register("memo", None)


def test_the_mlflow_module_is_the_default_backend_and_a_registered_one_takes_its_scheme(memo: Memo) -> None:
    from pipeline.tracking import runs

    assert tracking.backend("sqlite:///x.db") is runs and tracking.backend("http://host:5000") is runs
    assert tracking.backend("memo://lab") is memo and tracking.backend("MEMO://lab") is memo
    tracking.register("memo", None)
    assert tracking.backend("memo://lab") is runs


@pytest.mark.e2e
def test_a_sweep_recorded_by_another_backend_never_opens_an_mlflow_store(tmp_path: Path, memo: Memo,
                                                                        boundlab_in_process) -> None:  # noqa: ANN001
    from pipeline import api

    env = {**os.environ, "MLFLOW_TRACKING_URI": "memo://lab", "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    grid = ["-m", "seed=0,1", "n=200", "d=5", "name=memo"]
    first = boundlab_in_process(*grid, f"hydra.sweep.dir={tmp_path / 'a'}", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    (parent,) = [i for i, r in memo.runs.items() if r["kind"] == "parent"]
    jobs = [r for r in memo.runs.values() if r["kind"] == "job"]
    assert memo.runs[parent]["status"] == "FINISHED" and memo.runs[parent]["metrics"]["runs"] == 2
    assert len(jobs) == 2 and all(r["parent"] == parent and r["status"] == "FINISHED" and r["rows"] > 0 for r in jobs)
    assert {"metrics.json", "results.parquet"} <= set(memo.runs[parent]["files"])
    assert not list(tmp_path.rglob("mlflow.db")) and not (tmp_path / "mlruns").exists()
    assert not set(tracking.OPEN_RUNS) & set(memo.runs)  # every job run ended

    again = boundlab_in_process(*grid, f"hydra.sweep.dir={tmp_path / 'b'}", cwd=tmp_path, env=env)
    assert again.returncode == 0 and "reused, not rerun" in again.stdout, again.stdout[-2000:]
    reused = [r for r in memo.runs.values() if r["kind"] == "reused"]
    assert sorted(r["reused_from"] for r in reused) == sorted(i for i, r in memo.runs.items() if r["kind"] == "job")

    res = api.load(f"runs:/{parent}", tracking_uri="memo://lab", dest=tmp_path / "downloaded")
    table = pd.read_parquet(tmp_path / "a" / "results.parquet")
    assert len(res.table) == len(table) and res.provenance["parent run"] == parent


def test_only_the_mlflow_backend_and_mlflow_s_ui_page_import_mlflow() -> None:
    """Every import of mlflow in the package (inside functions too) is in MLflow's backend (its runs and its
    clients) or in the UI page that is MLflow's own (pipeline/dashboard.py): nothing else depends on MLflow."""
    import ast

    root = Path(tracking.__file__).resolve().parents[1]
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n == "mlflow" or n.startswith("mlflow.") for n in names):
                found.add(path.relative_to(root.parent).as_posix())
    assert found == {"pipeline/tracking/clients.py", "pipeline/tracking/runs.py", "pipeline/dashboard.py"}


def test_an_entry_point_may_name_the_backend_or_what_makes_it(tmp_path: Path) -> None:
    """docs/mlflow.md's entry point names a class: the backend is an instance of it, as for a function that
    returns one; a module (like MLflow's) or an object is the backend itself."""
    from pipeline.tracking import instance, runs

    class MemoBackend(Memo):
        def __init__(self) -> None:
            super().__init__(tmp_path)

    made = instance(MemoBackend)
    assert isinstance(made, MemoBackend) and made.runs == {}
    assert isinstance(instance(lambda: Memo(tmp_path)), Memo)
    memo = Memo(tmp_path)
    assert instance(memo) is memo and instance(runs) is runs
