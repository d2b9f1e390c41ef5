"""One job lifecycle with two bodies (pipeline/sweep/life.py): a job (JobLife) and a pack (PackLife) share the
frame (the process marked as in a job, the directory held, a fault recorded once, an interrupt ending the run
KILLED, what was held released), and both run from an explicit Place, without Hydra's global state."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import compose_tiny

from pipeline.sweep import life as lifecycle
from pipeline.sweep.life import Life, Place
from pipeline.sweep.stages import JobLife


def _config(tmp_path: Path, *overrides: str):  # noqa: ANN202
    from omegaconf import open_dict

    cfg = compose_tiny(["algorithm=perceptron", "seed=3", *overrides])
    with open_dict(cfg):
        cfg.tracking.uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return cfg


def test_a_job_runs_without_hydra_from_its_place(tmp_path: Path) -> None:
    """The whole lifecycle (hold, done?, reuse?, run, record, release) of a single run, no Hydra app running."""
    from hydra.core.hydra_config import HydraConfig

    assert not HydraConfig.initialized()
    out = tmp_path / "job"
    place = Place(out=out, overrides=("algorithm=perceptron", "seed=3"))
    life = JobLife(_config(tmp_path), place)
    with life:
        assert lifecycle._in_job and not life.done() and not life.reused()
        result = life.run()
    assert not lifecycle._in_job
    assert result is not None and (out / "done.json").exists() and (out / "results.parquet").exists()
    assert life.name == "perceptron seed=3"
    again = JobLife(_config(tmp_path), place)
    with again:
        assert again.done()  # the same job: done, skipped
    from pipeline.job import locks

    assert locks.is_held(out) is False  # released on the way out


class _Body(Life):
    label = "a body"

    def __init__(self, place: Place, swallow: bool) -> None:
        super().__init__(place)
        self.swallow, self.seen = swallow, []

    def failed(self, e: Exception) -> bool:
        self.seen.append(e)
        return self.swallow


class _Run:
    run_id = "r1"

    def __init__(self) -> None:
        self.failed_with: list[BaseException] = []

    def fail(self, e: BaseException) -> None:
        self.failed_with.append(e)


def _fail_inside(body: Life, fault: Exception) -> None:
    with body:
        body.hold()
        raise fault


@pytest.mark.parametrize("swallow", [True, False], ids=["in-a-sweep", "alone"])
def test_a_fault_is_recorded_once_and_swallowed_only_in_a_sweep(tmp_path: Path, swallow: bool) -> None:
    body = _Body(Place(out=tmp_path), swallow)
    fault = ValueError("boom")
    if swallow:
        with body:
            body.hold()
            raise fault
    else:
        with pytest.raises(ValueError, match="boom"):
            _fail_inside(body, fault)
    assert body.seen == [fault] and not lifecycle._in_job
    from pipeline.job import locks

    assert locks.is_held(tmp_path) is False


def _interrupt_inside(body: Life) -> None:
    with body:
        raise KeyboardInterrupt


def test_an_interrupt_ends_the_open_run_and_propagates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import tracking

    body = _Body(Place(out=tmp_path), swallow=True)
    run = body.tracker = _Run()
    monkeypatch.setattr(tracking, "OPEN_RUNS", {"r1"})
    with pytest.raises(KeyboardInterrupt):
        _interrupt_inside(body)
    assert body.seen == [] and len(run.failed_with) == 1 and not lifecycle._in_job
