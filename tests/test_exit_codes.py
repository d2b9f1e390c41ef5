"""Silence where something is wrong, decided: a grid with no jobs is refused before any work, and a single run
whose (D) bound is violated exits 1 as a sweep does (docs/sweeps.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import migrated_store


@pytest.mark.parametrize("argv", [["-m", "seed=range(0,0)"], ["-m", "gamma=0.1", "seed=range(3,3)"]])
def test_an_empty_grid_is_refused_in_one_line(argv: list[str], one_line_error) -> None:  # noqa: ANN001
    assert "the sweep has no jobs" in one_line_error(argv)


@pytest.mark.e2e
def test_a_single_run_with_a_violated_deterministic_bound_exits_1(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.learners.perceptron import Perceptron

    learn = Perceptron.learn_stream

    def broken(self, X, y):  # noqa: ANN001, ANN202 - a Perceptron that counts every step as a mistake
        trace = learn(self, X, y)
        trace[:] = 1
        return trace

    env = {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(tmp_path / "mlflow.db")}
    ok = boundlab_in_process("n=200", cwd=tmp_path, env=env)
    assert ok.returncode == 0, ok.stderr[-2000:]
    monkeypatch.setattr(Perceptron, "learn_stream", broken)
    proc = boundlab_in_process("n=200", "seed=1", cwd=tmp_path, env=env)  # 200 mistakes against (1/0.1)^2 = 100
    assert proc.returncode == 1 and "(D) bound(s) violated in this run: " in proc.stderr, proc.stderr[-2000:]
    assert "novikoff" in proc.stderr and "a bug until proven otherwise" in proc.stderr


def test_the_preflight_counts_distinct_jobs(capsys: pytest.CaptureFixture) -> None:
    from pipeline.sweep.preflight import preflight
    from pipeline.sweep.schemas import register

    register()
    plan = preflight(["-m", "seed=0,0", "gamma=0.1,1e-1,0.10"])
    assert len(plan.jobs) == 6
    assert "the grid lists 6 jobs, 1 of them distinct" in capsys.readouterr().err
    preflight(["-m", "seed=0,1"])
    assert "distinct" not in capsys.readouterr().err
    # jobs built the short way (a family's third seed on) against jobs of another family spelling the same setting
    plan = preflight(["-m", "seed=0,1,2,0,2", "gamma=0.1,1e-1"])
    assert len(plan.jobs) == 10 and "the grid lists 10 jobs, 3 of them distinct" in capsys.readouterr().err
    preflight(["-m", "seed=0,1,2,3", "gamma=0.1,0.2"])
    assert "distinct" not in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "named"), [
    (["-m", "experiment=perceptron_tight,perceptron_margin"], "a sweep runs one experiment"),
    (["-m", "name=a,b", "seed=0,1"], "name=a,b: a sweep runs one name"),
])
def test_sweeping_the_experiment_or_the_name_is_refused_in_one_line(argv: list[str], named: str,
                                                                      one_line_error) -> None:  # noqa: ANN001
    assert named in one_line_error(argv)
