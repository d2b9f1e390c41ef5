"""Scale-out for real: a Ray head started on loopback by the test, a sweep through the ray launcher
against it (and against a Ray instance the sweep starts itself), and the submitit launcher's local
executor; every run lands nested under its sweep's parent with the metrics a basic-launcher sweep gives.

Ray resolves 127.0.0.1 to the machine's own address unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``:
set here so that every Ray socket stays on loopback. The cluster uses token authentication (Ray's
default) with a token made by the test, passed to the head and the client by the environment.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from helpers import migrated_store

pytestmark = pytest.mark.slow

GRID = ["-m", "seed=0,1,2", "n=200", "d=5"]
METRICS = ("novikoff/empirical", "novikoff/theoretical", "novikoff/ratio")


def _require(module: str, extra: str) -> None:
    """The test extra installs every launcher: a missing one fails, saying how to install it."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is missing: pip install -e '.[test]' (or '.[{extra}]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_DEDUP_LOGS": "0", "RAY_USAGE_STATS_ENABLED": "0",
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}


def _ray(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "ray"
    return subprocess.run([str(exe if exe.exists() else shutil.which("ray")), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture
def ray_head(tmp_path: Path):  # noqa: ANN201
    """A Ray head on 127.0.0.1 started from another directory than the sweep's; stopped and removed after."""
    _require("hydra_plugins.hydra_ray_launcher", "ray")
    env = _ray_env(tmp_path)
    port = _free_port()
    elsewhere = tmp_path / "head"
    elsewhere.mkdir()
    temp = tempfile.mkdtemp(prefix="blray")  # short: Ray's unix socket paths must stay under 108 bytes
    start = _ray("start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
                 f"--temp-dir={temp}", "--include-dashboard=false", "--disable-usage-stats", env=env, cwd=elsewhere)
    try:
        assert start.returncode == 0, start.stdout[-2000:] + start.stderr[-2000:]
        said = re.sub(r"\x1b\[[0-9;]*m", "", start.stdout + start.stderr)  # without colours
        assert "Local node IP: 127.0.0.1" in said, said[-2000:]
        yield f"127.0.0.1:{port}", env
    finally:
        _ray("stop", "--force", env=env, cwd=elsewhere)
        shutil.rmtree(temp, ignore_errors=True)


def _sweep_runs(uri: str, experiment: str) -> tuple[list, list]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no MLflow experiment {experiment}"
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    return ([r for r in runs if "mlflow.parentRunId" not in r.data.tags],
            [r for r in runs if "mlflow.parentRunId" in r.data.tags])


def _check_sweep(driver: Path, sweep: str, env: dict[str, str], name: str, reference: pd.DataFrame) -> None:
    """The sweep's table equals the basic launcher's; one FINISHED parent, three nested FINISHED children
    whose metrics are the table's and whose outputs are in the driver's sweep directory."""
    table = pd.read_parquet(driver / sweep / "results.parquet")
    keep = ["seed", "bound", "empirical", "theoretical", "ratio", "holds", "R", "gamma_lo", "gamma_hi"]
    pd.testing.assert_frame_equal(table[keep].sort_values(["seed", "bound"], ignore_index=True),
                                  reference[keep].sort_values(["seed", "bound"], ignore_index=True))
    parents, children = _sweep_runs(env["MLFLOW_TRACKING_URI"], name)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(children) == 3
    for run in children:
        assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert run.info.status == "FINISHED" and all(m in run.data.metrics for m in METRICS)
        row = table[(table["seed"] == int(run.data.params["seed"])) & (table["bound"] == "novikoff")].iloc[0]
        assert run.data.metrics["novikoff/ratio"] == pytest.approx(row["ratio"], rel=1e-12)
        assert Path(run.data.tags["boundlab.output_dir"]).is_relative_to(driver / sweep)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, boundlab_in_process) -> pd.DataFrame:  # noqa: ANN001
    """The same grid through the basic launcher (in this process: the launchers under test run the command)."""
    where = tmp_path_factory.mktemp("basic")
    env = {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(where / "basic.db")}
    proc = boundlab_in_process(*GRID, "name=basic", f"hydra.sweep.dir={where / 'sweep'}", cwd=where, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pd.read_parquet(where / "sweep" / "results.parquet")


def test_sweep_on_an_existing_ray_cluster(tmp_path: Path, ray_head, reference, boundlab) -> None:  # noqa: ANN001
    address, env = ray_head
    driver = tmp_path / "driver"
    driver.mkdir()
    proc = boundlab(*GRID, "name=ray_cluster", "hydra/launcher=ray", f"hydra.launcher.ray.init.address={address}",
                    "hydra.sweep.dir=sweep", cwd=driver, env=env)  # relative: must mean the driver's directory
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Connecting to existing Ray cluster" in proc.stderr + proc.stdout
    _check_sweep(driver, "sweep", env, "ray_cluster", reference)
    assert not (tmp_path / "head" / "sweep").exists()  # nothing landed where the head was started


def test_sweep_on_a_ray_instance_it_starts(tmp_path: Path, reference, boundlab) -> None:  # noqa: ANN001
    _require("hydra_plugins.hydra_ray_launcher", "ray")
    env = _ray_env(tmp_path)
    env.pop("RAY_ADDRESS", None)
    driver = tmp_path / "driver"
    driver.mkdir()
    temp = tempfile.mkdtemp(prefix="blray")
    try:
        proc = boundlab(*GRID, "name=ray_local", "hydra/launcher=ray", f"+hydra.launcher.ray.init._temp_dir={temp}",
                        "+hydra.launcher.ray.init.include_dashboard=false", "hydra.sweep.dir=sweep", cwd=driver, env=env)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Started a local Ray instance" in proc.stderr + proc.stdout
    _check_sweep(driver, "sweep", env, "ray_local", reference)


def test_sweep_through_submitit(tmp_path: Path, reference, boundlab) -> None:  # noqa: ANN001
    """submitit's local executor: what SLURM does (a pickled job in a fresh process), on this machine."""
    _require("hydra_plugins.hydra_submitit_launcher", "slurm")
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    driver = tmp_path / "driver"
    driver.mkdir()
    proc = boundlab(*GRID, "name=submitit", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10",
                    "hydra.sweep.dir=sweep", cwd=driver, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    _check_sweep(driver, "sweep", env, "submitit", reference)
