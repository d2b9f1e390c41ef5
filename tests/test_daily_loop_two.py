"""Issue 52 (the daily loop, round two): what a user sees in the expected cases stays short."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import migrated_store


@pytest.mark.e2e  # two sweeps, in the test process
def test_a_sweep_rerun_after_a_config_change_says_it_once_per_job(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    """The same sweep directory run again with another value (what ``dvc exp run -S gamma=0.2`` does to an
    experiment's sweep): every job runs again, and says why in its one line, with no warning line of its own;
    an unexpected case (an interrupted job) still warns."""
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    common = ["-m", "seed=0,1,2", "d=3", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    first = boundlab_in_process(*common, "n=30", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    again = boundlab_in_process(*common, "n=31", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    out = again.stdout + again.stderr
    assert "not done in" not in out, out[-3000:]
    assert out.count("(run again: its config changed)") == 3, out[-3000:]
    assert "WARNING" not in out.replace("reused with another grid", ""), out[-3000:]
    (tmp_path / "sweep" / "1" / "done.json").unlink()  # an interrupted job: not the expected case
    third = boundlab_in_process(*common, "n=31", cwd=tmp_path, env=env)
    assert "not done in" in third.stdout + third.stderr


def test_the_committed_lock_holds_exactly_the_pipeline_s_stages() -> None:
    """dvc.lock keeps a stage dvc.yaml no longer defines (an experiment replaced) until someone removes it: the
    committed lock and dvc.yaml name the same stages."""
    import yaml

    root = Path(__file__).resolve().parents[1]
    defined = set(yaml.safe_load((root / "dvc.yaml").read_text())["stages"])
    locked = set(yaml.safe_load((root / "dvc.lock").read_text())["stages"])
    assert locked == defined, {"locked, not defined": sorted(locked - defined), "defined, not locked": sorted(defined - locked)}


@pytest.mark.slow  # a fresh interpreter shows what an import pulls in
def test_the_t_limit_is_scipy_s_without_importing_scipy_stats() -> None:
    """t_limits and the seeds a t limit needs use scipy.special.stdtrit, which is what scipy.stats.t.ppf
    computes (the same bits), without the half second of importing scipy.stats in every stage's process."""
    import subprocess
    import sys

    import numpy as np
    from scipy import stats

    from pipeline.judging import verdicts

    rng = np.random.default_rng(0)
    for n in (2, 3, 10, 57, 400):
        x = rng.normal(size=n)
        mean, lo, hi = verdicts.t_limits(x)
        half = float(stats.t.ppf(verdicts.LEVEL, n - 1)) * float(x.std(ddof=1)) / np.sqrt(n)
        assert (lo, hi) == (mean - half, mean + half)
    code = ("import sys; from pipeline.judging.verdicts import t_limits; t_limits([1.0, 2.0, 4.0]); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
